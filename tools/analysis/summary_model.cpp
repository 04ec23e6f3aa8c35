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
  bool query = sync_kind == uint8_t(trace::SyncKind::StreamQuery) || sync_kind == uint8_t(trace::SyncKind::EventQuery);
  return result != 0 && !(query && result == kCudaErrorNotReady);
}

// The synchronisations that block the calling thread until the GPU catches up.
bool blocking_sync(uint8_t kind) {
  return kind == uint8_t(trace::SyncKind::Context) || kind == uint8_t(trace::SyncKind::Stream) ||
         kind == uint8_t(trace::SyncKind::Event);
}

// Meta gpu_sample: the fraction of the time GPU times were taken in (--gpu-sample); 1 without.
double meta_gpu_sample(const TraceReader& r) {
  std::string v(r.meta("gpu_sample"));
  return v.empty() ? 1 : std::strtod(v.c_str(), nullptr);
}

bool is_comm_kernel(std::string_view name) { return name.compare(0, 4, "nccl") == 0; }

// Keeps files sorted by rank, then file name.
void insert_by_rank(std::vector<FileSummary>& files, FileSummary f) {
  auto by_rank = [](const FileSummary& a, const FileSummary& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.file < b.file;
  };
  files.insert(std::upper_bound(files.begin(), files.end(), f, by_rank), std::move(f));
}

}  // namespace

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
      if (gpu_timed(gpu_start, gpu_end)) ++c->timed, c->sum = sat_add(c->sum, sat_sub(gpu_end, gpu_start));
    }
    int64_t estimate() const {
      double est = 0, mean = double(time.mean_ns());
      for (const Config& c : configs)
        est += c.timed ? double(c.sum) / double(c.timed) * double(c.count) : mean * double(c.count);
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
  std::vector<int64_t> step_ends;         // --step-sync: sorted synchronisation ends
  bool by_sync_steps = false;             // step_ends.size() >= 2
  std::vector<int64_t> step_lo, step_hi;  // per step: GPU span of its operations
  std::vector<WindowSummary> windows;     // FileSummary::windows, by begin time
  uint64_t windows_beyond = 0;
  std::vector<Worst> worst;
  int64_t worst_floor = std::numeric_limits<int64_t>::min();
  IdTable<int64_t> stream_end{0};  // by stream id: latest GPU end seen
  std::vector<Timeline> timelines;
  DeviceTimeline* last_timeline = nullptr;  // of last_device
  uint16_t last_device = 0;
  std::vector<NvmlStat> nvml;
  uint64_t cpu_samples = 0, cpu_total = 0, cpu_process = 0;
  tools::CounterSet counters;
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
  [[gnu::always_inline]] int64_t& last_end(uint32_t stream) { return stream_end[stream]; }
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
    RangeStat* st = it != ranges.end() ? &it->second : ranges.size() < kMaxRangeNames ? &ranges[key] : &other_ranges;
    if (trace::range_open(g)) {
      ++st->open;
      return;
    }
    st->add(g.cpu_begin, g.cpu_end, g.gpu_start, g.gpu_end, g.gpu_ops);
    if (opt.step_sync == 0 && step_name(g.name_id)) {
      int64_t gs = g.gpu_start, ge = g.gpu_end;
      steps.add(std::max<int64_t>(0, g.cpu_end - g.cpu_begin), gpu_timed(gs, ge), ge - gs);
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
  // Kernels' stacks only where they have Python frames (the Python call-site table).
  void link_stack(const trace::OpStackRec& o) {
    using T = trace::RecType;
    if (o.op_type == uint16_t(T::Sync) || o.op_type == uint16_t(T::Memcpy) || o.op_type == uint16_t(T::Memset))
      op_stacks.link(o);
    else if (o.op_type == uint16_t(T::Kernel) && stacks.py_stack(o.stack)) op_stacks.link(o);
  }
  std::unordered_map<uint32_t, PyCallSite> py_sites;  // kernels by stack id
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
      if (gpu_timed(op.gpu_start, op.gpu_end)) w->kernel_ns = sat_add(w->kernel_ns, sat_sub(op.gpu_end, op.gpu_start));
    } else if (rec.type() == trace::RecType::Range && rec.size() >= sizeof(trace::RangeRec) && opt_.step_sync == 0) {
      const auto& g = rec.as<trace::RangeRec>();
      if (!span.in(g.cpu_begin) || trace::range_open(g) || !t.step_name(g.name_id)) return;
      if (WindowSummary* w = t.window_at(g.cpu_begin)) w->steps.add(std::max<int64_t>(0, g.cpu_end - g.cpu_begin));
    }
  });
}

// The main pass over one file: one handler per record kind, each adding its record to the file's
// totals (t) and the model's. A record outside the time span counts nowhere; the stack of a
// blocking call is taken first all the same (OpStack precedes its operation).
struct SummaryModel::FileStream {
  SummaryModel& m;
  FileTotals& t;
  const Span& span;
  TraceReader& r;

  // Inlining is left to the compiler here, forced in the GPU-operation handlers and the latency
  // lambda: the fewest instructions per record (cachegrind, bench/summary_trace_gen).
  void record(const Record& rec) {
    switch (rec.type()) {
      case trace::RecType::Kernel: on_kernel(rec); break;
      case trace::RecType::Memcpy: on_memcpy(rec); break;
      case trace::RecType::Memset: on_memset(rec); break;
      case trace::RecType::Sync: on_sync(rec); break;
      case trace::RecType::Module: on_stack(rec); break;
      case trace::RecType::Stack: on_stack(rec); break;
      case trace::RecType::PyCode: on_stack(rec); break;
      case trace::RecType::PyStack: on_stack(rec); break;
      case trace::RecType::OpStack: on_op_stack(rec); break;
      case trace::RecType::Memory: on_memory(rec); break;
      case trace::RecType::Api: on_api(rec); break;
      case trace::RecType::Window: on_window(rec); break;
      case trace::RecType::Range: on_range(rec); break;
      case trace::RecType::Mark: on_mark(rec); break;
      case trace::RecType::CpuSample: on_cpu_sample(rec); break;
      case trace::RecType::GpuSample: on_gpu_sample(rec); break;
      case trace::RecType::CounterDef:
      case trace::RecType::CounterMissing: t.counters.add(rec, r); break;
      case trace::RecType::CounterSample:
        if (span.in(rec.as<trace::CounterSampleRec>().ts)) t.counters.add(rec, r);
        break;
      default: break;
    }
  }

  // A host call: the API table and the error count.
  [[gnu::always_inline]] void host_call(uint16_t api, int32_t result, int64_t cpu_begin, int64_t cpu_end,
                                        uint8_t sync_kind = 0) {
    m.api_errors_ += is_error(result, sync_kind);
    t.api(api).add(cpu_begin, cpu_end);
  }

  [[gnu::always_inline]] void on_kernel(const Record& rec) {
    const auto& k = rec.as<trace::KernelRec>();
    const trace::OpCommon& op = k.op;
    uint32_t stack = trace::is_call(op.flags) ? t.op_stacks.take(op.corr) : 0;
    if (!span.in(op.cpu_begin)) return;
    const bool launch = trace::is_call(op.flags);  // not a graph replay's kernel (its launch counts)
    if (launch) host_call(op.api, op.result, op.cpu_begin, op.cpu_end);
    if (op.flags & trace::kOpCaptured) {
      ++m.captured_;
      return;
    }
    // Launch latency: from a launch call's return to its work's start on the GPU (a graph
    // replay's first kernel: the replay's span), when the start was measured.
    auto latency = [&](int64_t stream_end) __attribute__((always_inline)) {
      if ((op.flags & trace::kOpInferredStart) || !launch || !gpu_timed(op.gpu_start, op.gpu_end)) return;
      int64_t l = sat_sub(op.gpu_start, op.cpu_end);
      m.launch_.add(l);
      if (stream_end <= op.cpu_end) {  // nothing queued ahead on the stream
        m.launch_idle_.add(l);
        t.add_worst(l, k.name_id, op);
      }
    };
    if (!trace::is_gpu_work(op.flags)) {  // a graph launch whose replay's operations follow it
      ++m.graph_launches_expanded_;
      latency(t.last_end(op.stream));
      return;
    }
    m.graph_kernels_ += !launch;
    FileTotals::KSlot& s = t.kslot(k.name_id);
    int64_t gs = op.gpu_start, ge = op.gpu_end;
    s.time.add(gs, ge);
    if (stack) t.py_sites[stack].add(gpu_timed(gs, ge), sat_sub(ge, gs));
    if (t.sampled) s.add_config(k, gs, ge);
    if (!gpu_timed(gs, ge)) {
      t.not_sampled += (op.flags & trace::kOpNotSampled) != 0;
      s.time.pending += (op.flags & trace::kOpPendingExit) != 0;
      m.pending_ops_ += (op.flags & trace::kOpPendingExit) != 0;
      return;
    }
    int64_t d = sat_sub(ge, gs);
    if (d < m.opt_.short_kernel_ns) {
      ++m.short_count_;
      m.short_ns_ = sat_add(m.short_ns_, d);
    }
    int64_t& stream_end = t.last_end(op.stream);
    latency(stream_end);
    t.gpu_op(op, stream_end, s.comm ? GpuWork::Comm : GpuWork::Compute, op.cpu_end);
  }

  [[gnu::always_inline]] void on_memcpy(const Record& rec) {
    const auto& c = rec.as<trace::MemcpyRec>();
    copy_op(c.op, m.memcpy_[c.copy_kind < kCopyKinds ? c.copy_kind : 0], c.bytes, GpuWork::Memcpy);
  }
  [[gnu::always_inline]] void on_memset(const Record& rec) {
    const auto& s = rec.as<trace::MemsetRec>();
    copy_op(s.op, m.memset_, s.bytes, GpuWork::Memset);
  }
  // A memcpy or memset into c. A blocking one (not Async) is a sync call site; its GPU work is
  // ready when the call begins, an async one's when the call returns.
  [[gnu::always_inline]] void copy_op(const trace::OpCommon& op, CopyStat& c, uint64_t bytes, GpuWork work) {
    const bool call = trace::is_call(op.flags);  // not a graph replay's copy or set
    uint32_t stack = call ? t.op_stacks.take(op.corr) : 0;
    if (!span.in(op.cpu_begin)) return;
    if (call) host_call(op.api, op.result, op.cpu_begin, op.cpu_end);
    if (op.flags & trace::kOpCaptured) {
      ++m.captured_;
      return;
    }
    if (call && !(op.flags & trace::kOpAsync)) t.blocked(stack, op.api, op.cpu_begin, op.cpu_end);
    int64_t gs = op.gpu_start, ge = op.gpu_end;
    c.time.add(gs, ge);
    c.bytes += bytes;
    if (!gpu_timed(gs, ge)) {
      t.not_sampled += (op.flags & trace::kOpNotSampled) != 0;
      c.time.pending += (op.flags & trace::kOpPendingExit) != 0;
      m.pending_ops_ += (op.flags & trace::kOpPendingExit) != 0;
      return;
    }
    c.timed_bytes += bytes;
    t.gpu_op(op, t.last_end(op.stream), work, (op.flags & trace::kOpAsync) ? op.cpu_end : op.cpu_begin);
  }

  void on_sync(const Record& rec) {
    const auto& s = rec.as<trace::SyncRec>();
    uint32_t stack = t.op_stacks.take(s.corr);
    if (!span.in(s.cpu_begin)) return;
    if (trace::sync_open(s)) {  // still blocked when the process ended: no duration
      ++m.open_syncs_;
      return;
    }
    host_call(s.api, s.result, s.cpu_begin, s.cpu_end, s.kind);
    m.syncs_[s.kind < kSyncKinds ? s.kind : 0].add(s.cpu_begin, s.cpu_end);
    if (blocking_sync(s.kind)) t.blocked(stack, s.api, s.cpu_begin, s.cpu_end);
  }
  void on_stack(const Record& rec) { t.stacks.absorb(rec, r); }  // Module, Stack, PyCode, PyStack
  void on_op_stack(const Record& rec) { t.link_stack(rec.as<trace::OpStackRec>()); }
  void on_memory(const Record& rec) {
    const auto& a = rec.as<trace::MemoryRec>();
    if (span.in(a.cpu_begin)) host_call(a.api, a.result, a.cpu_begin, a.cpu_end);
  }
  void on_api(const Record& rec) {
    const auto& a = rec.as<trace::ApiRec>();
    if (span.in(a.cpu_begin)) host_call(a.api, a.result, a.cpu_begin, a.cpu_end);
  }
  void on_window(const Record& rec) {
    const auto& w = rec.as<trace::WindowRec>();
    t.window_edge(w, span.in(w.ts));
  }
  void on_range(const Record& rec) {  // the size check matters only to a reader that predates Range
    if (rec.size() >= sizeof(trace::RangeRec) && span.in(rec.as<trace::RangeRec>().cpu_begin)) {
      t.add_range(rec.as<trace::RangeRec>());
    }
  }
  void on_mark(const Record& rec) {
    if (rec.size() >= sizeof(trace::MarkRec) && span.in(rec.as<trace::MarkRec>().ts)) {
      t.add_mark(rec.as<trace::MarkRec>().domain_id, rec.as<trace::MarkRec>().name_id);
    }
  }
  void on_cpu_sample(const Record& rec) {
    const auto& c = rec.as<trace::CpuSampleRec>();
    if (!span.in(c.ts)) return;
    ++t.cpu_samples;
    t.cpu_total += c.total_util;
    t.cpu_process += c.process_util;
    t.cpu_cores = c.ncores;
  }
  void on_gpu_sample(const Record& rec) {
    const auto& g = rec.as<trace::GpuSampleRec>();
    if (!span.in(g.ts)) return;
    NvmlStat& s = t.gpu_sample(g.device);
    ++s.samples;
    s.util_sum += g.util;
    s.mem_util_sum += g.mem_util;
    s.power_mw_sum += g.power_mw;
    uint64_t used = g.mem_used;
    if (used > s.mem_used_max) s.mem_used_max = used;
  }
};

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
        insert_by_rank(files_, file_summary(r, false));
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
  FileStream stream{*this, t, span, r};
  bool ok = r.read([&](const Record& rec) { stream.record(rec); });
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
  insert_by_rank(files_, std::move(f));
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

  // Python call sites: the innermost Python frame outside --python-skip, across files.
  std::vector<std::pair<uint32_t, const PyCallSite*>> py;
  for (const auto& [id, site] : t.py_sites) py.emplace_back(id, &site);
  std::sort(py.begin(), py.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [id, site] : py) {
    std::vector<SymFrame> frames = symbolizer_.stack(t.stacks, id);
    const SymFrame* at = py_call_site(frames, opt_.py_skip);
    if (!at) continue;
    std::string key = at->module + ":" + std::to_string(at->line) + ":" + at->function;
    PyCallSite& g = py_sites_[key];
    if (g.label.empty()) g.label = frame_text(*at), g.file = at->module, g.line = at->line, g.function = at->function;
    g.merge(*site);
  }

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
    worst_.push_back({w.latency, std::string(r.str(w.name_id)), f.rank, f.file, w.corr, w.cpu_end, w.gpu_start});
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
  std::sort(f.nvml.begin(), f.nvml.end(), [](const NvmlStat& a, const NvmlStat& b) { return a.device < b.device; });
  f.cpu_samples = t.cpu_samples;
  f.cpu_cores = t.cpu_cores;
  f.cpu_total_util_sum = t.cpu_total;
  f.not_sampled = t.not_sampled;
  f.cpu_process_util_sum = t.cpu_process;
  f.counters = std::move(t.counters);
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
    f.devices.push_back({d.device, std::string(r.str(d.name_id)), d.cc_major, d.cc_minor, d.sm_count, d.total_mem});
  }
  f.status = r.status();
  f.dropped = std::max(f.status.complete ? f.status.end.dropped : 0, f.status.dropped);
  f.losses = tools::loss_facts(r, f.dropped);
  f.read_error = !read_ok;
  f.exit_status = r.meta_int("exit_status", -1);
  f.gpu_timing = r.meta("gpu_timing");
  f.gpu_sample = meta_gpu_sample(r);
  f.gpu_sample_period_ns = r.meta_int("gpu_sample_period_ns", 0);
  f.flight_seconds = std::atof(std::string(r.meta("flight_seconds")).c_str());
  for (int k = 0;; ++k) {  // "trigger=T begin_ns=B end_ns=E seconds=S ..." (trace/writer.cpp)
    std::string v(r.meta("flight_snapshot." + std::to_string(k)));
    size_t b = v.find(" begin_ns="), sec = v.find(" seconds=");
    if (v.rfind("trigger=", 0) != 0 || b == std::string::npos || sec == std::string::npos) break;
    char line[96];
    snprintf(line, sizeof line, "snapshot %d: the last %.1f s before ", k, std::atof(v.c_str() + sec + 9));
    f.flight_snapshots.push_back(line + v.substr(8, b - 8));
  }
  return f;
}

}  // namespace cutrace
