// Keeps the virtual GPU busy: ROUNDS rounds of, on each of STREAMS streams, LAUNCHES kernels of
// KERNEL_NS ns each, then a 1 MiB HtoD copy and a 1 MiB memset, all queued without waiting; the
// round ends with a context synchronisation. With the defaults a round queues 200 ms of work per
// stream, so a profiler's periodic work (cutrace flushes CUPTI every 100 ms) sees operations in
// flight. Prints "busy_gpu: OK".
//   busy_gpu [rounds=3] [streams=2] [launches=10] [kernel_ns=20000000]
#include <vector>
#include "test/e2e/common.h"

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 3;
  int nstreams = argc > 2 ? atoi(argv[2]) : 2;
  int launches = argc > 3 ? atoi(argv[3]) : 10;
  long long kernel_ns = argc > 4 ? atoll(argv[4]) : 20000000;
  init_primary();
  CUmodule m = load_fake_module("kernel k_busy " + std::to_string(kernel_ns) + "\n");
  CUfunction f = get_function(m, "k_busy");
  const size_t n = 1 << 20;
  std::vector<unsigned char> host(n, 7);
  std::vector<CUstream> streams(nstreams);
  std::vector<CUdeviceptr> bufs(nstreams);
  for (int i = 0; i < nstreams; ++i) {
    CHECK(cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&bufs[i], n));
  }
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < nstreams; ++i) {
      for (int k = 0; k < launches; ++k) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, streams[i], nullptr, nullptr));
      CHECK(cuMemcpyHtoDAsync(bufs[i], host.data(), n, streams[i]));
      CHECK(cuMemsetD8Async(bufs[i], 0x5a, n, streams[i]));
    }
    CHECK(cuCtxSynchronize());
  }
  for (int i = 0; i < nstreams; ++i) {
    CHECK(cuMemFree(bufs[i]));
    CHECK(cuStreamDestroy(streams[i]));
  }
  printf("busy_gpu: OK\n");
  return 0;
}
