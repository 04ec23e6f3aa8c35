// Launch-cost probe for bench/shim_cost.sh: N launches of a 1 ns fake kernel on one stream,
// prints the host time per launch call (ns). No synchronisation inside the timed loop.
#include <chrono>
#include "test/e2e/common.h"

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  init_primary();
  CUmodule m = load_fake_module("kernel k_probe 1\n");
  CUfunction f = get_function(m, "k_probe");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 1000; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  CHECK(cuStreamSynchronize(s));
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  auto t1 = std::chrono::steady_clock::now();
  CHECK(cuStreamSynchronize(s));
  printf("%.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  return 0;
}
