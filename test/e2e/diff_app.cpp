// A training loop whose shape is set by its arguments, for `cutrace diff` (diff_checks.py):
//   diff_app STEPS GEMM_NAME GEMM_NS EXTRA LOAD_US
// STEPS push/pop ranges step_0.., each with one launch of GEMM_NAME (GEMM_NS ns on the fake
// driver), one of k_fixed (10 us), with EXTRA=1 one of k_extra (5 us), a nested "data_load"
// range that sleeps LOAD_US us, and a stream synchronisation.
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "test/e2e/common.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: diff_app STEPS GEMM_NAME GEMM_NS EXTRA LOAD_US\n");
    return 2;
  }
  int steps = atoi(argv[1]);
  std::string gemm = argv[2];
  long long gemm_ns = atoll(argv[3]);
  bool extra = atoi(argv[4]) != 0;
  useconds_t load_us = useconds_t(atoi(argv[5]));
  init_primary();
  CUmodule m = load_fake_module("kernel " + gemm + " " + std::to_string(gemm_ns) +
                                "\nkernel k_fixed 10000\nkernel k_extra 5000\n");
  CUfunction fg = get_function(m, gemm.c_str());
  CUfunction ff = get_function(m, "k_fixed");
  CUfunction fe = get_function(m, "k_extra");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < steps; ++i) {
    char name[32];
    snprintf(name, sizeof name, "step_%d", i);
    nvtxRangePushA(name);
    CHECK(cuLaunchKernel(fg, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
    CHECK(cuLaunchKernel(ff, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
    if (extra) CHECK(cuLaunchKernel(fe, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
    nvtxRangePushA("data_load");
    usleep(load_us);
    nvtxRangePop();
    CHECK(cuStreamSynchronize(s));
    nvtxRangePop();
  }
  printf("diff_app: OK\n");
  return 0;
}
