/* The shim's own cost per annotation call, without Python: cutrace's C API (cutrace_api.h) and
 * NVTX's C API (push/pop by name, and with attributes carrying a u64 payload) called in a loop
 * under `cutrace record` (bench/annotate_cost.py builds and runs it when a C compiler is present;
 * NVTX's header from $CUDA_HOME/include). Initialises CUDA (libcuda.so.1) so that the shim records; resolves the API
 * with dlsym, so it also runs (and says so) without the shim. Prints the median of 200 bursts of 200 calls, each burst
 * followed by a 2 ms pause so that the collector drains the thread's ring. */
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { kBurst = 200, kBursts = 200 };

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static double median(double* v) {
  qsort(v, kBursts, sizeof *v, cmp);
  return v[kBursts / 2];
}

int main(void) {
  void* cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cu) return printf("C API: no CUDA driver\n"), 0;
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(cu, "cuInit");
  int (*get)(int*, int) = (int (*)(int*, int))dlsym(cu, "cuDeviceGet");
  int (*retain)(void**, int) = (int (*)(void**, int))dlsym(cu, "cuDevicePrimaryCtxRetain");
  int (*set)(void*) = (int (*)(void*))dlsym(cu, "cuCtxSetCurrent");
  int dev;
  void* ctx;
  if (init(0) || get(&dev, 0) || retain(&ctx, dev) || set(ctx)) return printf("C API: CUDA init failed\n"), 0;

  void (*push)(const char*) = (void (*)(const char*))dlsym(RTLD_DEFAULT, "cutrace_range_push");
  void (*pop)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "cutrace_range_pop");
  uint64_t (*start)(const char*) = (uint64_t(*)(const char*))dlsym(RTLD_DEFAULT, "cutrace_range_start");
  void (*end)(uint64_t) = (void (*)(uint64_t))dlsym(RTLD_DEFAULT, "cutrace_range_end");
  void (*mark)(const char*) = (void (*)(const char*))dlsym(RTLD_DEFAULT, "cutrace_mark");
  if (!push || !pop || !start || !end || !mark) return printf("C API: shim not loaded\n"), 0;

  static double pp[kBursts], se[kBursts], mk[kBursts], np[kBursts], nx[kBursts], nm[kBursts];
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION, a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII, a.message.ascii = "step";
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64, a.payload.ullValue = 7;
  for (int r = 0; r < kBursts; ++r) {
    double t0 = now_ns();
    for (int i = 0; i < kBurst; ++i) push("step"), pop();
    double t1 = now_ns();
    for (int i = 0; i < kBurst; ++i) end(start("io"));
    double t2 = now_ns();
    for (int i = 0; i < kBurst; ++i) mark("m");
    double t3 = now_ns();
    for (int i = 0; i < kBurst; ++i) nvtxRangePushA("step"), nvtxRangePop();
    double t4 = now_ns();
    for (int i = 0; i < kBurst; ++i) nvtxRangePushEx(&a), nvtxRangePop();
    double t5 = now_ns();
    for (int i = 0; i < kBurst; ++i) nvtxMarkEx(&a);
    double t6 = now_ns();
    pp[r] = (t1 - t0) / kBurst, se[r] = (t2 - t1) / kBurst, mk[r] = (t3 - t2) / kBurst;
    np[r] = (t4 - t3) / kBurst, nx[r] = (t5 - t4) / kBurst, nm[r] = (t6 - t5) / kBurst;
    usleep(2000);
  }
  printf("C API under the shim, ns per call: push+pop %.0f, start+end %.0f, mark %.0f\n", median(pp), median(se),
         median(mk));
  printf(
      "NVTX under the shim, ns per call: nvtxRangePushA+Pop %.0f, nvtxRangePushEx(u64 payload)+Pop %.0f, "
      "nvtxMarkEx(u64 payload) %.0f\n",
      median(np), median(nx), median(nm));
  return 0;
}
