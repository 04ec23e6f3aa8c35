// Call-stack attribution probe (CUTRACE_BACKTRACE): the GPU is synchronised from two distinct
// named functions and copied back (blocking) from a third, so that the summary's sync call sites
// can be checked by function name. Kernels are launched from a named function as well. The
// `// line:NAME` comments mark the lines whose DWARF source lines the tests check (built with -g).
//   sync_sites [N_ALPHA] [N_BETA] [N_GAMMA]
#include "test/e2e/common.h"

// noinline + the CHECK after each call: every call is a real call from a frame of its own.
__attribute__((noinline)) void launch_site(CUfunction f, CUstream s) {
  CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
}
__attribute__((noinline)) void sync_site_alpha(CUstream s) {
  CHECK(cuStreamSynchronize(s));  // line:alpha_sync
}
__attribute__((noinline)) void sync_site_beta() { CHECK(cuCtxSynchronize()); }
__attribute__((noinline)) void copy_site_gamma(void* host, CUdeviceptr d, size_t n) { CHECK(cuMemcpyDtoH(host, d, n)); }

int main(int argc, char** argv) {
  int na = argc > 1 ? atoi(argv[1]) : 12, nb = argc > 2 ? atoi(argv[2]) : 20, nc = argc > 3 ? atoi(argv[3]) : 5;
  init_primary();
  CUmodule m = load_fake_module("kernel k_long 2000000\nkernel k_short 300000\n");
  CUfunction k_long = get_function(m, "k_long"), k_short = get_function(m, "k_short");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < na; ++i) {
    launch_site(k_long, s);
    sync_site_alpha(s);  // line:alpha_call
  }
  for (int i = 0; i < nb; ++i) {
    launch_site(k_short, s);
    sync_site_beta();
  }
  CUdeviceptr d;
  char host[4096];
  CHECK(cuMemAlloc(&d, sizeof host));
  for (int i = 0; i < nc; ++i) {
    launch_site(k_short, s);
    copy_site_gamma(host, d, sizeof host);
  }
  CHECK(cuMemFree(d));
  printf("sync_sites done\n");
  return 0;
}
