// NVTX through the injection bridge (NVTX_INJECTION64_PATH, set by `cutrace record`):
//   5 push/pop ranges step_0..step_4, each with 3 launches of k_nvtx (20 us) and a nested
//   "inner" range around the last launch; one domain range "dom_range" in domain "mylib" with a
//   registered string; one start/end range "cross_thread" started here and ended on another
//   thread; 2 marks "checkpoint"; the main thread named "trainer".
// Expected (nvtx_checks.py): step_* count 1 each with GPU projection ~60 us and 3 GPU ops; inner x5
// with ~20 us; dom_range x1 domain mylib; cross_thread x1; marks checkpoint x2.
//   nvtx_app [TAIL_MS]: then launches k_nvtx every 200 us for TAIL_MS ms, outside any step (what
//   a job does after the captured steps).
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cstdlib>
#include <thread>
#include "test/e2e/common.h"

static long long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  long long tail_ms = argc > 1 ? atoll(argv[1]) : 0;
  init_primary();
  CUmodule m = load_fake_module("kernel k_nvtx 20000\n");
  CUfunction f = get_function(m, "k_nvtx");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  nvtxNameOsThreadA(uint32_t(syscall(SYS_gettid)), "trainer");
  nvtxRangeId_t cross = nvtxRangeStartA("cross_thread");
  for (int i = 0; i < 5; ++i) {
    char name[32];
    snprintf(name, sizeof name, "step_%d", i);
    nvtxRangePushA(name);
    for (int k = 0; k < 3; ++k) {
      if (k == 2) nvtxRangePushA("inner");
      CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
      if (k == 2) nvtxRangePop();
    }
    CHECK(cuStreamSynchronize(s));
    nvtxRangePop();
  }
  nvtxMarkA("checkpoint");
  nvtxDomainHandle_t dom = nvtxDomainCreateA("mylib");
  nvtxStringHandle_t str = nvtxDomainRegisterStringA(dom, "dom_range");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xFF00FF00;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = str;
  nvtxDomainRangePushEx(dom, &a);
  CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  CHECK(cuStreamSynchronize(s));
  nvtxDomainRangePop(dom);
  nvtxMarkA("checkpoint");
  std::thread([cross] { nvtxRangeEnd(cross); }).join();
  for (long long t0 = now_ns(); now_ns() - t0 < tail_ms * 1000000;) {
    CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
    usleep(200);
  }
  CHECK(cuStreamSynchronize(s));
  printf("nvtx_app: OK\n");
  return 0;
}
