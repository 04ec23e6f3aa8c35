// Copies, memsets, synchronisations and allocations, with the data checked (the profiled
// program must compute exactly what it computes without cutrace). Expected counts (run.sh):
//   HtoD 6 (3 pageable sync, 3 pinned async), DtoH 4, DtoD 2, HtoH 1 (cuMemcpy host->host),
//   memset 5 (D8 x2, D32 x2, D2D8 x1), syncs: context 2, stream 3, event 1, stream_wait 1,
//   allocations: 4 device + 1 pinned host, frees: same.
#include <vector>
#include "test/e2e/common.h"

int main() {
  init_primary();
  const size_t n = 1 << 20;
  std::vector<unsigned char> a(n), b(n, 0);
  for (size_t i = 0; i < n; ++i) a[i] = (unsigned char)(i * 7 + 3);
  CUdeviceptr d1, d2, d3, d4;
  CHECK(cuMemAlloc(&d1, n));
  CHECK(cuMemAlloc(&d2, n));
  CHECK(cuMemAlloc(&d3, n));
  CHECK(cuMemAlloc(&d4, n));
  void* pinned;
  CHECK(cuMemAllocHost(&pinned, n));
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e;
  CHECK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));

  for (int i = 0; i < 3; ++i) CHECK(cuMemcpyHtoD(d1, a.data(), n));  // pageable, sync
  memcpy(pinned, a.data(), n);
  for (int i = 0; i < 3; ++i) CHECK(cuMemcpyHtoDAsync(d2, pinned, n, s));  // pinned, async
  CHECK(cuStreamSynchronize(s));
  CHECK(cuMemcpyDtoD(d3, d1, n));
  CHECK(cuMemcpyDtoDAsync(d4, d2, n, s));
  CHECK(cuEventRecord(e, s));
  CHECK(cuStreamWaitEvent(nullptr, e, 0));
  CHECK(cuEventSynchronize(e));
  CHECK(cuMemcpyDtoH(b.data(), d3, n));
  if (memcmp(a.data(), b.data(), n) != 0) {
    fprintf(stderr, "copies: DtoD/DtoH data mismatch\n");
    return 1;
  }
  CHECK(cuMemcpyDtoHAsync(pinned, d4, n, s));
  CHECK(cuStreamSynchronize(s));
  if (memcmp(a.data(), pinned, n) != 0) {
    fprintf(stderr, "copies: pinned data mismatch\n");
    return 1;
  }
  std::vector<unsigned char> c(n, 0);
  CHECK(cuMemcpy((CUdeviceptr)c.data(), (CUdeviceptr)a.data(), n));  // host -> host, unified
  if (memcmp(a.data(), c.data(), n) != 0) {
    fprintf(stderr, "copies: HtoH mismatch\n");
    return 1;
  }

  CHECK(cuMemsetD8(d1, 0xAB, n));
  CHECK(cuMemsetD8Async(d2, 0xCD, n, s));
  CHECK(cuMemsetD32(d3, 0x01020304u, n / 4));
  CHECK(cuMemsetD32Async(d4, 0x05060708u, n / 4, s));
  CHECK(cuMemsetD2D8(d1, 1024, 0x11, 1024, n / 1024));
  CHECK(cuStreamSynchronize(s));
  CHECK(cuMemcpyDtoH(b.data(), d1, n));
  CHECK(cuMemcpyDtoH(b.data(), d3, 16));
  unsigned want[4] = {0x01020304u, 0x01020304u, 0x01020304u, 0x01020304u};
  if (memcmp(b.data(), want, 16) != 0) {
    fprintf(stderr, "copies: memset mismatch\n");
    return 1;
  }
  CHECK(cuCtxSynchronize());
  CHECK(cuCtxSynchronize());

  CHECK(cuMemFree(d1));
  CHECK(cuMemFree(d2));
  CHECK(cuMemFree(d3));
  CHECK(cuMemFree(d4));
  CHECK(cuMemFreeHost(pinned));
  printf("copies: OK\n");
  return 0;
}
