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

void RangeStat::add(int64_t cpu_begin, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end,
                    uint32_t ops) {
  int64_t cpu = std::max<int64_t>(0, cpu_end - cpu_begin);
  ++count;
  cpu_min_ns = count == 1 ? cpu : std::min(cpu_min_ns, cpu);
  cpu_max_ns = std::max(cpu_max_ns, cpu);
  cpu_total_ns += cpu;
  if (gpu_start != 0 && gpu_end != 0 && gpu_end >= gpu_start) {
    ++gpu_count;
    gpu_total_ns += gpu_end - gpu_start;
  }
  gpu_ops += ops;
}

void RangeStat::merge(const RangeStat& o) {
  if (o.count) {
    cpu_min_ns = count ? std::min(cpu_min_ns, o.cpu_min_ns) : o.cpu_min_ns;
    cpu_max_ns = std::max(cpu_max_ns, o.cpu_max_ns);
  }
  count += o.count;
  cpu_total_ns += o.cpu_total_ns;
  gpu_count += o.gpu_count;
  gpu_total_ns += o.gpu_total_ns;
  gpu_ops += o.gpu_ops;
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
  // Ranges by (domain string id << 32 | name string id); at most kMaxRangeNames keys, the rest
  // in other_ranges. Marks by name string id, likewise.
  std::unordered_map<uint64_t, RangeStat> ranges;
  RangeStat other_ranges;
  std::unordered_map<uint32_t, uint64_t> marks;
  uint64_t other_marks = 0;

  void add_range(const fmt::RangeRec& g) {
    uint64_t key = uint64_t(g.domain_id) << 32 | g.name_id;
    auto it = ranges.find(key);
    RangeStat* st = it != ranges.end()            ? &it->second
                    : ranges.size() < kMaxRangeNames ? &ranges[key]
                                                     : &other_ranges;
    st->add(g.cpu_begin, g.cpu_end, g.gpu_start, g.gpu_end, g.gpu_ops);
  }
  void add_mark(uint32_t name_id) {
    auto it = marks.find(name_id);
    if (it != marks.end()) ++it->second;
    else if (marks.size() < kMaxMarkNames) marks[name_id] = 1;
    else ++other_marks;
  }
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
      case fmt::RecType::Range:  // the size check matters only to a reader that predates Range
        if (rec.size() >= sizeof(fmt::RangeRec)) t.add_range(rec.as<fmt::RangeRec>());
        break;
      case fmt::RecType::Mark:
        if (rec.size() >= sizeof(fmt::MarkRec)) t.add_mark(rec.as<fmt::MarkRec>().name_id);
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

  // In id order (ids are assigned in order of first use), so that which names are kept when
  // the name limit is reached does not depend on hash order.
  std::vector<std::pair<uint64_t, const RangeStat*>> ranges;
  ranges.reserve(t.ranges.size());
  for (const auto& [key, stat] : t.ranges) ranges.emplace_back(key, &stat);
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) {
    uint32_t na = uint32_t(a.first), nb = uint32_t(b.first);
    return na != nb ? na < nb : a.first < b.first;
  });
  RangeStat other = t.other_ranges;
  for (const auto& [key, stat] : ranges) {
    RangeKey k{std::string(r.str(uint32_t(key >> 32))), std::string(r.str(uint32_t(key)))};
    auto it = ranges_.find(k);
    if (it != ranges_.end()) it->second.merge(*stat);
    else if (ranges_.size() < kMaxRangeNames) ranges_.emplace(std::move(k), *stat);
    else other.merge(*stat);
  }
  if (other.count) ranges_[RangeKey{"", kOtherNames}].merge(other);

  std::vector<std::pair<uint32_t, uint64_t>> marks(t.marks.begin(), t.marks.end());
  std::sort(marks.begin(), marks.end());
  uint64_t other_marks = t.other_marks;
  for (const auto& [id, n] : marks) {
    std::string name(r.str(id));
    auto it = marks_.find(name);
    if (it != marks_.end()) it->second += n;
    else if (marks_.size() < kMaxMarkNames) marks_.emplace(std::move(name), n);
    else other_marks += n;
  }
  if (other_marks) marks_[kOtherNames] += other_marks;
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

std::vector<RangeSummary> SummaryModel::ranges() const {
  std::vector<RangeSummary> out;
  out.reserve(ranges_.size());
  for (const auto& [key, stat] : ranges_) out.push_back({key.name, key.domain, stat});
  std::sort(out.begin(), out.end(), [](const RangeSummary& a, const RangeSummary& b) {
    if (a.stat.cpu_total_ns != b.stat.cpu_total_ns) return a.stat.cpu_total_ns > b.stat.cpu_total_ns;
    if (a.stat.count != b.stat.count) return a.stat.count > b.stat.count;
    if (a.name != b.name) return a.name < b.name;
    return a.domain < b.domain;
  });
  return out;
}

std::vector<std::pair<std::string, uint64_t>> SummaryModel::marks() const {
  std::vector<std::pair<std::string, uint64_t>> out(marks_.begin(), marks_.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
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
  j["ranges"] = nlohmann::ordered_json::array();
  for (const RangeSummary& g : ranges()) {
    j["ranges"].push_back({{"name", g.name},
                           {"domain", g.domain},
                           {"count", g.stat.count},
                           {"cpu_total_ns", g.stat.cpu_total_ns},
                           {"cpu_mean_ns", g.stat.cpu_mean_ns()},
                           {"cpu_min_ns", g.stat.cpu_min_ns},
                           {"cpu_max_ns", g.stat.cpu_max_ns},
                           {"gpu_count", g.stat.gpu_count},
                           {"gpu_total_ns", g.stat.gpu_total_ns},
                           {"gpu_mean_ns", g.stat.gpu_mean_ns()},
                           {"gpu_ops", g.stat.gpu_ops}});
  }
  nlohmann::ordered_json marks = nlohmann::ordered_json::object();
  for (const auto& [name, n] : this->marks()) marks[name] = n;
  j["marks"] = marks;
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
