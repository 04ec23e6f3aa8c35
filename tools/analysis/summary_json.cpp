// `cutrace summary --json`: SummaryModel::to_json(), one function per section of the document
// (docs/SUMMARY.md defines every key). Keys are written in the documented order.
#include <limits>

#include "tools/analysis/summary_model.h"

namespace cutrace {
namespace {

// ---- JSON helpers ----------------------------------------------------------------------------

using Json = nlohmann::ordered_json;

double share(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

Json dist_json(const Dist& d) {
  return {{"count", d.n},
          {"total_ns", d.sum},
          {"mean_ns", d.mean()},
          {"median_ns", d.median()},
          {"p90_ns", d.percentile(0.9)},
          {"p99_ns", d.percentile(0.99)},
          {"min_ns", d.min},
          {"max_ns", d.max},
          {"stddev_ns", d.stddev()}};
}

Json copy_json(const CopyStat& c) {
  const TimeStat& t = c.time;
  return {{"count", t.count},
          {"bytes", c.bytes},
          {"total_ns", t.total_ns()},
          {"untimed", t.untimed},
          {"mean_ns", t.mean_ns()},
          {"median_ns", t.gpu.median()},
          {"min_ns", t.min_ns()},
          {"max_ns", t.max_ns()},
          {"stddev_ns", t.gpu.stddev()},
          {"bandwidth_gbps", t.total_ns() > 0 ? double(c.timed_bytes) / double(t.total_ns()) : 0.0}};
}

Json bins_json(const std::vector<HistBin>& bins) {
  Json a = Json::array();
  for (const HistBin& b : bins) a.push_back({{"lo_ns", b.lo_ns}, {"hi_ns", b.hi_ns}, {"count", b.count}});
  return a;
}

Json breakdown_json(const GpuBreakdown& b) {
  return {{"compute_ns", b.compute_ns()},
          {"communication_ns", b.communication_ns()},
          {"memory_ns", b.memory_ns()},
          {"idle_ns", b.idle_ns()},
          {"host_wait_ns", b.host_wait_ns},
          {"kernel_wait_ns", b.kernel_wait_ns},
          {"idle_gaps", b.gaps},
          {"host_wait_gaps", b.host_wait_gaps},
          {"overlap_ns", b.overlap_ns()},
          {"comm_total_ns", b.comm_total_ns()},
          {"overlap_share", share(double(b.overlap_ns()), double(b.comm_total_ns()))}};
}

Json activity_json(const GpuBreakdown& b) {
  return {{"elapsed_ns", b.elapsed_ns()},
          {"busy_ns", b.busy_ns()},
          {"utilization", share(double(b.busy_ns()), double(b.elapsed_ns()))},
          {"kernel_ns", b.kernel_ns()},
          {"memcpy_ns", b.memcpy_ns()},
          {"memset_ns", b.memset_ns()},
          {"idle_ns", b.idle_ns()}};
}

Json nvml_json(const NvmlStat& s) {
  return {{"device", s.device},
          {"samples", s.samples},
          {"util_mean", s.util_mean()},
          {"mem_util_mean", s.mem_util_mean()},
          {"power_w_mean", s.power_w_mean()},
          {"mem_used_max", s.mem_used_max}};
}

Json opt_int(bool has, int64_t v) { return has ? Json(v) : Json(nullptr); }

Json windows_json(const FileSummary& f) {
  Json a = Json::array();
  for (const WindowSummary& w : f.windows) {
    a.push_back({{"index", w.index},
                 {"begin_ns", w.begin_ns},
                 {"end_ns", opt_int(w.end_ns >= 0, w.end_ns)},
                 {"kernels", w.kernels},
                 {"kernel_ns", w.kernel_ns},
                 {"steps",
                  {{"count", w.steps.n},
                   {"cpu_mean_ns", w.steps.mean()},
                   {"cpu_median_ns", w.steps.median()},
                   {"cpu_min_ns", w.steps.min},
                   {"cpu_max_ns", w.steps.max}}}});
  }
  return a;
}

// ---- the document's sections, in its order --------------------------------------------------

Json filters_json(const SummaryModel& m) {
  const SummaryOptions& o = m.options();
  return {{"rank", o.rank ? Json(*o.rank) : Json(nullptr)},
          {"window", o.window ? Json(*o.window) : Json(nullptr)},
          {"from_ns", opt_int(o.from_ns != std::numeric_limits<int64_t>::min(), o.from_ns)},
          {"to_ns", opt_int(o.to_ns != std::numeric_limits<int64_t>::max(), o.to_ns)},
          {"times", o.relative ? "from each file's start" : "absolute"},
          {"step_source", m.step_source()}};
}

struct KernelTotals {  // all kernels together: the whole of each share
  TimeStat time;
  int64_t est_ns = 0;
};

KernelTotals kernel_totals(const std::vector<KernelStat>& ks) {
  KernelTotals all;
  for (const KernelStat& k : ks) all.time.merge(k.time), all.est_ns = sat_add(all.est_ns, k.est_ns);
  return all;
}

Json kernels_json(const std::vector<KernelStat>& ks, const KernelTotals& all, bool sampled) {
  Json a = Json::array();
  for (const KernelStat& k : ks) {
    a.push_back({{"name", k.name},
                 {"count", k.time.count},
                 {"total_ns", k.time.total_ns()},
                 {"mean_ns", k.time.mean_ns()},
                 {"min_ns", k.time.min_ns()},
                 {"max_ns", k.time.max_ns()},
                 {"untimed", k.time.untimed},
                 {"pending_at_exit", k.time.pending},
                 {"median_ns", k.time.gpu.median()},
                 {"p90_ns", k.time.gpu.percentile(0.9)},
                 {"stddev_ns", k.time.gpu.stddev()},
                 {"share", share(double(k.time.total_ns()), double(all.time.total_ns()))},
                 {"precision", precision_name(k.precision)},
                 {"communication", k.comm}});
    if (sampled) a.back()["est_total_ns"] = k.est_ns;
  }
  return a;
}

Json kernel_totals_json(size_t names, const KernelTotals& all, bool sampled) {
  Json t = {{"count", all.time.count},
            {"untimed", all.time.untimed},
            {"names", names},
            {"total_ns", all.time.total_ns()},
            {"mean_ns", all.time.mean_ns()}};
  if (sampled) t["est_total_ns"] = all.est_ns;
  return t;
}

Json kernel_precision_json(const SummaryModel& m, const KernelTotals& all) {
  std::array<PrecisionTotal, kPrecisions> prec = m.precisions();
  Json p = Json::object();
  for (size_t i = 0; i < kPrecisions; ++i) {
    p[precision_name(Precision(i))] = {{"count", prec[i].count},
                                       {"names", prec[i].names},
                                       {"total_ns", prec[i].total_ns},
                                       {"share", share(double(prec[i].total_ns), double(all.time.total_ns()))}};
  }
  return p;
}

Json short_kernels_json(const SummaryModel& m, const KernelTotals& all) {
  return {{"threshold_ns", m.options().short_kernel_ns},
          {"count", m.short_kernels()},
          {"total_ns", m.short_kernel_ns()},
          {"launch_share", share(double(m.short_kernels()), double(all.time.timed()))},
          {"time_share", share(double(m.short_kernel_ns()), double(all.time.total_ns()))}};
}

Json launch_latency_json(const SummaryModel& m) {
  Json lat = dist_json(m.launch_latency());
  lat["negative"] = m.launch_latency().neg.count();
  lat["stream_idle"] = dist_json(m.launch_latency_idle());
  lat["worst"] = Json::array();
  for (const LaunchOutlier& w : m.worst_launches()) {
    lat["worst"].push_back({{"latency_ns", w.latency_ns},
                            {"name", w.name},
                            {"rank", w.rank},
                            {"file", w.file},
                            {"corr", w.corr},
                            {"cpu_end_ns", w.cpu_end},
                            {"gpu_start_ns", w.gpu_start}});
  }
  return lat;
}

// Copy kinds 1.. in order, then kind 0 (unknown) when there were such copies.
Json memcpy_json(const SummaryModel& m) {
  Json copies = Json::object();
  for (size_t kind = 1; kind < SummaryModel::kCopyKinds; ++kind)
    copies[copy_kind_name(uint8_t(kind))] = copy_json(m.memcpy_kind(kind));
  if (m.memcpy_kind(0).time.count) copies[copy_kind_name(0)] = copy_json(m.memcpy_kind(0));
  return copies;
}

// Each copy kind's and memset's share of the GPU time of memory operations.
Json memory_ops_json(const SummaryModel& m) {
  int64_t mem_total = m.memsets().time.total_ns();
  for (size_t kind = 0; kind < SummaryModel::kCopyKinds; ++kind)
    mem_total = sat_add(mem_total, m.memcpy_kind(kind).time.total_ns());
  Json mem = {{"total_ns", mem_total}};
  auto part = [&](int64_t ns) { return Json{{"total_ns", ns}, {"share", share(double(ns), double(mem_total))}}; };
  for (size_t kind = 1; kind < SummaryModel::kCopyKinds; ++kind)
    mem[copy_kind_name(uint8_t(kind))] = part(m.memcpy_kind(kind).time.total_ns());
  if (m.memcpy_kind(0).time.count) mem[copy_kind_name(0)] = part(m.memcpy_kind(0).time.total_ns());
  mem["memset"] = part(m.memsets().time.total_ns());
  return mem;
}

Json api_json(const SummaryModel& m) {
  Json a = Json::array();
  for (const ApiStat& s : m.apis()) {
    a.push_back({{"name", s.name},
                 {"count", s.time.count},
                 {"total_ns", s.time.total_ns},
                 {"mean_ns", s.time.mean_ns()},
                 {"max_ns", s.time.max_ns}});
  }
  return a;
}

// Sync kinds 1.. in order, then kind 0 (unknown) when there were such calls.
Json syncs_json(const SummaryModel& m) {
  auto sync_json = [](const SyncStat& s) {
    return Json{{"count", s.count}, {"total_ns", s.total_ns}, {"mean_ns", s.mean_ns()}, {"max_ns", s.max_ns}};
  };
  Json syncs = Json::object();
  for (size_t kind = 1; kind < SummaryModel::kSyncKinds; ++kind)
    syncs[sync_kind_name(uint8_t(kind))] = sync_json(m.sync_kind(kind));
  if (m.sync_kind(0).count) syncs[sync_kind_name(0)] = sync_json(m.sync_kind(0));
  return syncs;
}

// One object per range name (thousands with per-step names): built key by key into a reserved
// object, which costs half as much as the initializer-list form (that copies every value).
Json ranges_json(const SummaryModel& m) {
  std::vector<RangeSummary> range_list = m.ranges();
  Json range_array = Json::array();
  range_array.get_ref<Json::array_t&>().reserve(range_list.size());
  for (const RangeSummary& g : range_list) {
    const RangeStat& s = g.stat;
    Json& r = range_array.emplace_back(Json::object());
    r.get_ref<Json::object_t&>().reserve(18);
    r["name"] = g.name;
    r["domain"] = g.domain;
    r["count"] = s.count;
    r["open"] = s.open;
    r["cpu_total_ns"] = s.cpu.sum;
    r["cpu_mean_ns"] = s.cpu.mean();
    r["cpu_min_ns"] = s.cpu.min;
    r["cpu_max_ns"] = s.cpu.max;
    r["gpu_count"] = s.gpu.n;
    r["gpu_total_ns"] = s.gpu.sum;
    r["gpu_mean_ns"] = s.gpu.mean();
    r["gpu_ops"] = s.gpu_ops;
    r["cpu_median_ns"] = s.cpu.median();
    r["cpu_stddev_ns"] = s.cpu.stddev();
    r["gpu_median_ns"] = s.gpu.median();
    r["gpu_stddev_ns"] = s.gpu.stddev();
    r["gpu_min_ns"] = s.gpu.min;
    r["gpu_max_ns"] = s.gpu.max;
  }
  return range_array;
}

Json marks_json(const SummaryModel& m) {
  Json marks = Json::object();
  for (const auto& [name, n] : m.marks()) marks[name] = n;
  return marks;
}

Json steps_json(const SummaryModel& m) {
  auto step_dist = [](const StepStats& s, bool gpu) {
    const Dist& d = gpu ? s.gpu : s.cpu;
    auto pct = [&](double p) { return gpu ? s.gpu_percentile(p) : s.cpu_percentile(p); };
    return Json{{"count", d.n},    {"mean_ns", d.mean()}, {"median_ns", pct(0.5)},  {"p90_ns", pct(0.9)},
                {"min_ns", d.min}, {"max_ns", d.max},     {"stddev_ns", d.stddev()}};
  };
  const StepStats& steps = m.steps();
  return {{"source", m.step_source()},
          {"count", steps.cpu.n},
          {"exact", steps.exact},
          {"cpu", step_dist(steps, false)},
          {"gpu", step_dist(steps, true)},
          {"cpu_histogram", bins_json(steps.bins(false))},
          {"gpu_histogram", bins_json(steps.bins(true))}};
}

// One object per device of each file: its activity, breakdown and NVML samples.
Json devices_json(const SummaryModel& m) {
  Json devices = Json::array();
  for (const FileSummary& f : m.files()) {
    for (const DeviceActivity& a : f.activity) {
      Json d = {{"rank", f.rank}, {"file", f.file}, {"device", a.device}};
      Json act = activity_json(a.timeline);
      for (auto& [k, v] : act.items()) d[k] = v;
      d["breakdown"] = breakdown_json(a.timeline);
      d["intervals"] = a.timeline.intervals;
      d["late"] = a.timeline.late;
      d["late_ns"] = a.timeline.late_ns;
      d["nvml"] = nullptr;
      for (const NvmlStat& s : f.nvml) {
        if (s.device == a.device) d["nvml"] = nvml_json(s);
      }
      devices.push_back(d);
    }
  }
  return devices;
}

Json gpu_total_json(const SummaryModel& m) {
  GpuBreakdown total = m.total_breakdown();
  Json bt = activity_json(total);
  bt["breakdown"] = breakdown_json(total);
  return bt;
}

// Per counter: its whole-trace total and rate; per-CPU counters one entry per CPU.
Json counters_json(const tools::CounterSet& cs) {
  Json list = Json::array(), missing = Json::array();
  for (const tools::CounterTrack& t : cs.tracks())
    list.push_back({{"name", t.name},
                    {"scope", tools::counter_scope_name(t.scope)},
                    {"cpu", t.cpu},
                    {"unit", t.unit == trace::CounterUnit::Nanoseconds ? "ns" : "events"},
                    {"source", t.source == 1 ? "getrusage" : "perf"},
                    {"samples", t.points.size()},
                    {"total", t.total},
                    {"covered_ns", t.covered_ns},
                    {"per_second", t.per_second()},
                    {"min_running", double(t.min_running) / 10000.0}});
  for (const tools::CounterMissing& m : cs.missing())
    missing.push_back(
        {{"name", m.name}, {"scope", tools::counter_scope_name(m.scope)}, {"errno", m.err}, {"reason", m.reason}});
  double ipc = cs.ipc();
  return {{"samples", cs.samples()},
          {"ipc", ipc >= 0 ? Json(ipc) : Json(nullptr)},
          {"counters", list},
          {"missing", missing}};
}

Json rank_json(const FileSummary& f) {
  Json nv = Json::array();
  for (const NvmlStat& s : f.nvml) nv.push_back(nvml_json(s));
  GpuBreakdown fb;
  for (const DeviceActivity& a : f.activity) fb.merge(a.timeline);
  return {
      {"rank", f.rank},
      {"host", f.host},
      {"pid", f.pid},
      {"file", f.file},
      {"complete", f.status.complete},
      {"exit_status", opt_int(f.exit_status >= 0, f.exit_status)},
      {"gpu_timing", f.gpu_timing},
      {"gpu_sample", f.gpu_sample},
      {"not_sampled", f.not_sampled},
      {"dropped", f.dropped},
      {"drops", tools::loss_json(f.losses)},
      {"bad_blocks", f.status.bad_blocks},
      {"duplicate_blocks", f.status.duplicate_blocks},
      // A flight-recorder file holds only its snapshots: its counts cover those spans.
      {"flight",
       f.flight_seconds > 0 ? Json{{"seconds", f.flight_seconds}, {"snapshots", f.flight_snapshots}} : Json()},
      {"kernels", f.kernels},
      {"kernel_ns", f.kernel_ns},
      {"comm_kernel_ns", f.comm_kernel_ns},
      {"steps",
       {{"count", f.steps.cpu.n},
        {"cpu_mean_ns", f.steps.cpu.mean()},
        {"cpu_median_ns", f.steps.cpu_percentile(0.5)},
        {"gpu_mean_ns", f.steps.gpu.mean()},
        {"gpu_median_ns", f.steps.gpu_percentile(0.5)}}},
      {"windows", windows_json(f)},
      {"windows_beyond", f.windows_beyond},
      {"gpu_busy_ns", fb.busy_ns()},
      {"gpu_elapsed_ns", fb.elapsed_ns()},
      {"breakdown", breakdown_json(fb)},
      {"cpu",
       {{"samples", f.cpu_samples},
        {"cores", f.cpu_cores},
        {"host_util_mean", f.cpu_samples ? double(f.cpu_total_util_sum) / 100.0 / double(f.cpu_samples) : 0.0},
        {"process_util_mean", f.cpu_samples ? double(f.cpu_process_util_sum) / 100.0 / double(f.cpu_samples) : 0.0}}},
      {"cpu_counters", counters_json(f.counters)},
      {"nvml", nv}};
}

Json ranks_json(const SummaryModel& m) {
  Json ranks = Json::array();
  for (const FileSummary& f : m.files()) ranks.push_back(rank_json(f));
  return ranks;
}

Json rank_comparison_json(const SummaryModel& m) {
  std::string criterion;
  int slow = m.slowest_file(&criterion);
  if (slow < 0) return nullptr;
  const FileSummary& s = m.files()[size_t(slow)];
  return {{"slowest_rank", s.rank}, {"slowest_file", s.file}, {"criterion", criterion}};
}

// The first kSyncSites call sites by blocked time, and the totals of all.
Json sync_call_sites_json(const SummaryModel& m) {
  Json sites = Json::array();
  std::vector<SyncSite> all_sites = m.sync_sites();
  CpuTimeStat attributed;
  for (const SyncSite& site : all_sites) attributed.merge(site.time);
  for (size_t i = 0; i < all_sites.size() && i < SummaryModel::kSyncSites; ++i) {
    const SyncSite& site = all_sites[i];
    Json frames = Json::array();
    for (const SymFrame& f : site.frames) {
      if (f.python)
        frames.push_back({{"python", true}, {"function", f.function}, {"file", f.module}, {"line", f.line}});
      else
        frames.push_back(
            {{"function", f.function}, {"module", f.module}, {"offset", f.offset}, {"file", f.file}, {"line", f.line}});
    }
    Json apis = Json::object();
    for (const auto& [name, n] : site.apis) apis[name] = n;
    sites.push_back({{"site", sync_site_label(site, m.options().py_skip)},
                     {"count", site.time.count},
                     {"total_ns", site.time.total_ns},
                     {"mean_ns", site.time.mean_ns()},
                     {"max_ns", site.time.max_ns},
                     {"apis", apis},
                     {"frames", frames}});
  }
  const CpuTimeStat& unattributed = m.sync_unattributed();
  return {{"sites", sites},
          {"distinct", all_sites.size()},
          {"with_stack", {{"count", attributed.count}, {"total_ns", attributed.total_ns}}},
          {"without_stack", {{"count", unattributed.count}, {"total_ns", unattributed.total_ns}}},
          {"symbol_problems", m.symbol_problems()}};
}

// Kernels by Python call site, all of them.
Json py_call_sites_json(const SummaryModel& m) {
  Json sites = Json::array();
  for (const PyCallSite& s : m.py_call_sites())
    sites.push_back({{"site", s.label},
                     {"file", s.file},
                     {"line", s.line},
                     {"function", s.function},
                     {"kernels", s.count},
                     {"timed", s.timed},
                     {"gpu_ns", s.gpu_ns}});
  return {{"skip", m.options().py_skip}, {"sites", sites}};
}

}  // namespace

Json SummaryModel::to_json() const {
  Json j;
  j["filters"] = filters_json(*this);
  std::vector<KernelStat> ks = kernels();
  KernelTotals all = kernel_totals(ks);
  j["kernels"] = kernels_json(ks, all, sampled_);
  j["kernel_totals"] = kernel_totals_json(ks.size(), all, sampled_);
  j["kernel_precision"] = kernel_precision_json(*this, all);
  j["short_kernels"] = short_kernels_json(*this, all);
  j["launch_latency"] = launch_latency_json(*this);
  j["memcpy"] = memcpy_json(*this);
  j["memset"] = copy_json(memset_);
  j["memory_ops"] = memory_ops_json(*this);
  j["api"] = api_json(*this);
  j["syncs"] = syncs_json(*this);
  j["ranges"] = ranges_json(*this);
  j["marks"] = marks_json(*this);
  j["steps"] = steps_json(*this);
  j["devices"] = devices_json(*this);
  j["gpu_total"] = gpu_total_json(*this);
  j["ranks"] = ranks_json(*this);
  j["rank_comparison"] = rank_comparison_json(*this);
  j["dropped_records"] = dropped_records();
  j["drops"] = tools::loss_json(losses());
  j["api_errors"] = api_errors_;
  j["captured_ops"] = captured_;
  j["graph_replays"] = graph_launches_expanded_;
  j["graph_kernels"] = graph_kernels_;
  j["records"] = records_;
  j["skipped_files"] = skipped_;
  j["notes"] = notes();
  j["sync_call_sites"] = sync_call_sites_json(*this);  // added after the keys above (theirs stay)
  j["python_call_sites"] = py_call_sites_json(*this);
  j["pending_at_exit"] = {{"ops", pending_ops_}, {"syncs", open_syncs_}};
  return j;
}

nlohmann::ordered_json unreadable_json(const TraceSet& set) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& [file, why] : set.unreadable()) a.push_back({{"file", file}, {"reason", why}});
  return a;
}

}  // namespace cutrace
