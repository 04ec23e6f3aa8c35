// Every route by which real stacks reach the driver's launch functions, each launching a kernel
// of its own name a known number of times (checked by run.sh):
//   direct (PLT)            k_direct         x 7   cuLaunchKernel
//   direct per-thread       k_direct_ptsz    x 5   cuLaunchKernel_ptsz
//   dlopen + dlsym          k_dlsym          x 6   dlsym(h, "cuLaunchKernel")
//   dlsym Ex (Triton)       k_dlsym_ex       x 4   dlsym(h, "cuLaunchKernelEx")
//   cuGetProcAddress        k_proc           x 8   cuGetProcAddress_v2("cuLaunchKernel")
//   cuGetProcAddress self   k_proc_self      x 3   ("cuGetProcAddress") -> ("cuLaunchKernel")
//   per-thread via flags    k_proc_ptsz      x 4   flags = PER_THREAD_DEFAULT_STREAM
//   Ex via proc (NCCL)      k_proc_ex        x 9   cuGetProcAddress_v2("cuLaunchKernelEx")
//   cooperative             k_coop           x 2   cuLaunchCooperativeKernel
//   graph replay            "CUDA graph #1"  x 4   cuGraphLaunch (graph of 3 k_in_graph nodes)
#include <dlfcn.h>
#include "test/e2e/common.h"

extern "C" CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, CUstream, void**, void**);

using PFN_launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void**, void**);
using PFN_launch_ex = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using PFN_getproc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

static void launch_n(PFN_launch fn, CUfunction f, CUstream s, int n) {
  for (int i = 0; i < n; ++i) CHECK(fn(f, 2, 1, 1, 128, 1, 1, 0, s, nullptr, nullptr));
}
static void launch_ex_n(PFN_launch_ex fn, CUfunction f, CUstream s, int n) {
  CUlaunchConfig cfg{};
  cfg.gridDimX = 4, cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 256, cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s;
  for (int i = 0; i < n; ++i) CHECK(fn(&cfg, f, nullptr, nullptr));
}

int main() {
  init_primary();
  const char* names[] = {"k_direct",    "k_direct_ptsz", "k_dlsym",   "k_dlsym_ex", "k_proc",
                         "k_proc_self", "k_proc_ptsz",   "k_proc_ex", "k_coop",     "k_in_graph"};
  std::string image;
  for (const char* n : names) image += std::string("kernel ") + n + " 20000\n";
  CUmodule m = load_fake_module(image);
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  launch_n(&cuLaunchKernel, get_function(m, "k_direct"), s, 7);
  launch_n(&cuLaunchKernel_ptsz, get_function(m, "k_direct_ptsz"), nullptr, 5);

  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  auto dl_launch = reinterpret_cast<PFN_launch>(dlsym(h, "cuLaunchKernel"));
  auto dl_launch_ex = reinterpret_cast<PFN_launch_ex>(dlsym(h, "cuLaunchKernelEx"));
  launch_n(dl_launch, get_function(m, "k_dlsym"), s, 6);
  launch_ex_n(dl_launch_ex, get_function(m, "k_dlsym_ex"), s, 4);

  auto getproc = reinterpret_cast<PFN_getproc>(dlsym(h, "cuGetProcAddress_v2"));
  void* p = nullptr;
  CUdriverProcAddressQueryResult st;
  CHECK(getproc("cuLaunchKernel", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
  launch_n(reinterpret_cast<PFN_launch>(p), get_function(m, "k_proc"), s, 8);
  void* self = nullptr;
  CHECK(getproc("cuGetProcAddress", &self, 12000, 0, &st));
  CHECK(reinterpret_cast<PFN_getproc>(self)("cuLaunchKernel", &p, 12000, 0, &st));
  launch_n(reinterpret_cast<PFN_launch>(p), get_function(m, "k_proc_self"), s, 3);
  CHECK(getproc("cuLaunchKernel", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
  // 4, not 2: when the per-thread stream has run dry, the first launch's time starts at the call's
  // return, before the fake's 2 us launch latency, and with 2 launches that alone put the mean at
  // the 5% line (one run under load: 21,240 ns).
  launch_n(reinterpret_cast<PFN_launch>(p), get_function(m, "k_proc_ptsz"), nullptr, 4);
  CHECK(getproc("cuLaunchKernelEx", &p, 12000, 0, &st));
  launch_ex_n(reinterpret_cast<PFN_launch_ex>(p), get_function(m, "k_proc_ex"), s, 9);

  for (int i = 0; i < 2; ++i)
    CHECK(cuLaunchCooperativeKernel(get_function(m, "k_coop"), 1, 1, 1, 32, 1, 1, 0, s, nullptr));

  CUgraph g;
  CHECK(cuGraphCreate(&g, 0));
  CUfunction in_graph = get_function(m, "k_in_graph");
  add_kernel_chain(g, nullptr, {in_graph, in_graph, in_graph}, 1, 32);
  CUgraphExec exec;
  CHECK(cuGraphInstantiate(&exec, g, 0));
  for (int i = 0; i < 4; ++i) CHECK(cuGraphLaunch(exec, s));

  CHECK(cuStreamSynchronize(s));
  CHECK(cuCtxSynchronize());
  printf("routes: OK\n");
  return 0;
}
