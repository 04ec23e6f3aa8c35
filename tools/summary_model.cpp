#include "tools/summary_model.h"

#include <algorithm>
#include <cstdlib>

namespace cutrace {
namespace {

constexpr int32_t kCudaErrorNotReady = 600;  // the normal "still busy" answer of the query calls

bool is_error(int32_t result, uint8_t sync_kind = 0) {
  bool query = sync_kind == uint8_t(fmt::SyncKind::StreamQuery) ||
               sync_kind == uint8_t(fmt::SyncKind::EventQuery);
  return result != 0 && !(query && result == kCudaErrorNotReady);
}

int64_t meta_int(const TraceReader& r, std::string_view key, int64_t fallback) {
  std::string v(r.meta(key));
  if (v.empty()) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  return *end == '\0' ? x : fallback;
}

void add_copy(CopyStat& c, const fmt::OpCommon& op, uint64_t bytes) {
  uint64_t untimed_before = c.time.untimed;
  c.time.add(op.gpu_start, op.gpu_end);
  c.bytes += bytes;
  if (c.time.untimed == untimed_before) c.timed_bytes += bytes;
}

nlohmann::ordered_json copy_json(const CopyStat& c) {
  return {{"count", c.time.count},
          {"bytes", c.bytes},
          {"total_ns", c.time.total_ns},
          {"untimed", c.time.untimed}};
}

}  // namespace

void TimeStat::add(int64_t gpu_start, int64_t gpu_end) {
  ++count;
  if (gpu_start == 0 || gpu_end == 0 || gpu_end < gpu_start) {
    ++untimed;
    return;
  }
  int64_t d = gpu_end - gpu_start;
  min_ns = timed() == 1 ? d : std::min(min_ns, d);
  max_ns = std::max(max_ns, d);
  total_ns += d;
}

void TimeStat::merge(const TimeStat& o) {
  if (o.timed()) {
    min_ns = timed() ? std::min(min_ns, o.min_ns) : o.min_ns;
    max_ns = std::max(max_ns, o.max_ns);
  }
  count += o.count;
  untimed += o.untimed;
  total_ns += o.total_ns;
}

struct SummaryModel::FileTotals {
  std::unordered_map<uint32_t, TimeStat> kernels;  // by name string id
};

bool SummaryModel::add(TraceReader& r) {
  FileTotals t;
  bool ok = r.read([&](const Record& rec) {
    switch (rec.type()) {
      case fmt::RecType::Kernel: {
        const auto& k = rec.as<fmt::KernelRec>();
        api_errors_ += is_error(k.op.result);
        uint32_t name_id = k.name_id;  // a local: the packed field may be misaligned
        if (k.op.flags & fmt::kOpCaptured) ++captured_;
        else t.kernels[name_id].add(k.op.gpu_start, k.op.gpu_end);
        break;
      }
      case fmt::RecType::Memcpy: {
        const auto& m = rec.as<fmt::MemcpyRec>();
        api_errors_ += is_error(m.op.result);
        if (m.op.flags & fmt::kOpCaptured) ++captured_;
        else add_copy(memcpy_[m.copy_kind < kCopyKinds ? m.copy_kind : 0], m.op, m.bytes);
        break;
      }
      case fmt::RecType::Memset: {
        const auto& m = rec.as<fmt::MemsetRec>();
        api_errors_ += is_error(m.op.result);
        if (m.op.flags & fmt::kOpCaptured) ++captured_;
        else add_copy(memset_, m.op, m.bytes);
        break;
      }
      case fmt::RecType::Sync: {
        const auto& s = rec.as<fmt::SyncRec>();
        api_errors_ += is_error(s.result, s.kind);
        SyncStat& st = syncs_[s.kind < kSyncKinds ? s.kind : 0];
        ++st.count;
        st.total_ns += std::max<int64_t>(0, s.cpu_end - s.cpu_begin);
        break;
      }
      case fmt::RecType::Memory:
        api_errors_ += is_error(rec.as<fmt::MemoryRec>().result);
        break;
      case fmt::RecType::Api:
        api_errors_ += is_error(rec.as<fmt::ApiRec>().result);
        break;
      default:
        break;
    }
  });
  records_ += r.status().records;
  merge_file(r, t);
  add_file_summary(r, ok);
  return ok;
}

void SummaryModel::merge_file(const TraceReader& r, FileTotals& t) {
  for (const auto& [id, stat] : t.kernels) kernels_[std::string(r.str(id))].merge(stat);
}

void SummaryModel::add_file_summary(const TraceReader& r, bool read_ok) {
  FileSummary f;
  f.file = r.path();
  f.host = r.meta("host");
  f.cmdline = r.meta("cmdline");
  f.rank = meta_int(r, "rank", -1);
  f.pid = meta_int(r, "pid", 0);
  f.local_rank = meta_int(r, "local_rank", -1);
  f.world_size = meta_int(r, "world_size", -1);
  f.version = std::to_string(r.version_major()) + "." + std::to_string(r.version_minor());
  for (const auto& [id, d] : r.devices()) {
    f.devices.push_back({d.device, std::string(r.str(d.name_id)), d.cc_major, d.cc_minor,
                         d.sm_count, d.total_mem});
  }
  f.status = r.status();
  f.dropped = std::max(f.status.complete ? f.status.end.dropped : 0, f.status.dropped);
  f.read_error = !read_ok;

  auto before = [](const FileSummary& a, const FileSummary& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.file < b.file;
  };
  files_.insert(std::upper_bound(files_.begin(), files_.end(), f, before), std::move(f));
}

std::vector<KernelStat> SummaryModel::kernels() const {
  std::vector<KernelStat> out;
  out.reserve(kernels_.size());
  for (const auto& [name, stat] : kernels_) out.push_back({name, stat});
  std::sort(out.begin(), out.end(), [](const KernelStat& a, const KernelStat& b) {
    if (a.time.total_ns != b.time.total_ns) return a.time.total_ns > b.time.total_ns;
    if (a.time.count != b.time.count) return a.time.count > b.time.count;
    return a.name < b.name;
  });
  return out;
}

uint64_t SummaryModel::dropped_records() const {
  uint64_t n = 0;
  for (const FileSummary& f : files_) n += f.dropped;
  return n;
}

nlohmann::ordered_json SummaryModel::to_json() const {
  nlohmann::ordered_json j;
  j["kernels"] = nlohmann::ordered_json::array();
  for (const KernelStat& k : kernels()) {
    j["kernels"].push_back({{"name", k.name},
                            {"count", k.time.count},
                            {"total_ns", k.time.total_ns},
                            {"mean_ns", k.time.mean_ns()},
                            {"min_ns", k.time.min_ns},
                            {"max_ns", k.time.max_ns},
                            {"untimed", k.time.untimed}});
  }
  nlohmann::ordered_json copies = nlohmann::ordered_json::object();
  for (size_t kind = 1; kind < kCopyKinds; ++kind) {
    copies[copy_kind_name(uint8_t(kind))] = copy_json(memcpy_[kind]);
  }
  if (memcpy_[0].time.count) copies[copy_kind_name(0)] = copy_json(memcpy_[0]);
  j["memcpy"] = copies;
  j["memset"] = copy_json(memset_);
  nlohmann::ordered_json syncs = nlohmann::ordered_json::object();
  for (size_t kind = 1; kind < kSyncKinds; ++kind) {
    syncs[sync_kind_name(uint8_t(kind))] = {{"count", syncs_[kind].count},
                                            {"total_ns", syncs_[kind].total_ns}};
  }
  if (syncs_[0].count) {
    syncs[sync_kind_name(0)] = {{"count", syncs_[0].count}, {"total_ns", syncs_[0].total_ns}};
  }
  j["syncs"] = syncs;
  j["ranks"] = nlohmann::ordered_json::array();
  for (const FileSummary& f : files_) {
    j["ranks"].push_back({{"rank", f.rank},
                          {"host", f.host},
                          {"pid", f.pid},
                          {"file", f.file},
                          {"complete", f.status.complete},
                          {"dropped", f.dropped},
                          {"bad_blocks", f.status.bad_blocks}});
  }
  j["dropped_records"] = dropped_records();
  j["api_errors"] = api_errors_;
  j["captured_ops"] = captured_;
  j["records"] = records_;
  return j;
}

}  // namespace cutrace
