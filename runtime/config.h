// Settings read once from the environment when the shim loads (cutrace record sets them).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace cutrace {

// End: one completion event per operation, start inferred; Events: a start and an end event;
// Cupti: CUPTI's activity records (the kernels' own timestamps).
enum class GpuTiming { End, Events, None, Cupti };

// What opens and closes capture windows (CUTRACE_CAPTURE_RANGE).
enum class CaptureRange {
  Process,          // the whole process (default)
  CudaProfilerApi,  // cuProfilerStart/Stop (cudaProfilerStart/Stop, cutrace.start()/stop())
  Nvtx,             // NVTX ranges whose name matches CUTRACE_CAPTURE_NVTX, CUTRACE_CAPTURE_STEPS
  Manual,           // only cutrace_capture_start/stop and `cutrace start|stop PID`
};

// Which intercepted calls record their native call stack (CUTRACE_BACKTRACE).
enum class Backtrace : uint8_t {
  None,  // none
  Sync,  // synchronisations (context, stream, event) and blocking copies/memsets (default)
  All,   // those, and every launch, asynchronous copy and memset
};

// Which intercepted calls record the calling thread's Python frames (CUTRACE_PYTHON_STACKS).
enum class PyStacks : uint8_t {
  None,    // none
  Sync,    // where native stacks are taken (blocking syncs and copies by default) (default)
  Launch,  // those, and every launch, copy and memset
};

struct Config {
  std::string out_dir;  // CUTRACE_OUTPUT (default ./cutrace-trace)
  // CUTRACE_GPU_TIMING=auto|cupti|exact|end|events|none. auto (default): CUPTI where libcupti
  // loads and subscribes, else end events. exact: CUPTI for every operation (no sample); where it
  // cannot load, start and end events, with a warning. The trace's `gpu_timing` meta says which
  // source was used.
  GpuTiming timing = GpuTiming::Cupti;
  bool timing_auto = true;
  bool timing_exact = false;
  Backtrace backtrace = Backtrace::Sync;  // CUTRACE_BACKTRACE=none|sync|all
  PyStacks py_stacks = PyStacks::Sync;    // CUTRACE_PYTHON_STACKS=none|sync|launch
  int sample_hz = 10;                     // CUTRACE_SAMPLE_HZ (0 disables the samplers)
  // CUTRACE_CPU_COUNTERS: "" defaults, "none" software counters only, "off" no counters, else
  // names read besides the software counters (collector/cpu_counters.h).
  std::string cpu_counters;
  bool verbose = false;  // CUTRACE_VERBOSE=1
  bool enabled = true;   // CUTRACE_DISABLE=1 turns the shim into a pass-through
  CaptureRange capture = CaptureRange::Process;
  std::string nvtx_glob;  // CUTRACE_CAPTURE_NVTX: name pattern (trace/name_pattern.h) of the trigger ranges
  long steps_first = 0;   // CUTRACE_CAPTURE_STEPS=A-B: the A-th..B-th matching ranges (0-based)
  long steps_last = -1;   // -1: every matching range
  long steps_every = 0;   // CUTRACE_CAPTURE_REPEAT=N: A-B again every N matching ranges (0: once)
  double delay_s = 0;     // CUTRACE_DELAY: capture starts this long after the first CUDA use
  double duration_s = 0;  // CUTRACE_DURATION: and lasts this long (0 = to the end)
  // CUTRACE_GPU_SAMPLE=FRACTION[/PERIOD_MS]: take GPU times only during FRACTION of the time, one
  // window of FRACTION x PERIOD at a random place in each PERIOD (default 200 ms); every call is
  // still recorded. 1 (default): GPU times all the time.
  double gpu_sample = 1;
  // CUTRACE_BUFFER_MB: the most memory the process's records may take while they wait for the
  // collector (runtime/record_buffer.h); past it records are dropped, counted and marked.
  size_t buffer_mb = 256;
  int64_t gpu_sample_period_ns = 200000000;
  // CUTRACE_HANG_TIMEOUT: seconds a GPU operation may stay incomplete, or a thread blocked in a
  // synchronisation, before the collector writes a hang report (0 = no watchdog).
  double hang_timeout_s = 300;
  // CUTRACE_CAPTURE_RANGE=flight:SECONDS: capture as in process mode, but the trace file gets only
  // the last SECONDS, on a trigger (collector/flight.cpp). 0 = off.
  double flight_s = 0;
  // Capture is off at first and something must turn it on: start the collector early.
  bool deferred() const { return capture != CaptureRange::Process || delay_s > 0; }
  // CUTRACE_CAPTURE_RANGE or CUTRACE_DELAY was given: the smprof API may not take windows over.
  bool capture_chosen = false;
};

const Config& config();
void load_config();

// The one check every wrapper makes first: capture on or off.
extern std::atomic<bool> g_capture_on;
inline bool capture_on() { return __builtin_expect(g_capture_on.load(std::memory_order_relaxed), 1); }

// True while the collector decides on and records a GPU clock anchor (an event on its own
// stream), which it does only inside capture windows. An app thread that closes a window waits
// for it to drop (at that edge only, microseconds), so that no anchor reaches the GPU after the
// window closed. Both sides use seq_cst: either the collector sees the window closed, or the
// closing thread sees the anchor in progress.
extern std::atomic<bool> g_gpu_anchoring;

// GPU-timing sample (CUTRACE_GPU_SAMPLE): false while the collector's schedule is between
// windows; always true without sampling. Read (relaxed) by each GPU operation's wrapper.
extern std::atomic<bool> g_gpu_sample_on;
inline bool gpu_sample_on() { return __builtin_expect(g_gpu_sample_on.load(std::memory_order_relaxed), 1); }

// Number of stream captures in progress in the process (graph capture): when non-zero, wrappers
// ask the driver whether their stream is capturing before recording events.
extern std::atomic<int> g_active_captures;

// The smprof API (SMProfiler) took the capture windows over from the default whole-process one
// (shim/capture.cpp capture_by_api): windows are then its start_profiling/stop_profiling pairs.
extern std::atomic<bool> g_windows_by_api;
// Capture is off until something turns it on (a capture range, a delay, or the smprof API).
inline bool capture_deferred() { return config().deferred() || g_windows_by_api.load(std::memory_order_acquire); }

void log_warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace cutrace
