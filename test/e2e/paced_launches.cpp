// A launch-bound job for the GPU-timing sample: for MS milliseconds, one KERNEL_NS kernel every
// GAP_US microseconds on one stream (the host waits between launches, without synchronising),
// and an async 4 MiB memset after every MEMSET_EVERY-th (0: none); then a context
// synchronisation. Prints "paced_launches: <kernels> kernels <memsets> memsets".
//   paced_launches [ms=1200] [kernel_ns=50000] [gap_us=200] [memset_every=10]
#include <time.h>
#include "test/e2e/common.h"

namespace {
long long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
}  // namespace

int main(int argc, char** argv) {
  long long ms = argc > 1 ? atoll(argv[1]) : 1200;
  long long kernel_ns = argc > 2 ? atoll(argv[2]) : 50000;
  long long gap_ns = (argc > 3 ? atof(argv[3]) : 200) * 1000;
  long memset_every = argc > 4 ? atol(argv[4]) : 10;
  init_primary();
  CUmodule m = load_fake_module("kernel k_paced " + std::to_string(kernel_ns) + "\n");
  CUfunction f = get_function(m, "k_paced");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr buf;
  CHECK(cuMemAlloc(&buf, 1 << 22));
  long kernels = 0, memsets = 0;
  long long t0 = now_ns(), next = t0;
  while (now_ns() - t0 < ms * 1000000) {
    CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
    if (++kernels % (memset_every > 0 ? memset_every : 1) == 0 && memset_every > 0) {
      CHECK(cuMemsetD8Async(buf, 0, 1 << 22, s));  // long enough (~50 us on the fake GPU) that its end stands apart
      ++memsets;
    }
    next += gap_ns;
    while (now_ns() < next) {}
  }
  CHECK(cuCtxSynchronize());
  CHECK(cuMemFree(buf));
  printf("paced_launches: %ld kernels %ld memsets\n", kernels, memsets);
  return 0;
}
