// Names that try to break out of HTML, JS strings and JSON, for the escaping tests of
// `cutrace serve` and `cutrace report` (serve_checks.py, the browser tests): kernels (the
// fake driver's module text allows no whitespace in a name), NVTX ranges, a mark, a domain and
// the thread name, including a byte sequence that is not UTF-8. Prints the names it used.
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "test/e2e/common.h"

static const char* const kKernels[] = {
    "<img/src=x/onerror=alert(1)>",
    "</script><script>alert(2)</script>",
    "\"quoted'\\name`${alert(3)}`",
};
static const char* const kRanges[] = {
    "<img src=x onerror=alert(4)>",
    "</script><svg onload=alert(5)>",
    "line\nbreak \"\\u2028\xe2\x80\xa8 & &amp; {{x}}",
    "bad utf8 \xff\xfe end",
};

int main() {
  init_primary();
  std::string module;
  for (const char* k : kKernels) module += std::string("kernel ") + k + " 20000\n";
  CUmodule m = load_fake_module(module);
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  nvtxNameOsThreadA(uint32_t(syscall(SYS_gettid)), "<b onmouseover=alert(6)>thread</b>");
  for (const char* r : kRanges) {
    nvtxRangePushA(r);
    for (const char* k : kKernels) {
      CHECK(cuLaunchKernel(get_function(m, k), 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
    }
    CHECK(cuStreamSynchronize(s));
    nvtxRangePop();
  }
  nvtxMarkA("<iframe src=javascript:alert(7)>");
  nvtxDomainHandle_t dom = nvtxDomainCreateA("<style>*{display:none}</style>");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "domain range <a href=javascript:alert(8)>x</a>";
  nvtxDomainRangePushEx(dom, &a);
  CHECK(cuLaunchKernel(get_function(m, kKernels[0]), 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  CHECK(cuStreamSynchronize(s));
  nvtxDomainRangePop(dom);
  printf("hostile_names: OK\n");
  return 0;
}
