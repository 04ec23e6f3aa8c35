// Jobs that hang, for the hang watchdog's tests (test/e2e/hang_checks.py), on the fake driver.
//   hang_app kernel [STUCK_NS|inf]
//     Launches k_warm 3 times on a stream and waits for it, then, inside NVTX range "train_step",
//     launches k_stuck (STUCK_NS, default inf: it never ends) from launch_stuck_kernel(); a second
//     thread waits for the stream inside range "wait_for_result", and the main thread too. Prints
//     "hang_app: launched" once both wait; exits when k_stuck ends.
//   hang_app ddp STEPS HANG_STEP      (RANK from the environment)
//     STEPS steps "step_<k>" of a forward kernel on one stream and an all-reduce
//     (ncclDevKernel_AllReduce_Sum_f32_RING_LL, 1 ms) on another, each waited for. At step
//     HANG_STEP, rank 1 never launches the all-reduce: inside range "load_batch" it runs k_prefetch,
//     waits for it, then sleeps for good (a data loader stuck). The other ranks launch it and it never
//     ends (its peer never came): they stay blocked in cuStreamSynchronize. Prints "hang_app: stuck".
// Linked with -rdynamic (Makefile): the collector's report names launch_stuck_kernel via dladdr.
#include <nvtx3/nvToolsExt.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "test/e2e/common.h"

extern "C" __attribute__((noinline)) void launch_stuck_kernel(CUfunction f, CUstream s) {
  CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}

static int run_kernel(const char* stuck) {
  CUcontext ctx = init_primary();
  CUmodule m = load_fake_module(std::string("kernel k_warm 100000\nkernel k_stuck ") + stuck + "\n");
  CUfunction warm = get_function(m, "k_warm"), hang = get_function(m, "k_stuck");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 3; ++i) CHECK(cuLaunchKernel(warm, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  CHECK(cuStreamSynchronize(s));
  nvtxRangePushA("train_step");
  launch_stuck_kernel(hang, s);
  std::atomic<bool> waiting{false};
  std::thread waiter([&] {
    CHECK(cuCtxSetCurrent(ctx));
    nvtxRangePushA("wait_for_result");
    waiting = true;
    CHECK(cuStreamSynchronize(s));
    nvtxRangePop();
  });
  while (!waiting) usleep(1000);
  usleep(20000);  // the waiter is in its synchronisation
  printf("hang_app: launched\n");
  fflush(stdout);
  CHECK(cuStreamSynchronize(s));
  waiter.join();
  nvtxRangePop();
  CHECK(cuStreamDestroy(s));
  printf("hang_app: OK\n");
  return 0;
}

static int run_ddp(int steps, int hang_step) {
  const char* r = getenv("RANK");
  const int rank = r ? atoi(r) : 0;
  init_primary();
  CUmodule m = load_fake_module(
      "kernel k_forward 300000\nkernel k_prefetch 200000\nkernel ncclDevKernel_AllReduce_Sum_f32_RING_LL 1000000\n");
  CUfunction fwd = get_function(m, "k_forward"), prefetch = get_function(m, "k_prefetch");
  CUfunction ar = get_function(m, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  // The same kernel name for the one whose peer never comes (a second module: same name, no end).
  CUmodule stuck_m = load_fake_module("kernel ncclDevKernel_AllReduce_Sum_f32_RING_LL inf\n");
  CUfunction ar_stuck = get_function(stuck_m, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  CUstream compute, comm;
  CHECK(cuStreamCreate(&compute, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&comm, CU_STREAM_NON_BLOCKING));
  for (int k = 0; k < steps; ++k) {
    nvtxRangePushA(("step_" + std::to_string(k)).c_str());
    CHECK(cuLaunchKernel(fwd, 64, 1, 1, 256, 1, 1, 0, compute, nullptr, nullptr));
    CHECK(cuStreamSynchronize(compute));
    if (k == hang_step && rank == 1) {
      nvtxRangePushA("load_batch");
      CHECK(cuLaunchKernel(prefetch, 8, 1, 1, 128, 1, 1, 0, compute, nullptr, nullptr));
      CHECK(cuStreamSynchronize(compute));
      printf("hang_app: stuck\n");
      fflush(stdout);
      for (;;) pause();  // never reaches the all-reduce
    }
    CHECK(cuLaunchKernel(k == hang_step ? ar_stuck : ar, 2, 1, 1, 256, 1, 1, 0, comm, nullptr, nullptr));
    if (k == hang_step) {
      printf("hang_app: stuck\n");
      fflush(stdout);
    }
    CHECK(cuStreamSynchronize(comm));
    nvtxRangePop();
  }
  printf("hang_app: OK\n");
  return 0;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "kernel") return run_kernel(argc > 2 ? argv[2] : "inf");
  if (mode == "ddp" && argc > 3) return run_ddp(atoi(argv[2]), atoi(argv[3]));
  fprintf(stderr, "usage: hang_app kernel [STUCK_NS|inf] | hang_app ddp STEPS HANG_STEP\n");
  return 2;
}
