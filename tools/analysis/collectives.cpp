#include "tools/analysis/collectives.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "tools/analysis/summary_model.h"
#include "trace/reader.h"

namespace cutrace {
namespace {

bool blocking(uint8_t sync_kind) {
  return sync_kind == uint8_t(trace::SyncKind::Context) || sync_kind == uint8_t(trace::SyncKind::Stream) ||
         sync_kind == uint8_t(trace::SyncKind::Event);
}

// The step holding CPU time t: the last one begun at or before t, if it has not ended; -1: none.
int32_t step_at(const std::vector<StepSpan>& steps, int64_t t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t, [](int64_t v, const StepSpan& s) { return v < s.begin; });
  if (it == steps.begin()) return -1;
  --it;
  return t <= it->end ? int32_t(it - steps.begin()) : -1;
}

}  // namespace

std::string collective_name(const RankProfile& p, const Collective& c) {
  const std::string& k = p.keys[c.key];
  return k.substr(0, k.find(' '));
}

bool read_profile(TraceReader& r, const std::string& step_pattern, RankProfile* out, std::string* err) {
  RankProfile& p = *out;
  p = RankProfile{};
  p.file = r.path();
  p.id = runs::identify(r);
  p.host = p.id.host;
  p.rank = p.id.rank;
  std::vector<int64_t> real_minus_mono;
  std::unordered_map<std::string, uint32_t> key_ids;
  std::unordered_map<uint32_t, uint32_t> channels;   // stream id -> channel
  std::unordered_map<uint32_t, int> range_kind;      // name id -> 1 step, 0 other range
  std::unordered_map<uint64_t, size_t> range_index;  // (domain id, name id) -> ranges[]
  std::vector<std::pair<int64_t, int64_t>> blocked;  // CPU spans of blocking calls
  constexpr size_t kMaxBlocked = size_t(1) << 22;
  auto block = [&](int64_t b, int64_t e) {
    if (e > b && blocked.size() < kMaxBlocked) blocked.push_back({b, e});
  };
  bool ok = r.read([&](const Record& rec) {
    switch (rec.type()) {
      case trace::RecType::ClockSync: {
        const auto& c = rec.as<trace::ClockSyncRec>();
        real_minus_mono.push_back(int64_t(uint64_t(c.realtime_ns) - uint64_t(c.monotonic_ns)));  // any value: no UB
        break;
      }
      case trace::RecType::Kernel: {
        const auto& k = rec.as<trace::KernelRec>();
        const trace::OpCommon& op = k.op;
        if ((op.flags & trace::kOpCaptured) || !trace::is_gpu_work(op.flags)) break;
        int64_t gs = op.gpu_start, ge = op.gpu_end;
        bool timed = gs > 0 && ge >= gs;
        std::string_view name = r.str(k.name_id);
        bool nccl = name.substr(0, 4) == "nccl";
        if (!timed) {
          p.collectives_untimed += nccl;
          break;
        }
        int64_t d = ge - gs;
        if (!nccl) {
          p.compute_ns = sat_add(p.compute_ns, d);
          break;
        }
        p.comm_ns = sat_add(p.comm_ns, d);
        if (p.collectives.size() >= RankProfile::kMaxCollectives) {
          ++p.collectives_beyond;
          break;
        }
        std::string key = std::string(name) + ' ' + std::to_string(k.grid[0]) + 'x' + std::to_string(k.grid[1]) + 'x' +
                          std::to_string(k.grid[2]) + '/' + std::to_string(k.block[0]) + 'x' +
                          std::to_string(k.block[1]) + 'x' + std::to_string(k.block[2]);
        auto [kit, knew] = key_ids.try_emplace(std::move(key), uint32_t(p.keys.size()));
        if (knew) p.keys.push_back(kit->first);
        const uint32_t stream = op.stream;  // a copy: the packed field may be misaligned
        auto [cit, cnew] = channels.try_emplace(stream, uint32_t(channels.size()));
        (void)cnew;
        Collective c;
        c.key = kit->second;
        c.channel = cit->second;
        c.cpu_begin = op.cpu_begin;
        c.gpu_start = gs;
        c.gpu_end = ge;
        p.collectives.push_back(c);
        break;
      }
      case trace::RecType::Memcpy:
      case trace::RecType::Memset: {
        const trace::OpCommon& op =
            rec.type() == trace::RecType::Memset ? rec.as<trace::MemsetRec>().op : rec.as<trace::MemcpyRec>().op;
        if (trace::is_call(op.flags) && !(op.flags & trace::kOpAsync)) block(op.cpu_begin, op.cpu_end);
        break;
      }
      case trace::RecType::Sync: {
        const auto& s = rec.as<trace::SyncRec>();
        if (blocking(s.kind)) block(s.cpu_begin, s.cpu_end);
        break;
      }
      case trace::RecType::Range: {
        if (rec.size() < sizeof(trace::RangeRec)) break;
        const auto& g = rec.as<trace::RangeRec>();
        int64_t b = g.cpu_begin, e = g.cpu_end;
        int64_t d = e > b ? sat_sub(e, b) : 0;
        const uint32_t name_id = g.name_id;  // a copy: the packed field may be misaligned
        auto [it, fresh] = range_kind.try_emplace(name_id, 0);
        if (fresh) it->second = trace::name_pattern_match(step_pattern, r.str(name_id)) ? 1 : 0;
        if (it->second == 1 && g.domain_id == 0) {
          if (p.steps.size() < RankProfile::kMaxSteps)
            p.steps.push_back({std::string(r.str(g.name_id)), b, std::max(b, e)});
          break;
        }
        uint64_t rk = uint64_t(g.domain_id) << 32 | g.name_id;
        auto ri = range_index.find(rk);
        if (ri == range_index.end()) {
          if (p.ranges.size() >= RankProfile::kMaxRanges) break;
          std::string n(r.str(g.name_id));
          if (g.domain_id) n = std::string(r.str(g.domain_id)) + "::" + n;
          ri = range_index.emplace(rk, p.ranges.size()).first;
          p.ranges.push_back({std::move(n), 0, 0});
        }
        RangeTotal& t = p.ranges[ri->second];
        ++t.count;
        t.cpu_ns = sat_add(t.cpu_ns, d);
        break;
      }
      default: break;
    }
    return true;
  });
  if (!real_minus_mono.empty()) {
    p.has_clock = true;
    std::sort(real_minus_mono.begin(), real_minus_mono.end());
    p.wall_offset_ns = real_minus_mono[real_minus_mono.size() / 2];
    p.clock_spread_ns = sat_sub(real_minus_mono.back(), real_minus_mono.front());
  }
  std::sort(p.steps.begin(), p.steps.end(), [](const StepSpan& a, const StepSpan& b) { return a.begin < b.begin; });
  for (const StepSpan& s : p.steps) p.step_cpu_ns = sat_add(p.step_cpu_ns, sat_sub(s.end, s.begin));
  for (const auto& [b, e] : blocked) {
    if (step_at(p.steps, b) >= 0) p.step_blocked_ns = sat_add(p.step_blocked_ns, sat_sub(e, b));
  }
  // Steps and ordinals, in launch order; then by channel and end, the order alignment matches in.
  std::stable_sort(p.collectives.begin(), p.collectives.end(),
                   [](const Collective& a, const Collective& b) { return a.cpu_begin < b.cpu_begin; });
  std::unordered_map<uint64_t, uint32_t> seen;  // (step, key) -> collectives so far
  for (Collective& c : p.collectives) {
    c.step = step_at(p.steps, c.cpu_begin);
    if (c.step >= 0) c.ordinal = seen[uint64_t(uint32_t(c.step)) << 32 | c.key]++;
  }
  std::stable_sort(p.collectives.begin(), p.collectives.end(), [](const Collective& a, const Collective& b) {
    return a.channel != b.channel ? a.channel < b.channel : a.gpu_end < b.gpu_end;
  });
  if (!ok && err) *err = r.path() + ": " + (r.error().empty() ? "read stopped" : r.error());
  return ok;
}

}  // namespace cutrace
