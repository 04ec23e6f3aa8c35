// Call-cost probe for bench/shim_cost.sh: N launches of a 1 ns fake kernel on one stream (or, with
// `sync`, N cuStreamSynchronize calls on an idle stream), made DEPTH frames below main (a deeper
// stack costs more to unwind with --backtrace); prints the host time per call (ns). No
// synchronisation inside the timed launch loop.
//   launch_loop [N] [launch|sync] [DEPTH]
#include <chrono>
#include <cstring>
#include "test/e2e/common.h"

namespace {

double timed_loop(int n, bool sync, CUfunction f, CUstream s) {
  auto t0 = std::chrono::steady_clock::now();
  if (sync) {
    for (int i = 0; i < n; ++i) CHECK(cuStreamSynchronize(s));
  } else {
    for (int i = 0; i < n; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

// One real frame per level (the volatile read after the call forbids a tail call).
__attribute__((noinline)) double at_depth(int depth, int n, bool sync, CUfunction f, CUstream s) {
  volatile int guard = depth;
  double r = depth > 0 ? at_depth(depth - 1, n, sync, f, s) : timed_loop(n, sync, f, s);
  (void)guard;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  bool sync = argc > 2 && strcmp(argv[2], "sync") == 0;
  int depth = argc > 3 ? atoi(argv[3]) : 0;
  init_primary();
  CUmodule m = load_fake_module("kernel k_probe 1\n");
  CUfunction f = get_function(m, "k_probe");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 1000; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  CHECK(cuStreamSynchronize(s));
  at_depth(depth, 1000, sync, f, s);  // warm-up (libunwind's per-thread cache learns the frames)
  CHECK(cuStreamSynchronize(s));
  double ns = at_depth(depth, n, sync, f, s);
  CHECK(cuStreamSynchronize(s));
  printf("%.1f\n", ns);
  return 0;
}
