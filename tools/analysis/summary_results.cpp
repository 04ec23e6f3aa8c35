// SummaryModel's results: the tables sorted for printing, and totals over all files.
#include <algorithm>

#include "tools/analysis/summary_model.h"

namespace cutrace {

std::vector<KernelStat> SummaryModel::kernels() const {
  std::vector<KernelStat> out;
  out.reserve(kernels_.size());
  for (const auto& [name, e] : kernels_) {
    out.push_back({name, e.time, kernel_precision(name), e.comm, e.est_ns});
  }
  // By estimated GPU time: the measured total unless a file is sampled.
  std::sort(out.begin(), out.end(), [](const KernelStat& a, const KernelStat& b) {
    if (a.est_ns != b.est_ns) return a.est_ns > b.est_ns;
    if (a.time.total_ns() != b.time.total_ns()) return a.time.total_ns() > b.time.total_ns();
    if (a.time.count != b.time.count) return a.time.count > b.time.count;
    return a.name < b.name;
  });
  return out;
}

std::array<PrecisionTotal, kPrecisions> SummaryModel::precisions() const {
  std::array<PrecisionTotal, kPrecisions> out{};
  for (const auto& [name, e] : kernels_) {
    PrecisionTotal& p = out[size_t(kernel_precision(name))];
    ++p.names;
    p.count += e.time.count;
    p.total_ns = sat_add(p.total_ns, e.time.total_ns());
  }
  return out;
}

std::vector<ApiStat> SummaryModel::apis() const {
  std::vector<ApiStat> out;
  for (const auto& [name, s] : apis_) out.push_back({name, s});
  std::sort(out.begin(), out.end(), [](const ApiStat& a, const ApiStat& b) {
    if (a.time.total_ns != b.time.total_ns) return a.time.total_ns > b.time.total_ns;
    if (a.time.count != b.time.count) return a.time.count > b.time.count;
    return a.name < b.name;
  });
  return out;
}

std::vector<SyncSite> SummaryModel::sync_sites() const {
  std::vector<std::pair<const std::string*, const SyncSite*>> v;
  for (const auto& [key, site] : sync_sites_) v.emplace_back(&key, &site);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    if (a.second->time.total_ns != b.second->time.total_ns) return a.second->time.total_ns > b.second->time.total_ns;
    if (a.second->time.count != b.second->time.count) return a.second->time.count > b.second->time.count;
    return *a.first < *b.first;
  });
  std::vector<SyncSite> out;
  for (const auto& p : v) out.push_back(*p.second);
  return out;
}

const SymFrame* py_call_site(const std::vector<SymFrame>& frames, const std::string& py_skip) {
  for (const SymFrame& f : frames)
    if (f.python && !py_frame_in_packages(f.module, py_skip)) return &f;
  return nullptr;
}

std::vector<PyCallSite> SummaryModel::py_call_sites() const {
  std::vector<PyCallSite> out;
  for (const auto& [key, site] : py_sites_) out.push_back(site);
  std::sort(out.begin(), out.end(), [](const PyCallSite& a, const PyCallSite& b) {
    if (a.gpu_ns != b.gpu_ns) return a.gpu_ns > b.gpu_ns;
    if (a.count != b.count) return a.count > b.count;
    return a.label < b.label;
  });
  return out;
}

std::string sync_site_label(const SyncSite& s, const std::string& py_skip) {
  if (const SymFrame* p = py_call_site(s.frames, py_skip)) return frame_text(*p);
  for (const SymFrame& f : s.frames) {
    if (f.python) continue;
    std::string_view m(f.module);
    m = m.substr(m.rfind('/') == std::string_view::npos ? 0 : m.rfind('/') + 1);
    bool cuda = m.rfind("libcuda.so", 0) == 0 || m.rfind("libcudart", 0) == 0;
    if (!f.function.empty() && !cuda) return site_text(f);
  }
  return s.frames.empty() ? "(unknown stack)" : frame_text(s.frames.front());
}

std::vector<RangeSummary> SummaryModel::ranges() const {
  std::vector<RangeSummary> out;
  out.reserve(ranges_.size());
  for (const auto& [key, stat] : ranges_) out.push_back({key.name, key.domain, stat});
  std::sort(out.begin(), out.end(), [](const RangeSummary& a, const RangeSummary& b) {
    if (a.stat.cpu_total_ns() != b.stat.cpu_total_ns()) return a.stat.cpu_total_ns() > b.stat.cpu_total_ns();
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

std::string SummaryModel::step_source() const {
  if (opt_.step_sync) return std::string("sync:") + sync_kind_name(opt_.step_sync);
  return "ranges:" + opt_.step_pattern;
}

GpuBreakdown SummaryModel::total_breakdown() const {
  GpuBreakdown b;
  for (const FileSummary& f : files_) {
    for (const DeviceActivity& a : f.activity) b.merge(a.timeline);
  }
  return b;
}

std::vector<std::string> SummaryModel::notes() const {
  std::vector<std::string> all = notes_;
  for (std::string& n : runs::mixed_runs(traces_)) all.push_back(std::move(n));
  return all;
}

tools::LossFacts SummaryModel::losses() const {
  tools::LossFacts all;
  bool known = true;
  for (const FileSummary& f : files_) {
    all.dropped += f.losses.dropped, all.at_exit += f.losses.at_exit, all.intervals += f.losses.intervals;
    for (int k = 0; k < trace::kLossKinds; ++k) all.by_kind[k] += f.losses.by_kind[k];
    known = known && f.losses.captured >= 0;
    if (f.losses.captured >= 0) all.captured = std::max<int64_t>(all.captured, 0) + f.losses.captured;
    all.budget_bytes = std::max(all.budget_bytes, f.losses.budget_bytes);
  }
  if (!known) all.captured = -1;
  return all;
}

uint64_t SummaryModel::dropped_records() const {
  uint64_t n = 0;
  for (const FileSummary& f : files_) n += f.dropped;
  return n;
}

int SummaryModel::slowest_file(std::string* criterion) const {
  if (files_.size() < 2) return -1;
  bool steps = std::all_of(files_.begin(), files_.end(), [](const FileSummary& f) { return f.steps.cpu.n > 0; });
  int best = 0;
  auto key = [&](const FileSummary& f) { return steps ? f.steps.cpu_percentile(0.5) : f.kernel_ns - f.comm_kernel_ns; };
  for (size_t i = 1; i < files_.size(); ++i) {
    if (key(files_[i]) > key(files_[size_t(best)])) best = int(i);
  }
  if (criterion) *criterion = steps ? "median step time" : "compute kernel time";
  return best;
}

}  // namespace cutrace
