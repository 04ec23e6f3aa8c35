#include "tools/analysis/hang.h"
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include "tools/analysis/runs.h"
#include "tools/analysis/stacks.h"
#include "trace/format.h"
#include "trace/reader.h"

namespace cutrace {

namespace {
namespace tf = trace;
constexpr size_t kLastOps = 5;

struct Coll {
  int64_t begin = 0, end = 0;
  uint32_t name_id = 0;  // in the trace's strings
  bool complete = false;
};

std::vector<std::string> frames_of(const StackTable& t, Symbolizer& sym, uint32_t id) {
  std::vector<std::string> out;
  if (!id) return out;
  for (const SymFrame& f : sym.stack(t, id)) out.push_back(frame_text(f));
  return out;
}

const char* kind_word(uint16_t type) {
  return type == uint16_t(tf::RecType::Kernel) ? "kernel" : type == uint16_t(tf::RecType::Memcpy) ? "memcpy" : "memset";
}
}  // namespace

bool read_rank_hang(TraceReader& r, RankHang* out, std::string* err) {
  RankHang& h = *out;
  runs::Trace id = runs::identify(r);
  h.file = r.path(), h.host = id.host, h.rank = id.rank, h.pid = id.pid;
  h.origin = r.clock_sync().monotonic_ns;
  StackTable stacks;
  OpStacks op_stacks;
  Symbolizer sym;
  std::unordered_map<uint64_t, Coll> colls;  // by corr
  std::map<uint64_t, HangOpInfo> items;      // the open hang's Op items, by corr
  std::vector<HangOpInfo> pending;           // ops flagged PendingExit
  std::vector<HangSyncInfo> hang_threads, open_syncs;
  std::vector<HangOpInfo> last;  // the kLastOps latest launches seen
  uint32_t open_hang = 0;
  auto keep_last = [&](HangOpInfo op) {
    last.push_back(std::move(op));
    std::sort(last.begin(), last.end(), [](const HangOpInfo& a, const HangOpInfo& b) { return a.begin > b.begin; });
    if (last.size() > kLastOps) last.pop_back();
  };
  bool ok = r.read([&](const Record& rec) {
    if (stacks.absorb(rec, r)) return;
    switch (rec.type()) {
      case tf::RecType::OpStack: op_stacks.link(rec.as<tf::OpStackRec>()); break;
      case tf::RecType::Kernel:
      case tf::RecType::Memcpy:
      case tf::RecType::Memset: {
        const tf::OpCommon& c = rec.as<tf::KernelRec>().op;  // OpCommon at the same offset in all three
        if (!tf::is_call(c.flags)) break;
        const uint64_t corr = c.corr;
        const bool pend = (c.flags & tf::kOpPendingExit) != 0;
        const bool kernel = rec.type() == tf::RecType::Kernel;
        const uint32_t name_id = kernel ? rec.as<tf::KernelRec>().name_id : 0;
        if (kernel && rec.as<tf::KernelRec>().kind != uint8_t(tf::KernelKind::Graph) && !(c.flags & tf::kOpCaptured) &&
            r.str(name_id).substr(0, 4) == "nccl")
          colls[corr] = {c.cpu_begin, c.cpu_end, name_id, !pend};
        uint32_t stack = op_stacks.take(corr);
        auto item = items.find(corr);
        if (!pend && item != items.end()) items.erase(item), item = items.end();  // the hang's op completed
        if (!pend && last.size() == kLastOps && c.cpu_begin <= last.back().begin) break;
        HangOpInfo op;
        op.kind = kind_word(rec.type_raw());
        op.name = kernel ? std::string(r.str(name_id)) : op.kind;
        op.corr = corr, op.begin = c.cpu_begin, op.stream = c.stream, op.tid = c.tid;
        if (pend) {
          op.frames = frames_of(stacks, sym, stack);
          if (item != items.end()) {
            if (op.frames.empty()) op.frames = item->second.frames;
            items.erase(item);
          }
          pending.push_back(std::move(op));
        } else {
          keep_last(std::move(op));
        }
        break;
      }
      case tf::RecType::Sync: {
        const tf::SyncRec& s = rec.as<tf::SyncRec>();
        if (tf::sync_open(s)) open_syncs.push_back({s.tid, std::string(r.api_name(s.api)), s.stream, s.cpu_begin});
        break;
      }
      case tf::RecType::Range: {
        const tf::RangeRec& g = rec.as<tf::RangeRec>();
        if (tf::range_open(g)) h.open_ranges.push_back({g.tid, std::string(r.str(g.name_id)), g.cpu_begin});
        break;
      }
      case tf::RecType::Hang: {
        const tf::HangRec& g = rec.as<tf::HangRec>();
        ++h.hangs;
        open_hang = g.hang, h.stuck_since = g.since;
        items.clear(), hang_threads.clear();
        break;
      }
      case tf::RecType::HangItem: {
        const tf::HangItemRec& it = rec.as<tf::HangItemRec>();
        if (it.hang != open_hang) break;
        if (it.kind == uint8_t(tf::HangItemKind::Op)) {
          HangOpInfo op;
          op.kind = kind_word(it.op_type);
          op.name = std::string(r.str(it.name_id));
          op.corr = it.corr, op.begin = it.begin, op.stream = it.stream, op.tid = it.tid, op.seq = it.seq;
          op.frames = frames_of(stacks, sym, it.stack);
          // Not complete, whatever its Kernel record said: one CUPTI gave no record for is written
          // without GPU time before the watchdog lists it.
          const uint64_t corr = it.corr;  // packed: a copy for the maps' key references
          if (it.seq) colls[corr] = Coll{it.begin, it.end, it.name_id, false};
          items[corr] = std::move(op);
        } else if (it.kind == uint8_t(tf::HangItemKind::Thread)) {
          hang_threads.push_back({it.tid, std::string(r.str(it.name_id)), it.stream, it.begin});
        }
        break;
      }
      case tf::RecType::HangEnd: {
        const tf::HangEndRec& e = rec.as<tf::HangEndRec>();
        ++h.hangs_over;
        if (e.hang != open_hang) break;
        for (auto& [corr, op] : items)  // the hang's work completed
          if (op.seq) colls[corr].complete = true;
        open_hang = 0, h.stuck_since = 0, items.clear(), hang_threads.clear();
        break;
      }
      default: break;
    }
  });
  if (!ok) *err = r.error().empty() ? "read failed" : r.error();
  h.complete = r.status().complete;
  // In flight: flagged pending at exit, or an item of the open hang not written since.
  for (auto& [corr, op] : items) h.in_flight.push_back(op);
  for (HangOpInfo& op : pending) h.in_flight.push_back(std::move(op));
  std::sort(h.in_flight.begin(), h.in_flight.end(),
            [](const HangOpInfo& a, const HangOpInfo& b) { return a.begin < b.begin; });
  // Blocked threads: the open syncs the trace ended with, else (a live trace) the open hang's.
  h.blocked = !open_syncs.empty() || h.complete ? open_syncs : hang_threads;
  h.last_ops = std::move(last);
  // Collectives in launch order, numbered from 1; the rank waits in its first not complete.
  std::vector<std::pair<uint64_t, Coll>> order(colls.begin(), colls.end());
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second.begin < b.second.begin; });
  h.collectives = order.size();
  for (size_t i = 0; i < order.size(); ++i) {
    const Coll& c = order[i].second;
    if (c.complete) {
      ++h.collectives_complete;
      h.last_collective_end = std::max(h.last_collective_end, c.end);
    } else if (!h.waiting_seq) {
      h.waiting_seq = i + 1, h.waiting_name = std::string(r.str(c.name_id));
    }
  }
  for (HangOpInfo& op : h.in_flight) {
    auto it = std::find_if(order.begin(), order.end(), [&](const auto& c) { return c.first == op.corr; });
    if (it != order.end()) op.seq = uint64_t(it - order.begin()) + 1;
  }
  return ok;
}

HangVerdict judge_hang(const std::vector<RankHang>& ranks, int64_t world_size) {
  HangVerdict v;
  std::map<uint64_t, size_t> votes;  // waiting seq -> ranks waiting there
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].waiting_seq) ++votes[ranks[i].waiting_seq], v.waiting.push_back(i);
  std::set<int64_t> have;
  for (const RankHang& r : ranks) have.insert(r.rank);
  for (int64_t k = 0; k < world_size; ++k)
    if (!have.count(k)) v.missing_ranks.push_back(k);
  if (votes.empty()) {
    v.text = "no rank waits in a collective";
    return v;
  }
  // The collective most ranks wait in (the earliest of equals).
  size_t best = 0;
  for (auto& [seq, n] : votes)
    if (n > best) best = n, v.seq = seq;
  for (size_t i : v.waiting)
    if (ranks[i].waiting_seq == v.seq) v.collective = ranks[i].waiting_name;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].collectives < v.seq) v.culprits.push_back({i, ranks[i].collectives});
  std::string which = "collective #" + std::to_string(v.seq) + " (" + v.collective + ")";
  if (v.culprits.empty() && v.missing_ranks.empty()) {
    v.text = "every rank launched " + which + " and it is not complete on " + std::to_string(v.waiting.size()) +
             " of them: no rank is missing from it (a GPU or network fault, or ranks launching different work)";
  } else {
    std::string names;
    for (const HangCulprit& c : v.culprits)
      names += (names.empty() ? "rank " : ", rank ") + std::to_string(ranks[c.rank_index].rank);
    for (int64_t k : v.missing_ranks)
      names += (names.empty() ? "rank " : ", rank ") + std::to_string(k) + " (no trace)";
    v.text = std::to_string(v.waiting.size()) + (v.waiting.size() == 1 ? " rank waits in " : " ranks wait in ") +
             which + "; " + names + " never reached it";
  }
  return v;
}

}  // namespace cutrace
