// The hot-path rules under the shim: N launches (and N NVTX push/pop pairs) on one thread after a
// warm-up, counting the calls this thread makes to malloc/calloc/realloc/free/memalign (this
// program defines them, exported with -rdynamic, so they take the calls of every library in the
// process). Around each loop it calls getppid(), a marker that `strace -f` shows, so that
// capture_checks.py can count the thread's system calls inside the loops.
// Prints "hot_path: launches <N> mallocs <A> nvtx <N> mallocs <B> tid <TID>".
//   hot_path [N=100000]
#include <malloc.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

static void marker() { (void)access("/cutrace-hot-path-marker", F_OK); }
#include "test/e2e/common.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
void* __libc_memalign(size_t, size_t);
}

static __thread long t_allocs __attribute__((tls_model("initial-exec"))) = 0;

extern "C" {
void* malloc(size_t n) { return ++t_allocs, __libc_malloc(n); }
void* calloc(size_t a, size_t b) { return ++t_allocs, __libc_calloc(a, b); }
void* realloc(void* p, size_t n) { return ++t_allocs, __libc_realloc(p, n); }
void free(void* p) {
  if (p) ++t_allocs;
  __libc_free(p);
}
void* memalign(size_t a, size_t n) { return ++t_allocs, __libc_memalign(a, n); }
void* aligned_alloc(size_t a, size_t n) { return ++t_allocs, __libc_memalign(a, n); }
int posix_memalign(void** out, size_t a, size_t n) {
  ++t_allocs;
  *out = __libc_memalign(a, n);
  return *out ? 0 : 12;
}
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  init_primary();
  CUmodule m = load_fake_module("kernel k_hot 1\n");
  CUfunction f = get_function(m, "k_hot");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 1000; ++i) {  // warm-up: the shim's thread state, the first chunk, the stream
    CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
    nvtxRangePushA("warm");
    nvtxRangePop();
  }
  CHECK(cuStreamSynchronize(s));
  marker();
  long a0 = t_allocs;
  for (long i = 0; i < n; ++i) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  long launch_allocs = t_allocs - a0;
  marker();
  long a1 = t_allocs;
  for (long i = 0; i < n; ++i) {
    nvtxRangePushA("hot");
    nvtxRangePop();
  }
  long nvtx_allocs = t_allocs - a1;
  marker();
  CHECK(cuStreamSynchronize(s));
  printf("hot_path: launches %ld mallocs %ld nvtx %ld mallocs %ld tid %ld\n", n, launch_allocs, n, nvtx_allocs,
         long(syscall(SYS_gettid)));
  return 0;
}
