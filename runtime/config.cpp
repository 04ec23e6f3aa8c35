#include "runtime/config.h"
#include <unistd.h>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "runtime/gpu_sample.h"
#include "runtime/stack_ring.h"

namespace cutrace {

std::atomic<bool> g_capture_on{false};
std::atomic<int> g_active_captures{0};
std::atomic<bool> g_windows_by_api{false};
std::atomic<bool> g_gpu_sample_on{true};
std::atomic<bool> g_gpu_anchoring{false};
Backtrace g_backtrace = Backtrace::Sync;
PyStacks g_py_stacks = PyStacks::Sync;

// Never destroyed: used until the last atexit handler. Initialised ahead of every default-priority
// initialiser and load-time constructor of the library (cutrace_init, shim/init.cpp, reads it).
struct ConfigSlot {
  Config* c = new Config();
};
static ConfigSlot g_config_slot __attribute__((init_priority(101)));

const Config& config() { return *g_config_slot.c; }

static const char* env(const char* name) {
  const char* v = getenv(name);
  return (v && *v) ? v : nullptr;
}

void load_config() {
  Config& c = *g_config_slot.c;
  if (const char* v = env("CUTRACE_OUTPUT")) c.out_dir = v;
  else c.out_dir = "cutrace-trace";
  if (const char* v = env("CUTRACE_GPU_TIMING")) {
    c.timing_auto = false;
    if (!strcmp(v, "exact")) c.timing = GpuTiming::Cupti, c.timing_exact = true;
    else if (!strcmp(v, "events")) c.timing = GpuTiming::Events;
    else if (!strcmp(v, "none")) c.timing = GpuTiming::None;
    else if (!strcmp(v, "cupti")) c.timing = GpuTiming::Cupti;
    else if (!strcmp(v, "end")) c.timing = GpuTiming::End;
    else if (!strcmp(v, "auto")) c.timing_auto = true;
    else {
      log_warn("CUTRACE_GPU_TIMING=%s not understood (auto|cupti|exact|end|events|none); using auto", v);
      c.timing_auto = true;
    }
  }
  if (const char* v = env("CUTRACE_BACKTRACE")) {
    if (!strcmp(v, "none")) c.backtrace = Backtrace::None;
    else if (!strcmp(v, "sync")) c.backtrace = Backtrace::Sync;
    else if (!strcmp(v, "all")) c.backtrace = Backtrace::All;
    else log_warn("CUTRACE_BACKTRACE=%s not understood (none|sync|all); using sync", v);
  }
  if (const char* v = env("CUTRACE_PYTHON_STACKS")) {
    if (!strcmp(v, "none")) c.py_stacks = PyStacks::None;
    else if (!strcmp(v, "sync")) c.py_stacks = PyStacks::Sync;
    else if (!strcmp(v, "launch")) c.py_stacks = PyStacks::Launch;
    else log_warn("CUTRACE_PYTHON_STACKS=%s not understood (none|sync|launch); using sync", v);
  }
  if (const char* v = env("CUTRACE_SAMPLE_HZ")) c.sample_hz = atoi(v) < 0 ? 0 : atoi(v);
  if (c.sample_hz > 1000) c.sample_hz = 1000;
  if (const char* v = env("CUTRACE_CPU_COUNTERS")) c.cpu_counters = v;
  c.verbose = env("CUTRACE_VERBOSE") != nullptr;
  c.enabled = env("CUTRACE_DISABLE") == nullptr;
  if (const char* v = env("CUTRACE_CAPTURE_RANGE")) {
    c.capture_chosen = true;
    if (!strcmp(v, "cudaProfilerApi")) c.capture = CaptureRange::CudaProfilerApi;
    else if (!strcmp(v, "nvtx")) c.capture = CaptureRange::Nvtx;
    else if (!strcmp(v, "manual")) c.capture = CaptureRange::Manual;
    else if (!strncmp(v, "flight:", 7)) {
      char* end = nullptr;
      double s = strtod(v + 7, &end);
      if (end == v + 7 || *end || !(s > 0 && s <= 86400))
        log_warn("CUTRACE_CAPTURE_RANGE=%s: flight:SECONDS needs 0 < SECONDS <= 86400; recording the whole process", v);
      else c.flight_s = s;
    } else if (strcmp(v, "process") != 0)
      log_warn("CUTRACE_CAPTURE_RANGE=%s not understood (process|cudaProfilerApi|nvtx|manual|flight:SECONDS)", v);
  }
  if (const char* v = env("CUTRACE_CAPTURE_NVTX")) c.nvtx_glob = v;
  if (c.capture == CaptureRange::Nvtx && c.nvtx_glob.empty()) c.nvtx_glob = "*";
  if (const char* v = env("CUTRACE_CAPTURE_STEPS")) {
    char* end = nullptr;
    c.steps_first = strtol(v, &end, 10);
    c.steps_last = (end && *end == '-') ? strtol(end + 1, nullptr, 10) : c.steps_first;
  }
  if (const char* v = env("CUTRACE_CAPTURE_REPEAT")) {
    c.steps_every = strtol(v, nullptr, 10);
    if (c.steps_every <= c.steps_last - c.steps_first || c.steps_last < 0) {
      log_warn("CUTRACE_CAPTURE_REPEAT=%s needs CUTRACE_CAPTURE_STEPS=A-B and a period > B-A; capturing A-B once", v);
      c.steps_every = 0;
    }
  }
  if (const char* v = env("CUTRACE_DELAY")) c.delay_s = atof(v), c.capture_chosen = true;
  if (const char* v = env("CUTRACE_DURATION")) c.duration_s = atof(v);
  if (const char* v = env("CUTRACE_GPU_SAMPLE"); v && !parse_gpu_sample(v, &c.gpu_sample, &c.gpu_sample_period_ns))
    log_warn(
        "CUTRACE_GPU_SAMPLE=%s not understood (FRACTION[/PERIOD_MS], 0 < FRACTION <= 1, "
        "10 <= PERIOD_MS <= 3600000); taking every GPU time",
        v);
  if (const char* v = env("CUTRACE_BUFFER_MB")) {
    char* end = nullptr;
    double mb = strtod(v, &end);
    if (end == v || *end || !(mb >= 1 && mb <= 1048576))
      log_warn("CUTRACE_BUFFER_MB=%s not understood (megabytes, 1 to 1048576); using %zu", v, c.buffer_mb);
    else c.buffer_mb = size_t(mb);
  }
  if (const char* v = env("CUTRACE_HANG_TIMEOUT")) {
    char* end = nullptr;
    double t = strtod(v, &end);
    if (end == v || *end || !(t >= 0 && t <= 1e7))
      log_warn("CUTRACE_HANG_TIMEOUT=%s not understood (seconds, 0 = off); using %g", v, c.hang_timeout_s);
    else c.hang_timeout_s = t;
  }
  if (c.timing_exact && c.gpu_sample < 1) {
    log_warn("CUTRACE_GPU_TIMING=exact times every operation: CUTRACE_GPU_SAMPLE ignored");
    c.gpu_sample = 1;
  }
  g_capture_on.store(c.enabled && !c.deferred(), std::memory_order_relaxed);
}

static void vlog(const char* level, const char* fmt, va_list ap) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "cutrace[%d] %s: ", int(getpid()), level);
  if (n < 0) return;
  int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  size_t len = size_t(n) + (m < 0 ? 0 : (size_t(m) < sizeof buf - n - 1 ? size_t(m) : sizeof buf - n - 2));
  buf[len++] = '\n';
  ssize_t w = write(2, buf, len);
  (void)w;
}

void log_warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog("warning", fmt, ap);
  va_end(ap);
}

void log_info(const char* fmt, ...) {
  if (!g_config_slot.c->verbose) return;
  va_list ap;
  va_start(ap, fmt);
  vlog("info", fmt, ap);
  va_end(ap);
}

}  // namespace cutrace
