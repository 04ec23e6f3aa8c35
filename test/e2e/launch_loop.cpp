// Call-cost probe for bench/shim_cost.sh and bench/capture_cost.sh: N launches of a 1 ns fake
// kernel on one stream (or, with `sync`, N cuStreamSynchronize calls on an idle stream; with
// `nvtx`, N nvtxRangePushA/nvtxRangePop pairs), made DEPTH frames below main (a deeper
// stack costs more to unwind with --backtrace); prints the host time per call (ns): wall-clock,
// or with LOOP_CLOCK=cpu the calling thread's CPU time (not inflated when a loaded machine
// preempts the thread). No synchronisation inside the timed launch loop.
//   [LOOP_CLOCK=cpu] launch_loop [N] [launch|sync|nvtx] [DEPTH]
#include <nvtx3/nvToolsExt.h>
#include <time.h>
#include <chrono>
#include <cstring>
#include "test/e2e/common.h"

namespace {

bool g_cpu_clock = false;

double now_ns() {
  if (!g_cpu_clock)
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

enum class Probe { Launch, Sync, Nvtx };

double timed_loop(int n, Probe probe, CUfunction f, CUstream s) {
  double t0 = now_ns();
  if (probe == Probe::Nvtx) {
    for (int i = 0; i < n; ++i) {
      nvtxRangePushA("probe");
      nvtxRangePop();
    }
  } else if (probe == Probe::Sync) {
    for (int i = 0; i < n; ++i) CHECK(cuStreamSynchronize(s));
  } else {
    for (int i = 0; i < n; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  }
  return (now_ns() - t0) / n;
}

// One real frame per level (the volatile read after the call forbids a tail call).
__attribute__((noinline)) double at_depth(int depth, int n, Probe probe, CUfunction f, CUstream s) {
  volatile int guard = depth;
  double r = depth > 0 ? at_depth(depth - 1, n, probe, f, s) : timed_loop(n, probe, f, s);
  (void)guard;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  Probe probe = argc > 2 && strcmp(argv[2], "sync") == 0   ? Probe::Sync
                : argc > 2 && strcmp(argv[2], "nvtx") == 0 ? Probe::Nvtx
                                                           : Probe::Launch;
  int depth = argc > 3 ? atoi(argv[3]) : 0;
  const char* clock = getenv("LOOP_CLOCK");
  g_cpu_clock = clock && strcmp(clock, "cpu") == 0;
  init_primary();
  CUmodule m = load_fake_module("kernel k_probe 1\n");
  CUfunction f = get_function(m, "k_probe");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 1000; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  CHECK(cuStreamSynchronize(s));
  at_depth(depth, 1000, probe, f, s);  // warm-up (libunwind's per-thread cache learns the frames)
  CHECK(cuStreamSynchronize(s));
  double ns = at_depth(depth, n, probe, f, s);
  CHECK(cuStreamSynchronize(s));
  printf("%.1f\n", ns);
  return 0;
}
