// Aggregation behind `cutrace summary`: streams trace files once (twice with --window or
// --step-sync, whose first pass reads only Window/Sync records) and keeps, in memory that does not
// grow with the number of records:
//   - per kernel name, per copy kind, memsets: count, GPU time total/min/max, sum of squares (for
//     the standard deviation) and a log-bucket histogram (for the median and percentiles);
//   - per CUDA API: count and CPU time; per sync kind: count and blocked CPU time;
//   - per NVTX range name: CPU and GPU-projection time distributions; steps (ranges matching
//     --step-pattern, or the intervals between --step-sync synchronisations);
//   - launch latency, short kernels, per device a timeline sweep (tools/analysis/breakdown.h) for the
//     activity distribution and the HTA-style temporal breakdown, NVML and CPU samples;
//   - one line per file (rank) with its own kernel, step and device figures.
// docs/SUMMARY.md defines every figure and every key of the JSON document.
// The statistics types are in tools/analysis/stats.h; the streaming in summary_model.cpp, the
// sorted results in summary_results.cpp, the JSON document in summary_json.cpp.
//
// GPU time is gpu_end - gpu_start, counted only when both are non-zero and end >= start; other
// operations are "untimed". `count` includes untimed operations; mean = total / timed count.
// Operations issued while a stream was capturing a CUDA graph did not run then: they are only
// counted in captured_ops (the graph launch is a Kernel record of kind Graph). A graph launch whose
// replay's operations follow it (flag GraphNode, CUPTI timing) counts as a call (API table, launch
// latency) and in graph_replays; its nodes are the GPU work (kernels, copies, memsets), no calls.
//
// Ranges (Range records) are grouped by (domain, name). CPU time is cpu_end - cpu_begin (never
// negative); the GPU projection gpu_end - gpu_start counts only when both are non-zero and
// end >= start (gpu_count of them); gpu_ops sums the operations launched inside. At most
// kMaxRangeNames distinct (domain, name) pairs and kMaxMarkNames mark names are kept, in the
// order first met; later names are summed under kOtherNames ("(other names)").
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include "tools/analysis/losses.h"

#include <nlohmann/json.hpp>

#include "tools/analysis/breakdown.h"
#include "tools/analysis/counters.h"
#include "tools/analysis/precision.h"
#include "tools/analysis/runs.h"
#include "tools/analysis/stacks.h"
#include "tools/analysis/stats.h"
#include "trace/name_pattern.h"
#include "trace/reader.h"

namespace cutrace {

struct KernelStat {
  std::string name;
  TimeStat time;
  Precision precision = Precision::Other;
  bool comm = false;  // a communication kernel (name starts with "nccl")
  // GPU time of all its launches: the measured total; in a file whose GPU times are a sample
  // (--gpu-sample), an estimate per launch configuration (grid, block): the mean of the
  // configuration's timed launches x its count, the name's mean standing in for a configuration
  // never timed (one name launched with several sizes takes different times).
  int64_t est_ns = 0;
};

struct PrecisionTotal {  // kernels of one inferred precision
  uint64_t names = 0;
  uint64_t count = 0;  // launches
  int64_t total_ns = 0;
};

// One call site that blocked the CPU on the GPU: synchronisations (context, stream, event) and
// blocking (non-Async) copies and memsets that share a symbolised call stack, over all files.
struct SyncSite {
  std::vector<SymFrame> frames;          // innermost first
  CpuTimeStat time;                      // blocked CPU time (cpu_end - cpu_begin)
  std::map<std::string, uint64_t> apis;  // CUDA call -> count
};

// The call site's name: the innermost Python frame outside `py_skip` (py_frame_in_packages),
// else the text ("function (module+0xoffset)") of the innermost frame with a known function
// outside the CUDA runtime and driver libraries (libcudart*, libcuda.so*); else the innermost
// frame's text.
std::string sync_site_label(const SyncSite& s, const std::string& py_skip = kDefaultPySkip);

// Kernels launched from one Python call site (CUTRACE_PYTHON_STACKS=launch or
// CUTRACE_BACKTRACE=all): the innermost Python frame of their stacks outside the skipped packages.
struct PyCallSite {
  std::string label;  // "train.py:87 in step"
  std::string file, function;
  uint32_t line = 0;
  uint64_t count = 0;  // kernels
  uint64_t timed = 0;  // of which with a GPU time
  int64_t gpu_ns = 0;  // their GPU time
  void add(bool is_timed, int64_t ns) {
    ++count;
    if (is_timed) ++timed, gpu_ns += ns;
  }
  void merge(const PyCallSite& o) { count += o.count, timed += o.timed, gpu_ns += o.gpu_ns; }
};
// The innermost Python frame of `frames` outside `py_skip`, nullptr if none.
const SymFrame* py_call_site(const std::vector<SymFrame>& frames, const std::string& py_skip);

struct ApiStat {
  std::string name;
  CpuTimeStat time;
};

struct RangeSummary {
  std::string name;
  std::string domain;  // "" = the default domain
  RangeStat stat;
};

struct LaunchOutlier {
  int64_t latency_ns = 0;
  std::string name;
  int64_t rank = -1;
  std::string file;
  uint64_t corr = 0;
  int64_t cpu_end = 0;
  int64_t gpu_start = 0;
};

struct DeviceInfo {
  uint16_t device = 0;
  std::string name;
  uint16_t cc_major = 0, cc_minor = 0, sm_count = 0;
  uint64_t total_mem = 0;
};

struct NvmlStat {  // GpuSample records of one device
  uint16_t device = 0;
  uint64_t samples = 0;
  uint64_t util_sum = 0;      // percent
  uint64_t mem_util_sum = 0;  // percent
  uint64_t power_mw_sum = 0;
  uint64_t mem_used_max = 0;
  double util_mean() const { return samples ? double(util_sum) / double(samples) : 0; }
  double mem_util_mean() const { return samples ? double(mem_util_sum) / double(samples) : 0; }
  double power_w_mean() const { return samples ? double(power_mw_sum) / 1e3 / double(samples) : 0; }
};

struct DeviceActivity {  // what one device of one file did
  uint16_t device = 0;
  GpuBreakdown timeline;
};

// One capture window of one file (between its Window edges) and what it holds.
struct WindowSummary {
  uint32_t index = 0;  // the window's number in its file (0, 1, 2, ...)
  int64_t begin_ns = 0;
  int64_t end_ns = -1;    // -1: no end edge (the file ends inside the window)
  uint64_t kernels = 0;   // launches (captured ones excluded)
  int64_t kernel_ns = 0;  // GPU time of the timed ones
  Dist steps;             // CPU durations of its steps
};

struct FileSummary {  // one trace file: one process, usually one rank
  std::string file;
  std::string host;
  std::string cmdline;
  int64_t rank = -1;  // -1: not recorded
  int64_t pid = 0;
  int64_t local_rank = -1;
  int64_t world_size = -1;
  std::string version;
  std::vector<DeviceInfo> devices;
  ReadStatus status;
  uint64_t dropped = 0;      // max(End.dropped, sum of Loss/Dropped records)
  tools::LossFacts losses;   // the records this trace is missing, by kind (tools/analysis/losses.h)
  int64_t exit_status = -1;  // the process's exit status (meta exit_status); -1: not recorded
  bool read_error = false;
  std::string gpu_timing;  // meta gpu_timing: cupti, end, exact, none
  // Flight recorder (meta flight_seconds, flight_snapshot.K): the seconds kept (0: not a flight
  // trace) and one line per snapshot, "snapshot K: the last X s before TRIGGER".
  double flight_seconds = 0;
  std::vector<std::string> flight_snapshots;
  double gpu_sample = 1;  // meta gpu_sample: fraction of the time GPU times were taken in
  int64_t gpu_sample_period_ns = 0;
  uint64_t not_sampled = 0;  // GPU operations flagged not_sampled (no GPU time by design)

  // This file's own figures, for the per-rank comparison.
  uint64_t kernels = 0;        // launches (captured ones excluded)
  int64_t kernel_ns = 0;       // GPU time of timed kernels
  int64_t comm_kernel_ns = 0;  // ... of communication kernels
  StepStats steps;
  // Capture windows in the order they opened: the first kMaxWindows, then only counted.
  static constexpr size_t kMaxWindows = 4096;
  std::vector<WindowSummary> windows;
  uint64_t windows_beyond = 0;
  std::vector<DeviceActivity> activity;  // devices with timed GPU work, by device
  std::vector<NvmlStat> nvml;            // devices with GPU samples, by device
  uint64_t cpu_samples = 0;
  uint16_t cpu_cores = 0;
  uint64_t cpu_total_util_sum = 0;    // hundredths of a percent of the host
  uint64_t cpu_process_util_sum = 0;  // hundredths of a percent of one core
  tools::CounterSet counters;         // CPU performance counters (samples inside the time span)
};

struct SummaryOptions {
  std::optional<int64_t> rank;                            // only files whose rank is this one
  std::optional<uint32_t> window;                         // only records inside capture window W (Window records)
  int64_t from_ns = std::numeric_limits<int64_t>::min();  // time span, by cpu_begin (or ts)
  int64_t to_ns = std::numeric_limits<int64_t>::max();
  bool relative = false;  // from_ns and to_ns count from each file's capture start
  std::string step_pattern = "step_[0-9]*|ProfilerStep#[0-9]*";  // globs, '|' between them
  uint8_t step_sync = 0;  // trace::SyncKind: steps between such synchronisations; 0 = ranges
  int64_t short_kernel_ns = 5000;
  std::string py_skip = kDefaultPySkip;  // --python-skip: packages that are not call sites
  size_t timeline_capacity = DeviceTimeline::kDefaultCapacity;
};

class SummaryModel {
 public:
  static constexpr size_t kCopyKinds = 6;          // trace::CopyKind Unknown..PtoP
  static constexpr size_t kSyncKinds = 7;          // 0 (unknown) + trace::SyncKind Context..EventQuery
  static constexpr size_t kMaxRangeNames = 10000;  // distinct (domain, name) pairs kept
  static constexpr size_t kMaxMarkNames = 10000;
  static constexpr size_t kWorstLaunches = 10;
  static constexpr size_t kSyncSites = 10;  // sync call sites listed (text and JSON)
  static constexpr const char* kOtherNames = "(other names)";

  explicit SummaryModel(SummaryOptions o = {}) : opt_(std::move(o)) {}

  // Streams one file into the totals. False on a read error. A file outside --rank is skipped
  // (skipped_files()); so is one without capture window --window (with a note in notes()).
  bool add(TraceReader& r);

  const SummaryOptions& options() const { return opt_; }
  std::vector<KernelStat> kernels() const;                     // sorted by total_ns desc, count desc, name
  std::array<PrecisionTotal, kPrecisions> precisions() const;  // indexed by Precision
  const CopyStat& memcpy_kind(size_t kind) const { return memcpy_[kind]; }
  const CopyStat& memsets() const { return memset_; }
  const SyncStat& sync_kind(size_t kind) const { return syncs_[kind]; }
  // Blocking calls by call stack, sorted by blocked time desc, count desc; and those blocking
  // calls that have no recorded stack (CUTRACE_BACKTRACE=none, or a trace without stacks).
  std::vector<SyncSite> sync_sites() const;
  const CpuTimeStat& sync_unattributed() const { return sync_unattributed_; }
  // Kernels by Python call site, sorted by GPU time desc, count desc, label.
  std::vector<PyCallSite> py_call_sites() const;
  // Modules whose symbols could not be read ("path: why").
  const std::vector<std::string>& symbol_problems() const { return symbolizer_.problems(); }
  std::vector<ApiStat> apis() const;  // sorted by total CPU time desc, count desc, name
  // Sorted by cpu_total_ns desc, count desc, name, domain.
  std::vector<RangeSummary> ranges() const;
  std::vector<std::pair<std::string, uint64_t>> marks() const;  // sorted by count desc, name
  const StepStats& steps() const { return steps_; }
  std::string step_source() const;  // "ranges:<pattern>" or "sync:<kind>"
  const Dist& launch_latency() const { return launch_; }
  const Dist& launch_latency_idle() const { return launch_idle_; }             // stream idle at launch
  const std::vector<LaunchOutlier>& worst_launches() const { return worst_; }  // desc
  uint64_t short_kernels() const { return short_count_; }
  int64_t short_kernel_ns() const { return short_ns_; }
  const std::vector<FileSummary>& files() const { return files_; }  // sorted by rank, file
  GpuBreakdown total_breakdown() const;                             // all devices of all files
  uint64_t dropped_records() const;
  tools::LossFacts losses() const;  // all files' together
  uint64_t api_errors() const { return api_errors_; }
  uint64_t records() const { return records_; }
  uint64_t captured_ops() const { return captured_; }  // issued into a CUDA graph capture
  // GPU operations flagged PendingExit and open synchronisations (threads blocked in one when the
  // process ended): counted here, in no time statistic.
  uint64_t pending_ops() const { return pending_ops_; }
  uint64_t open_syncs() const { return open_syncs_; }
  // Graph launches whose replays' operations the trace holds, and the kernels of those replays.
  uint64_t graph_replays() const { return graph_launches_expanded_; }
  uint64_t graph_kernels() const { return graph_kernels_; }
  uint64_t skipped_files() const { return skipped_; }
  // What the reader should know about the figures: files skipped or sampled, and traces of
  // more than one run (tools/analysis/runs.h).
  std::vector<std::string> notes() const;
  // Some file's GPU times are a sample (--gpu-sample): kernels' est_ns estimate all launches.
  bool sampled() const { return sampled_; }
  // Index into files() of the slowest rank (-1 with fewer than 2 files), and why.
  int slowest_file(std::string* criterion) const;

  // The documented `cutrace summary --json` document.
  nlohmann::ordered_json to_json() const;

 private:
  struct FileTotals;
  struct Span;
  struct FileStream;  // the main pass's handlers, one per record kind
  bool prepass(TraceReader& r, Span* span, std::vector<int64_t>* step_ends);
  bool window_pass(TraceReader& r, FileTotals& t, const Span& span);
  void merge_file(const TraceReader& r, FileTotals& t, FileSummary& f);
  FileSummary file_summary(const TraceReader& r, bool read_ok) const;

  struct RangeKey {
    std::string domain, name;
    bool operator==(const RangeKey& o) const { return domain == o.domain && name == o.name; }
  };
  struct RangeKeyHash {
    size_t operator()(const RangeKey& k) const {
      return std::hash<std::string>()(k.name) * 31 + std::hash<std::string>()(k.domain);
    }
  };
  struct KernelEntry {
    TimeStat time;
    bool comm = false;
    int64_t est_ns = 0;  // KernelStat::est_ns
  };

  SummaryOptions opt_;
  std::unordered_map<std::string, KernelEntry> kernels_;
  std::unordered_map<std::string, CpuTimeStat> apis_;
  std::unordered_map<RangeKey, RangeStat, RangeKeyHash> ranges_;  // kOtherNames included
  std::unordered_map<std::string, uint64_t> marks_;
  std::array<CopyStat, kCopyKinds> memcpy_{};
  CopyStat memset_;
  std::array<SyncStat, kSyncKinds> syncs_{};
  std::unordered_map<std::string, SyncSite> sync_sites_;  // by the frames' text
  CpuTimeStat sync_unattributed_;
  std::unordered_map<std::string, PyCallSite> py_sites_;  // by file:line:function
  Symbolizer symbolizer_;
  StepStats steps_;
  Dist launch_, launch_idle_;
  std::vector<LaunchOutlier> worst_;
  uint64_t short_count_ = 0;
  int64_t short_ns_ = 0;
  std::vector<FileSummary> files_;
  std::vector<std::string> notes_;
  std::vector<runs::Trace> traces_;  // every file added (not skipped), for runs::mixed_runs
  bool sampled_ = false;
  uint64_t api_errors_ = 0;
  uint64_t records_ = 0;
  uint64_t captured_ = 0;
  uint64_t pending_ops_ = 0, open_syncs_ = 0;
  uint64_t graph_launches_expanded_ = 0, graph_kernels_ = 0;
  uint64_t skipped_ = 0;
};

// `unreadable` of `summary --json`: [{"file", "reason"}] for each file of the set that did not open.
nlohmann::ordered_json unreadable_json(const TraceSet& set);

}  // namespace cutrace
