// Capture windows. Default: 4 launches, cuProfilerStart, 3 launches, cuProfilerStop, 5 launches;
// prints how many events the fake driver saw recorded outside the window (must be 0: outside a
// window the shim adds nothing). --slow: 40 launches 50 ms apart (for `cutrace start|stop PID`).
// --quick-window: the 3 launches without a synchronisation before cuProfilerStop, then 20 ms
// before the 5: the window closes before the collector has seen its launches.
#include <cudaProfiler.h>
#include <unistd.h>
#include "test/e2e/common.h"
#include "test/fake_cuda/fake_cuda_stats.h"

static uint64_t event_records() {
  FakeCudaStats st{};
  fakeCudaGetStats(&st);
  return st.event_records;
}

int main(int argc, char** argv) {
  init_primary();
  CUmodule m = load_fake_module("kernel k_win 10000\n");
  CUfunction f = get_function(m, "k_win");
  auto launch = [&](int n) {
    for (int i = 0; i < n; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
    CHECK(cuCtxSynchronize());
  };
  if (argc > 1 && !strcmp(argv[1], "--slow")) {
    for (int i = 0; i < 40; ++i) launch(1), usleep(50000);
    printf("window_app: OK\n");
    return 0;
  }
  const bool quick = argc > 1 && !strcmp(argv[1], "--quick-window");
  uint64_t before = event_records();
  launch(4);
  uint64_t outside = event_records() - before;
  CHECK(cuProfilerStart());
  if (quick) {
    for (int i = 0; i < 3; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  } else {
    launch(3);
  }
  CHECK(cuProfilerStop());
  before = event_records();
  if (quick) usleep(20000);
  launch(5);
  outside += event_records() - before;
  printf("event_records_outside=%llu\nwindow_app: OK\n", (unsigned long long)outside);
  return 0;
}
