// One rank of a fake data-parallel job, run once per rank (RANK, WORLD_SIZE) on the fake driver.
//   ddp_app STEPS BACKWARD_US PERIOD_US [nccl|no-nccl]
// Every rank runs the same schedule on the true wall clock: step k starts when collective k-1
// ended, and collective k ends at DDP_EPOCH_NS + (k + 1) * PERIOD (CLOCK_REALTIME, the same for
// all ranks; CUTRACE_TEST_REALTIME_SHIFT_NS, the clock_shift interposer's skew of this process's
// wall clock, is taken out); step k > 0 begins 300 us after collective k-1's end. It prints the
// steps that began more than 30 us late and whose collective it launched late (its end then is), and per
// step when it arrived at the collective (us after the step's scheduled start). In step k ("step_<k>"): Forward
// launches k_forward (300 us on the GPU); Backward spins BACKWARD_US on the CPU; then the all-reduce is launched
// (without NCCL: the rank sleeps until the collective's end instead), a kernel
// "ncclDevKernel_AllReduce_Sum_f32_RING_LL" that ends at the collective's end (a module per
// launch gives it the duration left), and the rank synchronises its stream. A rank that arrives
// last has the shortest all-reduce: the others waited for it.
#include <nvtx3/nvToolsExt.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "test/e2e/common.h"

static int64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: ddp_app STEPS BACKWARD_US PERIOD_US [nccl|no-nccl]\n");
    return 2;
  }
  const int steps = atoi(argv[1]);
  const int64_t backward_ns = atoll(argv[2]) * 1000;
  const int64_t period_ns = atoll(argv[3]) * 1000;
  const bool nccl = argc < 5 || std::string(argv[4]) != "no-nccl";
  const char* epoch_env = getenv("DDP_EPOCH_NS");
  const char* shift_env = getenv("CUTRACE_TEST_REALTIME_SHIFT_NS");
  if (!epoch_env) {
    fprintf(stderr, "ddp_app: DDP_EPOCH_NS not set\n");
    return 2;
  }
  const int64_t epoch = atoll(epoch_env);
  // This process's monotonic time of a true wall-clock instant.
  const int64_t real_minus_mono =
      clock_ns(CLOCK_REALTIME) - (shift_env ? atoll(shift_env) : 0) - clock_ns(CLOCK_MONOTONIC);
  auto mono_of = [&](int64_t true_real) { return true_real - real_minus_mono; };

  init_primary();
  CUfunction fwd = get_function(load_fake_module("kernel k_forward 300000\n"), "k_forward");
  CUstream compute, comm;
  CHECK(cuStreamCreate(&compute, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&comm, CU_STREAM_NON_BLOCKING));
  int64_t start = mono_of(epoch);
  for (int64_t now = clock_ns(CLOCK_MONOTONIC); now < start; now = clock_ns(CLOCK_MONOTONIC)) {
    timespec ts{0, long(std::min<int64_t>(start - now, 1000000))};
    nanosleep(&ts, nullptr);
  }
  std::string late_collectives, late_starts;  // steps off the schedule (a loaded machine)
  std::string arrivals;                       // per step: the all-reduce's launch, us after the step's scheduled start
  for (int k = 0; k < steps; ++k) {
    const int64_t end = mono_of(epoch + int64_t(k + 1) * period_ns);
    // Step k starts 300 us after collective k-1 ended, on every rank alike (a spin: a wake-up
    // from the synchronisation's sleep takes as long as the scheduler likes).
    const int64_t begin = k == 0 ? start : mono_of(epoch + int64_t(k) * period_ns) + 300000;
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    while (now < begin) now = clock_ns(CLOCK_MONOTONIC);
    if (now - begin > 30000) late_starts += (late_starts.empty() ? "" : ",") + std::to_string(k);
    nvtxRangePushA(("step_" + std::to_string(k)).c_str());
    nvtxRangePushA("Forward");
    CHECK(cuLaunchKernel(fwd, 64, 1, 1, 256, 1, 1, 0, compute, nullptr, nullptr));
    nvtxRangePop();
    nvtxRangePushA("Backward");
    for (int64_t t0 = clock_ns(CLOCK_MONOTONIC); clock_ns(CLOCK_MONOTONIC) - t0 < backward_ns;) {}
    nvtxRangePop();
    arrivals += (k ? "," : "") + std::to_string((clock_ns(CLOCK_MONOTONIC) - begin) / 1000);
    if (nccl) {
      const int64_t t0 = clock_ns(CLOCK_MONOTONIC);
      int64_t left = end - t0 - 2000;  // the fake's launch latency
      bool off = left < 1000;
      if (off) left = 1000;
      CUmodule m = load_fake_module("kernel ncclDevKernel_AllReduce_Sum_f32_RING_LL " + std::to_string(left) + "\n");
      CUfunction ar = get_function(m, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
      CHECK(cuLaunchKernel(ar, 2, 1, 1, 256, 1, 1, 0, comm, nullptr, nullptr));
      // Descheduled between reading the clock and the launch: the kernel ends that much late.
      off = off || clock_ns(CLOCK_MONOTONIC) - t0 > 60000;
      if (off) late_collectives += (late_collectives.empty() ? "" : ",") + std::to_string(k);
      CHECK(cuStreamSynchronize(comm));
    } else {
      CHECK(cuStreamSynchronize(compute));
      timespec ts{time_t(end / 1000000000), long(end % 1000000000)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {}
    }
    nvtxRangePop();
  }
  printf("ddp_app: OK, late collectives [%s], late starts [%s]\n", late_collectives.c_str(), late_starts.c_str());
  printf("ddp_app: arrivals [%s]\n", arrivals.c_str());
  return 0;
}
