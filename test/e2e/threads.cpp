// Many threads, shared streams: 8 threads x 2000 launches over 4 streams (thread i uses stream
// i % 4 and kernel k_thread<i % 4>, whose fake duration is 5/10/20/40 us), plus 100 launches per
// thread on its per-thread default stream (k_ptds, 3 us). run.sh checks exact counts per name
// and that the GPU durations match the fake's.
#include <thread>
#include <vector>
#include "test/e2e/common.h"

extern "C" CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, CUstream, void**, void**);

int main(int argc, char** argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 2000;
  CUcontext ctx = init_primary();
  CUmodule m = load_fake_module(
      "kernel k_thread0 5000\nkernel k_thread1 10000\nkernel k_thread2 20000\nkernel k_thread3 40000\n"
      "kernel k_ptds 3000\n");
  CUstream streams[4];
  for (CUstream& s : streams) CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      CHECK(cuCtxSetCurrent(ctx));
      char name[32];
      snprintf(name, sizeof name, "k_thread%d", t % 4);
      CUfunction f = get_function(m, name);
      CUfunction fp = get_function(m, "k_ptds");
      for (int i = 0; i < launches; ++i)
        CHECK(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, streams[t % 4], nullptr, nullptr));
      for (int i = 0; i < 100; ++i) CHECK(cuLaunchKernel_ptsz(fp, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr));
      CHECK(cuStreamSynchronize(streams[t % 4]));
    });
  }
  for (auto& th : threads) th.join();
  CHECK(cuCtxSynchronize());
  printf("threads: OK\n");
  return 0;
}
