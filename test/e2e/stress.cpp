// Load test: T threads x N launches over 64 streams; with "mixed", NVTX ranges, copies and
// stream syncs too. Prints what it did; capture_checks.py asserts that every launch is in the trace
// or counted as dropped (never a silent loss), and that nothing deadlocks or crashes.
//   stress [threads=32] [launches_per_thread=20000] [mixed]
#include <nvtx3/nvToolsExt.h>
#include <atomic>
#include <thread>
#include <vector>
#include "test/e2e/common.h"

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 32;
  int launches = argc > 2 ? atoi(argv[2]) : 20000;
  bool mixed = argc > 3 && !strcmp(argv[3], "mixed");
  CUcontext ctx = init_primary();
  CUmodule m = load_fake_module("kernel k_stress 1\n");
  CUfunction f = get_function(m, "k_stress");
  std::vector<CUstream> streams(64);
  for (CUstream& s : streams) CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  // Each thread copies into its own 64 bytes: copies on different streams into the same bytes
  // would be a data race of the test program itself (TSan saw one in the fake driver's memmove).
  CUdeviceptr dev;
  CHECK(cuMemAlloc(&dev, size_t(threads) * 64));
  std::atomic<long> made{0}, copies{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      CHECK(cuCtxSetCurrent(ctx));
      char buf[64] = {};
      for (int i = 0; i < launches; ++i) {
        CUstream s = streams[(t * 7 + i) % 64];
        if (mixed && i % 1000 == 0) nvtxRangePushA("chunk");
        CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
        made.fetch_add(1, std::memory_order_relaxed);
        if (mixed && i % 500 == 499) {
          CHECK(cuMemcpyHtoDAsync(dev + CUdeviceptr(t) * 64, buf, sizeof buf, s));
          copies.fetch_add(1, std::memory_order_relaxed);
          CHECK(cuStreamSynchronize(s));
        }
        if (mixed && i % 1000 == 999) nvtxRangePop();
      }
    });
  for (auto& th : ts) th.join();
  CHECK(cuCtxSynchronize());
  printf("launches=%ld copies=%ld\n", made.load(), copies.load());
  return 0;
}
