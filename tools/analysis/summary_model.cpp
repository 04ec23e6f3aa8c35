#include "tools/analysis/summary_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "tools/common/id_table.h"

namespace cutrace {
namespace {

constexpr int32_t kCudaErrorNotReady = 600;  // the normal "still busy" answer of the query calls

bool is_error(int32_t result, uint8_t sync_kind = 0) {
  bool query = sync_kind == uint8_t(trace::SyncKind::StreamQuery) ||
               sync_kind == uint8_t(trace::SyncKind::EventQuery);
  return result != 0 && !(query && result == kCudaErrorNotReady);
}

// The synchronisations that block the calling thread until the GPU catches up.
bool blocking_sync(uint8_t kind) {
  return kind == uint8_t(trace::SyncKind::Context) || kind == uint8_t(trace::SyncKind::Stream) ||
         kind == uint8_t(trace::SyncKind::Event);
}

bool timed(int64_t gpu_start, int64_t gpu_end) {
  return gpu_start != 0 && gpu_end != 0 && gpu_end >= gpu_start;
}

// Meta gpu_sample: the fraction of the time GPU times were taken in (--gpu-sample); 1 without.
double meta_gpu_sample(const TraceReader& r) {
  std::string v(r.meta("gpu_sample"));
  return v.empty() ? 1 : std::strtod(v.c_str(), nullptr);
}

bool is_comm_kernel(std::string_view name) { return name.compare(0, 4, "nccl") == 0; }

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
                 {"steps", {{"count", w.steps.n},
                            {"cpu_mean_ns", w.steps.mean()},
                            {"cpu_median_ns", w.steps.median()},
                            {"cpu_min_ns", w.steps.min},
                            {"cpu_max_ns", w.steps.max}}}});
  }
  return a;
}

}  // namespace


// ---- LogHistogram, Dist ----------------------------------------------------------------------

int64_t LogHistogram::bucket_low(int b) {
  if (b < (1 << kSubBits)) return b;
  int e = (b >> kSubBits) + kSubBits - 1;
  int64_t sub = b & ((1 << kSubBits) - 1);
  return ((int64_t(1) << kSubBits) + sub) << (e - kSubBits);
}

int64_t LogHistogram::bucket_value(int b) {
  int64_t lo = bucket_low(b);
  if (b < (1 << kSubBits) || b + 1 >= kBuckets) return lo;
  int64_t hi = bucket_low(b + 1) - 1;
  return lo + (hi - lo + 1) / 2;
}

void LogHistogram::start() {
  counts_.assign(size_t(kBuckets), 0);
  for (size_t i = 0; i < n_; ++i) ++counts_[size_t(bucket(small_[i]))];
}

void LogHistogram::merge(const LogHistogram& o) {
  if (o.n_ == 0) return;
  if (o.counts_.empty()) {
    for (size_t i = 0; i < o.n_; ++i) add(o.small_[i]);
    return;
  }
  if (n_ == 0) {
    *this = o;
    return;
  }
  if (counts_.empty()) start();
  for (size_t b = 0; b < counts_.size(); ++b) counts_[b] += o.counts_[b];
  n_ += o.n_;
}

int64_t LogHistogram::at_rank(uint64_t k) const {
  if (n_ == 0) return 0;
  k = std::clamp<uint64_t>(k, 1, n_);
  if (counts_.empty()) {
    size_t m = std::min<size_t>(n_, kInline);
    k = std::min<uint64_t>(k, m);
    std::array<int64_t, kInline> v = small_;
    std::nth_element(v.begin(), v.begin() + ptrdiff_t(k - 1), v.begin() + ptrdiff_t(m));
    return v[k - 1];
  }
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[size_t(b)];
    if (seen >= k) return bucket_value(b);
  }
  return bucket_value(kBuckets - 1);
}

void Dist::merge(const Dist& o) {
  if (o.n == 0) return;
  min = n == 0 ? o.min : std::min(min, o.min);
  max = n == 0 ? o.max : std::max(max, o.max);
  n += o.n;
  sum = sat_add(sum, o.sum);
  sumsq += o.sumsq;
  pos.merge(o.pos);
  neg.merge(o.neg);
}

int64_t Dist::percentile(double p) const {
  if (n == 0) return 0;
  uint64_t k = uint64_t(std::ceil(std::clamp(p, 0.0, 1.0) * double(n)));
  k = std::clamp<uint64_t>(k, 1, n);
  if (k == 1) return min;  // the extremes are known exactly
  if (k == n) return max;
  int64_t v = k <= neg.count() ? -neg.at_rank(neg.count() - k + 1) : pos.at_rank(k - neg.count());
  return std::clamp(v, min, max);
}

int64_t Dist::stddev() const {
  if (n < 2) return 0;
  // n * variance, exact but for < 1
  unsigned __int128 mean_sq = static_cast<unsigned __int128>(__int128(sum) * sum) / n;
  if (sumsq <= mean_sq) return 0;
  unsigned __int128 m2 = sumsq - mean_sq;
  return int64_t(std::llround(std::sqrt(double(m2) / double(n - 1))));
}

// ---- stats -----------------------------------------------------------------------------------

void TimeStat::merge(const TimeStat& o) {
  count += o.count;
  untimed += o.untimed;
  pending += o.pending;
  gpu.merge(o.gpu);
}

void CopyStat::merge(const CopyStat& o) {
  time.merge(o.time);
  bytes += o.bytes;
  timed_bytes += o.timed_bytes;
}

void RangeStat::add(int64_t cpu_begin, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end,
                    uint32_t ops) {
  ++count;
  cpu.add(cpu_end > cpu_begin ? sat_sub(cpu_end, cpu_begin) : 0);
  if (timed(gpu_start, gpu_end)) gpu.add(sat_sub(gpu_end, gpu_start));
  gpu_ops += ops;
}

void RangeStat::merge(const RangeStat& o) {
  count += o.count;
  open += o.open;
  cpu.merge(o.cpu);
  gpu.merge(o.gpu);
  gpu_ops += o.gpu_ops;
}

void StepStats::add(int64_t cpu_ns, bool has_gpu, int64_t gpu_ns) {
  cpu.add(cpu_ns);
  if (has_gpu) gpu.add(gpu_ns);
  if (!exact) return;
  if (cpu_values.size() >= kMaxExactSteps) {
    exact = false;
    std::vector<int64_t>().swap(cpu_values);
    std::vector<int64_t>().swap(gpu_values);
    return;
  }
  cpu_values.push_back(cpu_ns);
  if (has_gpu) gpu_values.push_back(gpu_ns);
}

void StepStats::merge(const StepStats& o) {
  cpu.merge(o.cpu);
  gpu.merge(o.gpu);
  if (exact && o.exact && cpu_values.size() + o.cpu_values.size() <= kMaxExactSteps) {
    cpu_values.insert(cpu_values.end(), o.cpu_values.begin(), o.cpu_values.end());
    gpu_values.insert(gpu_values.end(), o.gpu_values.begin(), o.gpu_values.end());
  } else {
    exact = false;
    std::vector<int64_t>().swap(cpu_values);
    std::vector<int64_t>().swap(gpu_values);
  }
}

namespace {
int64_t exact_percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  uint64_t k = uint64_t(std::ceil(std::clamp(p, 0.0, 1.0) * double(v.size())));
  k = std::clamp<uint64_t>(k, 1, v.size());
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(k - 1), v.end());
  return v[k - 1];
}
}  // namespace

int64_t StepStats::cpu_percentile(double p) const {
  return exact ? exact_percentile(cpu_values, p) : cpu.percentile(p);
}
int64_t StepStats::gpu_percentile(double p) const {
  return exact ? exact_percentile(gpu_values, p) : gpu.percentile(p);
}

std::vector<HistBin> StepStats::bins(bool use_gpu) const {
  const Dist& d = use_gpu ? gpu : cpu;
  std::vector<HistBin> out;
  if (d.n == 0) return out;
  int64_t range = sat_sub(d.max, d.min);  // damaged durations may be negative
  size_t nbins = range == 0 ? 1 : std::clamp<size_t>(size_t(std::ceil(std::sqrt(double(d.n)))), 10, 20);
  int64_t width = range / int64_t(nbins) + 1;  // nbins * width > range: max falls in the last bin
  for (size_t i = 0; i < nbins; ++i) {
    int64_t lo = sat_add(d.min, int64_t(i) * width);
    out.push_back({lo, sat_add(lo, width), 0});
  }
  auto put = [&](int64_t v, uint64_t n) {
    v = std::clamp(v, d.min, d.max);
    out[std::min(size_t(sat_sub(v, d.min) / width), nbins - 1)].count += n;
  };
  if (exact) {
    for (int64_t v : use_gpu ? gpu_values : cpu_values) put(v, 1);
  } else {
    d.pos.for_each(put);  // step durations are never negative
  }
  return out;
}

// ---- per-file streaming ----------------------------------------------------------------------

struct SummaryModel::Span {  // records kept: cpu_begin (or ts) in [lo, hi]
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
  bool in(int64_t t) const { return t >= lo && t <= hi; }
};

struct SummaryModel::FileTotals {
  struct KSlot {
    uint32_t name_id;
    bool comm;
    TimeStat time;
    // Sampled files only: the name's launch configurations (grid, block), for KernelStat::est_ns.
    // A name has few: found by a linear search.
    struct Config {
      uint64_t key;
      uint64_t count = 0, timed = 0;
      int64_t sum = 0;
    };
    std::vector<Config> configs;

    void add_config(const trace::KernelRec& k, int64_t gpu_start, int64_t gpu_end) {
      uint64_t key = 1469598103934665603ull;  // FNV-1a over the six dimensions
      for (uint32_t v : {k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2]})
        key = (key ^ v) * 1099511628211ull;
      auto c = std::find_if(configs.begin(), configs.end(), [&](const Config& x) { return x.key == key; });
      if (c == configs.end()) c = configs.insert(configs.end(), Config{key});
      ++c->count;
      if (timed(gpu_start, gpu_end)) ++c->timed, c->sum = sat_add(c->sum, sat_sub(gpu_end, gpu_start));
    }
    int64_t estimate() const {
      double est = 0, mean = double(time.mean_ns());
      for (const Config& c : configs) est += c.timed ? double(c.sum) / double(c.timed) * double(c.count) : mean * double(c.count);
      return est < 9.2e18 ? std::llround(est) : std::numeric_limits<int64_t>::max();
    }
  };
  struct Worst {
    int64_t latency;
    uint32_t name_id;
    uint64_t corr;
    int64_t cpu_end, gpu_start;
  };
  struct Timeline {
    uint16_t device;
    std::unique_ptr<DeviceTimeline> t;
  };

  const SummaryOptions& opt;
  const TraceReader& r;
  explicit FileTotals(const SummaryOptions& o, const TraceReader& rd) : opt(o), r(rd) {}

  std::vector<int32_t> kslot_of;  // by name string id; -1: none yet
  std::vector<KSlot> kslots;
  std::vector<CpuTimeStat> apis;  // by api id
  // Ranges by (domain string id << 32 | name string id); at most kMaxRangeNames keys, the rest
  // in other_ranges. Marks by name string id, likewise.
  std::unordered_map<uint64_t, RangeStat> ranges;
  RangeStat other_ranges;
  std::unordered_map<uint64_t, uint64_t> marks;  // (domain id << 32 | name id) -> count
  uint64_t other_marks = 0;
  IdTable<int8_t> is_step{-1};  // by name string id: -1 not decided yet
  StepStats steps;
  std::vector<int64_t> step_ends;              // --step-sync: sorted synchronisation ends
  bool by_sync_steps = false;                  // step_ends.size() >= 2
  std::vector<int64_t> step_lo, step_hi;       // per step: GPU span of its operations
  std::vector<WindowSummary> windows;  // FileSummary::windows, by begin time
  uint64_t windows_beyond = 0;
  std::vector<Worst> worst;
  int64_t worst_floor = std::numeric_limits<int64_t>::min();
  IdTable<int64_t> stream_end{0};  // by stream id: latest GPU end seen
  std::vector<Timeline> timelines;
  DeviceTimeline* last_timeline = nullptr;  // of last_device
  uint16_t last_device = 0;
  std::vector<NvmlStat> nvml;
  uint64_t cpu_samples = 0, cpu_total = 0, cpu_process = 0;
  uint64_t not_sampled = 0;  // untimed GPU operations flagged not_sampled
  bool sampled = false;      // the file's GPU times are a sample (meta gpu_sample < 1)
  uint16_t cpu_cores = 0;
  static constexpr uint32_t kMaxDenseNameId = 1u << 20;
  std::unordered_map<uint32_t, int32_t> kslot_far;

  [[gnu::always_inline]] KSlot& kslot(uint32_t name_id) {
    if (name_id < kslot_of.size()) {  // inline: a name seen before (one bounds test, not two)
      int32_t s = kslot_of[name_id];
      if (s >= 0) return kslots[size_t(s)];
    }
    return new_kslot(name_id);
  }
  KSlot& new_kslot(uint32_t name_id) {
    // Writers number strings from 1 up, so a table indexed by id stays small; an id far beyond
    // that comes from a damaged file and goes to a map (fuzz_summary: an 8 GB table).
    int32_t* slot;
    if (name_id < kslot_of.size() || name_id < kMaxDenseNameId) {
      if (name_id >= kslot_of.size()) kslot_of.resize(size_t(name_id) + 1, -1);
      slot = &kslot_of[name_id];
    } else {
      slot = &kslot_far.try_emplace(name_id, -1).first->second;
    }
    int32_t& s = *slot;
    if (s < 0) {
      s = int32_t(kslots.size());
      kslots.push_back({name_id, is_comm_kernel(r.str(name_id)), TimeStat{}, {}});
    }
    return kslots[size_t(s)];
  }
  [[gnu::always_inline]] CpuTimeStat& api(uint16_t id) {
    if (id >= apis.size()) apis.resize(size_t(id) + 1);
    return apis[id];
  }
  [[gnu::always_inline]] DeviceTimeline& timeline(uint16_t device) {
    if (last_timeline && last_device == device) return *last_timeline;
    last_device = device;
    for (Timeline& t : timelines) {
      if (t.device == device) return *(last_timeline = t.t.get());
    }
    timelines.push_back({device, std::make_unique<DeviceTimeline>(opt.timeline_capacity)});
    return *(last_timeline = timelines.back().t.get());
  }
  [[gnu::always_inline]] int64_t& last_end(uint32_t stream) {
    return stream_end[stream];
  }
  // A timed GPU operation: the timeline, the stream's last end (le: last_end(op.stream)), the
  // --step-sync step.
  [[gnu::always_inline]] void gpu_op(const trace::OpCommon& op, int64_t& le, GpuWork work, int64_t ready) {
    int64_t gs = op.gpu_start, ge = op.gpu_end;
    timeline(op.device).add(gs, ge, ready, work);
    if (ge > le) le = ge;
    if (by_sync_steps) {
      int64_t cb = op.cpu_begin;
      size_t i = size_t(std::lower_bound(step_ends.begin(), step_ends.end(), cb) - step_ends.begin());
      if (i >= 1 && i < step_ends.size()) {
        step_lo[i - 1] = step_lo[i - 1] == 0 ? gs : std::min(step_lo[i - 1], gs);
        step_hi[i - 1] = std::max(step_hi[i - 1], ge);
      }
    }
  }
  void add_worst(int64_t latency, uint32_t name_id, const trace::OpCommon& op) {
    if (worst.size() >= kWorstLaunches && latency <= worst_floor) return;
    Worst w{latency, name_id, op.corr, op.cpu_end, op.gpu_start};
    if (worst.size() < kWorstLaunches) {
      worst.push_back(w);
    } else {
      auto lowest = std::min_element(worst.begin(), worst.end(),
                                     [](const Worst& a, const Worst& b) { return a.latency < b.latency; });
      *lowest = w;
    }
    if (worst.size() == kWorstLaunches) {
      worst_floor = std::min_element(worst.begin(), worst.end(), [](const Worst& a, const Worst& b) {
                      return a.latency < b.latency;
                    })->latency;
    }
  }
  bool step_name(uint32_t name_id) {
    int8_t& s = is_step[name_id];
    if (s < 0) s = trace::name_pattern_match(opt.step_pattern, r.str(name_id)) ? 1 : 0;
    return s == 1;
  }
  void add_range(const trace::RangeRec& g) {
    uint64_t key = uint64_t(g.domain_id) << 32 | g.name_id;
    auto it = ranges.find(key);
    RangeStat* st = it != ranges.end()               ? &it->second
                    : ranges.size() < kMaxRangeNames ? &ranges[key]
                                                     : &other_ranges;
    if (trace::range_open(g)) {
      ++st->open;
      return;
    }
    st->add(g.cpu_begin, g.cpu_end, g.gpu_start, g.gpu_end, g.gpu_ops);
    if (opt.step_sync == 0 && step_name(g.name_id)) {
      int64_t gs = g.gpu_start, ge = g.gpu_end;
      steps.add(std::max<int64_t>(0, g.cpu_end - g.cpu_begin), timed(gs, ge), ge - gs);
    }
  }
  // A file's records are not in time order (a packed block groups them by type): the edges are
  // collected here, and the records go to their windows by time afterwards (window_pass()).
  void window_edge(const trace::WindowRec& w, bool in_span) {
    if (w.edge == uint8_t(trace::WindowEdge::Begin)) {
      if (!in_span) return;
      if (windows.size() >= FileSummary::kMaxWindows) {
        ++windows_beyond;
        return;
      }
      windows.emplace_back();
      windows.back().index = w.index;
      windows.back().begin_ns = w.ts;
    } else if (w.edge == uint8_t(trace::WindowEdge::End)) {
      for (auto it = windows.rbegin(); it != windows.rend(); ++it) {
        if (it->index == w.index) {
          it->end_ns = w.ts;
          break;
        }
      }
    }
  }
  // The window that holds time t (the last one opened at or before t); null: none.
  WindowSummary* window_at(int64_t t) {
    auto it = std::upper_bound(windows.begin(), windows.end(), t,
                               [](int64_t v, const WindowSummary& w) { return v < w.begin_ns; });
    return it == windows.begin() ? nullptr : &*std::prev(it);
  }
  // --step-sync steps, known only at the end: each to the window it ended in.
  void sync_steps_to_windows() {
    for (size_t i = 0; i + 1 < step_ends.size(); ++i) {
      if (WindowSummary* w = window_at(step_ends[i + 1])) w->steps.add(sat_sub(step_ends[i + 1], step_ends[i]));
    }
  }
  void add_mark(uint32_t domain_id, uint32_t name_id) {
    uint64_t key = uint64_t(domain_id) << 32 | name_id;
    auto it = marks.find(key);
    if (it != marks.end()) ++it->second;
    else if (marks.size() < kMaxMarkNames) marks[key] = 1;
    else ++other_marks;
  }
  // Sync call sites: this file's stacks, the stacks of blocking calls whose record is still to
  // come (OpStack precedes its operation), blocked time per stack id.
  struct Site {
    CpuTimeStat time;
    std::map<uint16_t, uint64_t> apis;
  };
  StackTable stacks;
  OpStacks op_stacks;  // blocking operations' stacks only
  std::unordered_map<uint32_t, Site> sites;
  CpuTimeStat unattributed;
  void link_stack(const trace::OpStackRec& o) {
    using T = trace::RecType;
    if (o.op_type == uint16_t(T::Sync) || o.op_type == uint16_t(T::Memcpy) || o.op_type == uint16_t(T::Memset))
      op_stacks.link(o);
  }
  void blocked(uint32_t stack, uint16_t api, int64_t cpu_begin, int64_t cpu_end) {
    if (!stack) return unattributed.add(cpu_begin, cpu_end);
    Site& s = sites[stack];
    s.time.add(cpu_begin, cpu_end);
    ++s.apis[api];
  }
  NvmlStat& gpu_sample(uint16_t device) {
    for (NvmlStat& s : nvml) {
      if (s.device == device) return s;
    }
    nvml.push_back(NvmlStat{});
    nvml.back().device = device;
    return nvml.back();
  }
};

// First pass, only with --window or --step-sync: the window's edges and the synchronisations.
bool SummaryModel::prepass(TraceReader& r, Span* span, std::vector<int64_t>* step_ends) {
  bool found_begin = false;
  int64_t begin = 0, end = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> syncs;
  bool ok = r.read([&](const Record& rec) {
    if (rec.type() == trace::RecType::Window && opt_.window) {
      const auto& w = rec.as<trace::WindowRec>();
      if (w.index != *opt_.window) return;
      if (w.edge == uint8_t(trace::WindowEdge::Begin)) {
        found_begin = true;
        begin = w.ts;
      } else if (w.edge == uint8_t(trace::WindowEdge::End)) {
        end = w.ts;
      }
    } else if (rec.type() == trace::RecType::Sync && opt_.step_sync) {
      const auto& s = rec.as<trace::SyncRec>();
      if (s.kind == opt_.step_sync) syncs.push_back(int64_t(s.cpu_end));  // a copy: packed field
    }
  });
  if (opt_.window) {
    if (!found_begin) {
      notes_.push_back(r.path() + ": no capture window " + std::to_string(*opt_.window) + ": skipped");
      return false;
    }
    span->lo = std::max(span->lo, begin);
    span->hi = std::min(span->hi, end);
  }
  std::sort(syncs.begin(), syncs.end());
  for (int64_t t : syncs) {
    if (span->in(t)) step_ends->push_back(t);
  }
  return ok;
}

// Second pass, only over files with more than one capture window: kernels and steps to the
// window they began in (--step-sync steps go by their ends, in merge_file).
bool SummaryModel::window_pass(TraceReader& r, FileTotals& t, const Span& span) {
  std::sort(t.windows.begin(), t.windows.end(),
            [](const WindowSummary& a, const WindowSummary& b) { return a.begin_ns < b.begin_ns; });
  return r.read([&](const Record& rec) {
    if (rec.type() == trace::RecType::Kernel) {
      const auto& k = rec.as<trace::KernelRec>();
      const trace::OpCommon& op = k.op;
      if (!span.in(op.cpu_begin) || (op.flags & trace::kOpCaptured) || !trace::is_gpu_work(op.flags)) return;
      WindowSummary* w = t.window_at(op.cpu_begin);
      if (!w) return;
      ++w->kernels;
      if (timed(op.gpu_start, op.gpu_end)) w->kernel_ns = sat_add(w->kernel_ns, sat_sub(op.gpu_end, op.gpu_start));
    } else if (rec.type() == trace::RecType::Range && rec.size() >= sizeof(trace::RangeRec) && opt_.step_sync == 0) {
      const auto& g = rec.as<trace::RangeRec>();
      if (!span.in(g.cpu_begin) || trace::range_open(g) || !t.step_name(g.name_id)) return;
      if (WindowSummary* w = t.window_at(g.cpu_begin)) w->steps.add(std::max<int64_t>(0, g.cpu_end - g.cpu_begin));
    }
  });
}

bool SummaryModel::add(TraceReader& r) {
  if (opt_.rank && r.meta_int("rank", -1) != *opt_.rank) {
    ++skipped_;
    return true;
  }
  Span span;
  span.lo = opt_.from_ns;
  span.hi = opt_.to_ns;
  if (opt_.relative) {  // from the capture start (meta start_monotonic_ns, else the first ClockSync)
    int64_t start = r.meta_int("start_monotonic_ns", r.clock_sync().monotonic_ns);
    if (span.lo != std::numeric_limits<int64_t>::min()) span.lo = sat_add(start, span.lo);
    if (span.hi != std::numeric_limits<int64_t>::max()) span.hi = sat_add(start, span.hi);
  }
  FileTotals t(opt_, r);
  t.sampled = meta_gpu_sample(r) < 1;
  if (opt_.window || opt_.step_sync) {
    if (!prepass(r, &span, &t.step_ends)) {
      if (!r.error().empty()) {
        FileSummary f = file_summary(r, false);
        files_.insert(std::upper_bound(files_.begin(), files_.end(), f,
                                       [](const FileSummary& a, const FileSummary& b) {
                                         return a.rank != b.rank ? a.rank < b.rank : a.file < b.file;
                                       }),
                      std::move(f));
        return false;
      }
      ++skipped_;
      return true;
    }
    if (t.step_ends.size() >= 2) {
      t.by_sync_steps = true;
      t.step_lo.assign(t.step_ends.size() - 1, 0);
      t.step_hi.assign(t.step_ends.size() - 1, 0);
    }
  }

  traces_.push_back(runs::identify(r));
  bool ok = r.read([&](const Record& rec) {
    switch (rec.type()) {
      case trace::RecType::Kernel: {
        const auto& k = rec.as<trace::KernelRec>();
        const trace::OpCommon& op = k.op;
        if (!span.in(op.cpu_begin)) break;
        const bool launch = trace::is_call(op.flags);  // not a graph replay's kernel (its launch counts)
        if (launch) {
          api_errors_ += is_error(op.result);
          t.api(op.api).add(op.cpu_begin, op.cpu_end);
        }
        if (op.flags & trace::kOpCaptured) {
          ++captured_;
          break;
        }
        // Launch latency: from a launch call's return to its work's start on the GPU (a graph
        // replay's first kernel: the replay's span), when the start was measured.
        auto latency = [&](int64_t stream_end) {
          if ((op.flags & trace::kOpInferredStart) || !launch || !timed(op.gpu_start, op.gpu_end)) return;
          int64_t l = sat_sub(op.gpu_start, op.cpu_end);
          launch_.add(l);
          if (stream_end <= op.cpu_end) {  // nothing queued ahead on the stream
            launch_idle_.add(l);
            t.add_worst(l, k.name_id, op);
          }
        };
        if (!trace::is_gpu_work(op.flags)) {  // a graph launch whose replay's operations follow it
          ++graph_launches_expanded_;
          latency(t.last_end(op.stream));
          break;
        }
        graph_kernels_ += !launch;
        FileTotals::KSlot& s = t.kslot(k.name_id);
        int64_t gs = op.gpu_start, ge = op.gpu_end;
        s.time.add(gs, ge);
        if (t.sampled) s.add_config(k, gs, ge);
        if (!timed(gs, ge)) {
          t.not_sampled += (op.flags & trace::kOpNotSampled) != 0;
          s.time.pending += (op.flags & trace::kOpPendingExit) != 0;
          pending_ops_ += (op.flags & trace::kOpPendingExit) != 0;
          break;
        }
        int64_t d = sat_sub(ge, gs);
        if (d < opt_.short_kernel_ns) {
          ++short_count_;
          short_ns_ = sat_add(short_ns_, d);
        }
        int64_t& stream_end = t.last_end(op.stream);
        latency(stream_end);
        t.gpu_op(op, stream_end, s.comm ? GpuWork::Comm : GpuWork::Compute, op.cpu_end);
        break;
      }
      case trace::RecType::Memcpy:
      case trace::RecType::Memset: {
        bool is_set = rec.type() == trace::RecType::Memset;
        const trace::OpCommon& op = is_set ? rec.as<trace::MemsetRec>().op : rec.as<trace::MemcpyRec>().op;
        const bool call = trace::is_call(op.flags);  // not a graph replay's copy or set
        uint32_t stack = call ? t.op_stacks.take(op.corr) : 0;
        if (!span.in(op.cpu_begin)) break;
        if (call) {
          api_errors_ += is_error(op.result);
          t.api(op.api).add(op.cpu_begin, op.cpu_end);
        }
        if (op.flags & trace::kOpCaptured) {
          ++captured_;
          break;
        }
        if (call && !(op.flags & trace::kOpAsync)) t.blocked(stack, op.api, op.cpu_begin, op.cpu_end);
        CopyStat* c;
        uint64_t bytes;
        if (is_set) {
          c = &memset_;
          bytes = rec.as<trace::MemsetRec>().bytes;
        } else {
          const auto& m = rec.as<trace::MemcpyRec>();
          c = &memcpy_[m.copy_kind < kCopyKinds ? m.copy_kind : 0];
          bytes = m.bytes;
        }
        int64_t gs = op.gpu_start, ge = op.gpu_end;
        c->time.add(gs, ge);
        c->bytes += bytes;
        if (!timed(gs, ge)) {
          t.not_sampled += (op.flags & trace::kOpNotSampled) != 0;
          c->time.pending += (op.flags & trace::kOpPendingExit) != 0;
          pending_ops_ += (op.flags & trace::kOpPendingExit) != 0;
          break;
        }
        c->timed_bytes += bytes;
        t.gpu_op(op, t.last_end(op.stream), is_set ? GpuWork::Memset : GpuWork::Memcpy,
                 (op.flags & trace::kOpAsync) ? op.cpu_end : op.cpu_begin);
        break;
      }
      case trace::RecType::Sync: {
        const auto& s = rec.as<trace::SyncRec>();
        uint32_t stack = t.op_stacks.take(s.corr);
        if (!span.in(s.cpu_begin)) break;
        if (trace::sync_open(s)) {  // still blocked when the process ended: no duration
          ++open_syncs_;
          break;
        }
        api_errors_ += is_error(s.result, s.kind);
        t.api(s.api).add(s.cpu_begin, s.cpu_end);
        syncs_[s.kind < kSyncKinds ? s.kind : 0].add(s.cpu_begin, s.cpu_end);
        if (blocking_sync(s.kind)) t.blocked(stack, s.api, s.cpu_begin, s.cpu_end);
        break;
      }
      case trace::RecType::Module:
      case trace::RecType::Stack:
        t.stacks.absorb(rec, r);
        break;
      case trace::RecType::OpStack:
        t.link_stack(rec.as<trace::OpStackRec>());
        break;
      case trace::RecType::Memory: {
        const auto& m = rec.as<trace::MemoryRec>();
        if (!span.in(m.cpu_begin)) break;
        api_errors_ += is_error(m.result);
        t.api(m.api).add(m.cpu_begin, m.cpu_end);
        break;
      }
      case trace::RecType::Api: {
        const auto& a = rec.as<trace::ApiRec>();
        if (!span.in(a.cpu_begin)) break;
        api_errors_ += is_error(a.result);
        t.api(a.api).add(a.cpu_begin, a.cpu_end);
        break;
      }
      case trace::RecType::Window: {
        const auto& w = rec.as<trace::WindowRec>();
        t.window_edge(w, span.in(w.ts));
        break;
      }
      case trace::RecType::Range:  // the size check matters only to a reader that predates Range
        if (rec.size() >= sizeof(trace::RangeRec) && span.in(rec.as<trace::RangeRec>().cpu_begin)) {
          t.add_range(rec.as<trace::RangeRec>());
        }
        break;
      case trace::RecType::Mark:
        if (rec.size() >= sizeof(trace::MarkRec) && span.in(rec.as<trace::MarkRec>().ts)) {
          t.add_mark(rec.as<trace::MarkRec>().domain_id, rec.as<trace::MarkRec>().name_id);
        }
        break;
      case trace::RecType::CpuSample: {
        const auto& c = rec.as<trace::CpuSampleRec>();
        if (!span.in(c.ts)) break;
        ++t.cpu_samples;
        t.cpu_total += c.total_util;
        t.cpu_process += c.process_util;
        t.cpu_cores = c.ncores;
        break;
      }
      case trace::RecType::GpuSample: {
        const auto& g = rec.as<trace::GpuSampleRec>();
        if (!span.in(g.ts)) break;
        NvmlStat& s = t.gpu_sample(g.device);
        ++s.samples;
        s.util_sum += g.util;
        s.mem_util_sum += g.mem_util;
        s.power_mw_sum += g.power_mw;
        uint64_t used = g.mem_used;
        if (used > s.mem_used_max) s.mem_used_max = used;
        break;
      }
      default:
        break;
    }
  });
  records_ += r.status().records;
  if (ok && t.windows.size() > 1) ok = window_pass(r, t, span);
  FileSummary f = file_summary(r, ok);
  merge_file(r, t, f);
  if (f.gpu_sample < 1) {
    sampled_ = true;
    char what[160];
    std::snprintf(what, sizeof what, "GPU times (%s) sampled in %g%% of the time, one window in each %g ms",
                  f.gpu_timing.c_str(), f.gpu_sample * 100, double(f.gpu_sample_period_ns) / 1e6);
    notes_.push_back(r.path() + ": " + what + ": " + std::to_string(f.not_sampled) +
                     " GPU operations untimed by design. GPU busy and idle time and the Total columns count the "
                     "timed operations only; counts are exact, means stand for all launches, and kernels' "
                     "Est. total (est_total_ns) estimates all launches per launch configuration");
  }
  files_.insert(std::upper_bound(files_.begin(), files_.end(), f,
                                 [](const FileSummary& a, const FileSummary& b) {
                                   return a.rank != b.rank ? a.rank < b.rank : a.file < b.file;
                                 }),
                std::move(f));
  return ok;
}

void SummaryModel::merge_file(const TraceReader& r, FileTotals& t, FileSummary& f) {
  for (const FileTotals::KSlot& s : t.kslots) {
    KernelEntry& e = kernels_[std::string(r.str(s.name_id))];
    e.time.merge(s.time);
    e.comm = s.comm;
    e.est_ns = sat_add(e.est_ns, t.sampled ? s.estimate() : s.time.total_ns());
    f.kernels += s.time.count;
    f.kernel_ns = sat_add(f.kernel_ns, s.time.total_ns());
    if (s.comm) f.comm_kernel_ns = sat_add(f.comm_kernel_ns, s.time.total_ns());
  }
  for (size_t id = 0; id < t.apis.size(); ++id) {
    if (t.apis[id].count) apis_[std::string(r.api_name(uint16_t(id)))].merge(t.apis[id]);
  }

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

  std::vector<std::pair<uint64_t, uint64_t>> marks(t.marks.begin(), t.marks.end());
  std::sort(marks.begin(), marks.end());
  uint64_t other_marks = t.other_marks;
  for (const auto& [key, n] : marks) {  // a non-default domain's marks read "domain: name"
    uint32_t domain_id = uint32_t(key >> 32);
    std::string name = domain_id ? std::string(r.str(domain_id)) + ": " : std::string();
    name += r.str(uint32_t(key));
    auto it = marks_.find(name);
    if (it != marks_.end()) it->second += n;
    else if (marks_.size() < kMaxMarkNames) marks_.emplace(std::move(name), n);
    else other_marks += n;
  }
  if (other_marks) marks_[kOtherNames] += other_marks;

  // Sync call sites: stack ids are per file; the symbolised frames are the key across files.
  std::vector<std::pair<uint32_t, const FileTotals::Site*>> sites;
  for (const auto& [id, site] : t.sites) sites.emplace_back(id, &site);
  std::sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [id, site] : sites) {
    std::vector<SymFrame> frames = symbolizer_.stack(t.stacks, id);
    std::string key;
    for (const SymFrame& fr : frames) key += frame_text(fr) + "\n";
    SyncSite& g = sync_sites_[key];
    if (g.frames.empty()) g.frames = std::move(frames);
    g.time.merge(site->time);
    for (const auto& [api, n] : site->apis) g.apis[std::string(r.api_name(api))] += n;
  }
  sync_unattributed_.merge(t.unattributed);

  for (size_t i = 0; i + 1 < t.step_ends.size(); ++i) {
    bool gpu = t.step_hi[i] != 0;
    t.steps.add(sat_sub(t.step_ends[i + 1], t.step_ends[i]), gpu, sat_sub(t.step_hi[i], t.step_lo[i]));
  }
  t.sync_steps_to_windows();
  // One window holds every record of the file (nothing is recorded outside windows): its
  // figures are the file's, without the second pass that several windows need.
  if (t.windows.size() == 1) {
    WindowSummary& w = t.windows[0];
    for (const FileTotals::KSlot& s : t.kslots) w.kernels += s.time.count;
    for (const FileTotals::KSlot& s : t.kslots) w.kernel_ns = sat_add(w.kernel_ns, s.time.total_ns());
    if (!t.by_sync_steps) w.steps = t.steps.cpu;
  }
  steps_.merge(t.steps);
  f.steps = std::move(t.steps);
  f.windows = std::move(t.windows);
  f.windows_beyond = t.windows_beyond;

  for (const FileTotals::Worst& w : t.worst) {
    worst_.push_back({w.latency, std::string(r.str(w.name_id)), f.rank, f.file, w.corr, w.cpu_end,
                      w.gpu_start});
  }
  std::stable_sort(worst_.begin(), worst_.end(), [](const LaunchOutlier& a, const LaunchOutlier& b) {
    if (a.latency_ns != b.latency_ns) return a.latency_ns > b.latency_ns;
    if (a.file != b.file) return a.file < b.file;
    return a.corr < b.corr;
  });
  if (worst_.size() > kWorstLaunches) worst_.resize(kWorstLaunches);

  for (FileTotals::Timeline& tl : t.timelines) f.activity.push_back({tl.device, tl.t->finish()});
  std::sort(f.activity.begin(), f.activity.end(),
            [](const DeviceActivity& a, const DeviceActivity& b) { return a.device < b.device; });
  f.nvml = std::move(t.nvml);
  std::sort(f.nvml.begin(), f.nvml.end(),
            [](const NvmlStat& a, const NvmlStat& b) { return a.device < b.device; });
  f.cpu_samples = t.cpu_samples;
  f.cpu_cores = t.cpu_cores;
  f.cpu_total_util_sum = t.cpu_total;
  f.not_sampled = t.not_sampled;
  f.cpu_process_util_sum = t.cpu_process;
}

FileSummary SummaryModel::file_summary(const TraceReader& r, bool read_ok) const {
  FileSummary f;
  f.file = r.path();
  f.host = r.meta("host");
  f.cmdline = r.meta("cmdline");
  f.rank = r.meta_int("rank", -1);
  f.pid = r.meta_int("pid", 0);
  f.local_rank = r.meta_int("local_rank", -1);
  f.world_size = r.meta_int("world_size", -1);
  f.version = std::to_string(r.version_major()) + "." + std::to_string(r.version_minor());
  for (const auto& [id, d] : r.devices()) {
    f.devices.push_back({d.device, std::string(r.str(d.name_id)), d.cc_major, d.cc_minor,
                         d.sm_count, d.total_mem});
  }
  f.status = r.status();
  f.dropped = std::max(f.status.complete ? f.status.end.dropped : 0, f.status.dropped);
  f.losses = tools::loss_facts(r, f.dropped);
  f.read_error = !read_ok;
  f.exit_status = r.meta_int("exit_status", -1);
  f.gpu_timing = r.meta("gpu_timing");
  f.gpu_sample = meta_gpu_sample(r);
  f.gpu_sample_period_ns = r.meta_int("gpu_sample_period_ns", 0);
  return f;
}

// ---- results ---------------------------------------------------------------------------------

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

std::string sync_site_label(const SyncSite& s) {
  for (const SymFrame& f : s.frames) {
    std::string_view m(f.module);
    m = m.substr(m.rfind('/') == std::string_view::npos ? 0 : m.rfind('/') + 1);
    bool cuda = m.rfind("libcuda.so", 0) == 0 || m.rfind("libcudart", 0) == 0;
    if (!f.function.empty() && !cuda) return frame_text(f);
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
  auto key = [&](const FileSummary& f) {
    return steps ? f.steps.cpu_percentile(0.5) : f.kernel_ns - f.comm_kernel_ns;
  };
  for (size_t i = 1; i < files_.size(); ++i) {
    if (key(files_[i]) > key(files_[size_t(best)])) best = int(i);
  }
  if (criterion) *criterion = steps ? "median step time" : "compute kernel time";
  return best;
}

Json SummaryModel::to_json() const {
  Json j;
  j["filters"] = {{"rank", opt_.rank ? Json(*opt_.rank) : Json(nullptr)},
                  {"window", opt_.window ? Json(*opt_.window) : Json(nullptr)},
                  {"from_ns", opt_int(opt_.from_ns != std::numeric_limits<int64_t>::min(), opt_.from_ns)},
                  {"to_ns", opt_int(opt_.to_ns != std::numeric_limits<int64_t>::max(), opt_.to_ns)},
                  {"times", opt_.relative ? "from each file's start" : "absolute"},
                  {"step_source", step_source()}};

  std::vector<KernelStat> ks = kernels();
  TimeStat all;
  int64_t all_est = 0;
  for (const KernelStat& k : ks) all.merge(k.time), all_est = sat_add(all_est, k.est_ns);
  j["kernels"] = Json::array();
  for (const KernelStat& k : ks) {
    j["kernels"].push_back({{"name", k.name},
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
                            {"share", share(double(k.time.total_ns()), double(all.total_ns()))},
                            {"precision", precision_name(k.precision)},
                            {"communication", k.comm}});
    if (sampled_) j["kernels"].back()["est_total_ns"] = k.est_ns;
  }
  j["kernel_totals"] = {{"count", all.count},
                        {"untimed", all.untimed},
                        {"names", ks.size()},
                        {"total_ns", all.total_ns()},
                        {"mean_ns", all.mean_ns()}};
  if (sampled_) j["kernel_totals"]["est_total_ns"] = all_est;

  std::array<PrecisionTotal, kPrecisions> prec = precisions();
  j["kernel_precision"] = Json::object();
  for (size_t i = 0; i < kPrecisions; ++i) {
    j["kernel_precision"][precision_name(Precision(i))] = {
        {"count", prec[i].count},
        {"names", prec[i].names},
        {"total_ns", prec[i].total_ns},
        {"share", share(double(prec[i].total_ns), double(all.total_ns()))}};
  }
  j["short_kernels"] = {{"threshold_ns", opt_.short_kernel_ns},
                        {"count", short_count_},
                        {"total_ns", short_ns_},
                        {"launch_share", share(double(short_count_), double(all.timed()))},
                        {"time_share", share(double(short_ns_), double(all.total_ns()))}};

  Json lat = dist_json(launch_);
  lat["negative"] = launch_.neg.count();
  lat["stream_idle"] = dist_json(launch_idle_);
  lat["worst"] = Json::array();
  for (const LaunchOutlier& w : worst_) {
    lat["worst"].push_back({{"latency_ns", w.latency_ns},
                            {"name", w.name},
                            {"rank", w.rank},
                            {"file", w.file},
                            {"corr", w.corr},
                            {"cpu_end_ns", w.cpu_end},
                            {"gpu_start_ns", w.gpu_start}});
  }
  j["launch_latency"] = lat;

  Json copies = Json::object();
  for (size_t kind = 1; kind < kCopyKinds; ++kind) copies[copy_kind_name(uint8_t(kind))] = copy_json(memcpy_[kind]);
  if (memcpy_[0].time.count) copies[copy_kind_name(0)] = copy_json(memcpy_[0]);
  j["memcpy"] = copies;
  j["memset"] = copy_json(memset_);
  int64_t mem_total = memset_.time.total_ns();
  for (const CopyStat& c : memcpy_) mem_total = sat_add(mem_total, c.time.total_ns());
  Json mem = {{"total_ns", mem_total}};
  for (size_t kind = 1; kind < kCopyKinds; ++kind) {
    int64_t ns = memcpy_[kind].time.total_ns();
    mem[copy_kind_name(uint8_t(kind))] = {{"total_ns", ns}, {"share", share(double(ns), double(mem_total))}};
  }
  if (memcpy_[0].time.count) {
    int64_t ns = memcpy_[0].time.total_ns();
    mem[copy_kind_name(0)] = {{"total_ns", ns}, {"share", share(double(ns), double(mem_total))}};
  }
  mem["memset"] = {{"total_ns", memset_.time.total_ns()},
                   {"share", share(double(memset_.time.total_ns()), double(mem_total))}};
  j["memory_ops"] = mem;

  j["api"] = Json::array();
  for (const ApiStat& a : apis()) {
    j["api"].push_back({{"name", a.name},
                        {"count", a.time.count},
                        {"total_ns", a.time.total_ns},
                        {"mean_ns", a.time.mean_ns()},
                        {"max_ns", a.time.max_ns}});
  }

  Json syncs = Json::object();
  auto sync_json = [](const SyncStat& s) {
    return Json{{"count", s.count}, {"total_ns", s.total_ns}, {"mean_ns", s.mean_ns()}, {"max_ns", s.max_ns}};
  };
  for (size_t kind = 1; kind < kSyncKinds; ++kind) syncs[sync_kind_name(uint8_t(kind))] = sync_json(syncs_[kind]);
  if (syncs_[0].count) syncs[sync_kind_name(0)] = sync_json(syncs_[0]);
  j["syncs"] = syncs;

  // One object per range name (thousands with per-step names): built key by key into a reserved
  // object, which costs half as much as the initializer-list form (that copies every value).
  std::vector<RangeSummary> range_list = ranges();
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
  j["ranges"] = std::move(range_array);
  Json marks = Json::object();
  for (const auto& [name, n] : this->marks()) marks[name] = n;
  j["marks"] = marks;

  auto step_dist = [](const StepStats& s, bool gpu) {
    const Dist& d = gpu ? s.gpu : s.cpu;
    auto pct = [&](double p) { return gpu ? s.gpu_percentile(p) : s.cpu_percentile(p); };
    return Json{{"count", d.n},       {"mean_ns", d.mean()}, {"median_ns", pct(0.5)},
                {"p90_ns", pct(0.9)}, {"min_ns", d.min},     {"max_ns", d.max},
                {"stddev_ns", d.stddev()}};
  };
  j["steps"] = {{"source", step_source()},
                {"count", steps_.cpu.n},
                {"exact", steps_.exact},
                {"cpu", step_dist(steps_, false)},
                {"gpu", step_dist(steps_, true)},
                {"cpu_histogram", bins_json(steps_.bins(false))},
                {"gpu_histogram", bins_json(steps_.bins(true))}};

  j["devices"] = Json::array();
  for (const FileSummary& f : files_) {
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
      j["devices"].push_back(d);
    }
  }
  GpuBreakdown total = total_breakdown();
  Json bt = activity_json(total);
  bt["breakdown"] = breakdown_json(total);
  j["gpu_total"] = bt;

  j["ranks"] = Json::array();
  for (const FileSummary& f : files_) {
    Json nv = Json::array();
    for (const NvmlStat& s : f.nvml) nv.push_back(nvml_json(s));
    GpuBreakdown fb;
    for (const DeviceActivity& a : f.activity) fb.merge(a.timeline);
    j["ranks"].push_back(
        {{"rank", f.rank},
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
         {"kernels", f.kernels},
         {"kernel_ns", f.kernel_ns},
         {"comm_kernel_ns", f.comm_kernel_ns},
         {"steps", {{"count", f.steps.cpu.n},
                    {"cpu_mean_ns", f.steps.cpu.mean()},
                    {"cpu_median_ns", f.steps.cpu_percentile(0.5)},
                    {"gpu_mean_ns", f.steps.gpu.mean()},
                    {"gpu_median_ns", f.steps.gpu_percentile(0.5)}}},
         {"windows", windows_json(f)},
         {"windows_beyond", f.windows_beyond},
         {"gpu_busy_ns", fb.busy_ns()},
         {"gpu_elapsed_ns", fb.elapsed_ns()},
         {"breakdown", breakdown_json(fb)},
         {"cpu", {{"samples", f.cpu_samples},
                  {"cores", f.cpu_cores},
                  {"host_util_mean", f.cpu_samples ? double(f.cpu_total_util_sum) / 100.0 / double(f.cpu_samples) : 0.0},
                  {"process_util_mean", f.cpu_samples ? double(f.cpu_process_util_sum) / 100.0 / double(f.cpu_samples) : 0.0}}},
         {"nvml", nv}});
  }
  std::string criterion;
  int slow = slowest_file(&criterion);
  if (slow >= 0) {
    const FileSummary& s = files_[size_t(slow)];
    j["rank_comparison"] = {{"slowest_rank", s.rank}, {"slowest_file", s.file}, {"criterion", criterion}};
  } else {
    j["rank_comparison"] = nullptr;
  }
  j["dropped_records"] = dropped_records();
  j["drops"] = tools::loss_json(losses());
  j["api_errors"] = api_errors_;
  j["captured_ops"] = captured_;
  j["graph_replays"] = graph_launches_expanded_;
  j["graph_kernels"] = graph_kernels_;
  j["records"] = records_;
  j["skipped_files"] = skipped_;
  j["notes"] = notes();

  // Added after the keys above (their positions stay).
  Json sites = Json::array();
  std::vector<SyncSite> all_sites = sync_sites();
  CpuTimeStat attributed;
  for (const SyncSite& site : all_sites) attributed.merge(site.time);
  for (size_t i = 0; i < all_sites.size() && i < kSyncSites; ++i) {
    const SyncSite& site = all_sites[i];
    Json frames = Json::array();
    for (const SymFrame& f : site.frames)
      frames.push_back({{"function", f.function}, {"module", f.module}, {"offset", f.offset}});
    Json apis = Json::object();
    for (const auto& [name, n] : site.apis) apis[name] = n;
    sites.push_back({{"site", sync_site_label(site)},
                     {"count", site.time.count},
                     {"total_ns", site.time.total_ns},
                     {"mean_ns", site.time.mean_ns()},
                     {"max_ns", site.time.max_ns},
                     {"apis", apis},
                     {"frames", frames}});
  }
  j["sync_call_sites"] = {{"sites", sites},
                          {"distinct", all_sites.size()},
                          {"with_stack", {{"count", attributed.count}, {"total_ns", attributed.total_ns}}},
                          {"without_stack",
                           {{"count", sync_unattributed_.count}, {"total_ns", sync_unattributed_.total_ns}}},
                          {"symbol_problems", symbol_problems()}};
  j["pending_at_exit"] = {{"ops", pending_ops_}, {"syncs", open_syncs_}};
  return j;
}

}  // namespace cutrace
