// Drives the NVTX entry points a tool can receive, for test/e2e/nvtx_checks.py, which runs it once
// under the oracle injection (test/nvtx_oracle) and once under `cutrace record` and compares:
//   - calls before cuInit, a pop without a push, an end with a bogus id;
//   - the C API, A and W: push/pop, start/end (ended on another thread), marks, thread names,
//     domains, registered strings, category names, Ex attributes with ASCII, UNICODE and
//     registered messages, colours and categories;
//   - push A (default domain), push B (domain "second"), pop A, pop B; a pop on an empty domain
//     while the default domain has a range open;
//   - ranges nested 200 deep, round-robin over 3 domains, popped domain by domain;
//   - the NVTX3 C++ API: scoped_range_in, registered_string_in, named_category_in, rgb, payload;
//   - payloads of every scalar type (extremes; 32-bit ones over a union holding other bits) on
//     push/pop, start/end, domain ranges and marks, and one of an unknown type (no payload);
//   - a thread that never uses CUDA; NULL and empty names, a 100 KB name, invalid UTF-8;
//   - CUDA resource names, driver and runtime API, A and W: streams (both launch work), a
//     device, a context, events;
//   - a sync-user object (create, acquire start/failed/success, releasing, destroy) and a
//     resource (nvtxDomainResourceCreate/Destroy), named by ASCII and registered messages;
//   - a push and a start left open at exit.
// Every range name is unique (the checks match ranges by name); sleeps make the durations differ
// by milliseconds where a wrong pairing would swap them.
#include <nvtx3/nvToolsExtCuda.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <nvtx3/nvToolsExtSync.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <chrono>
#include <cstring>
#include <nvtx3/nvtx3.hpp>
#include <string>
#include <thread>
#include "test/e2e/common.h"

namespace {
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
uint32_t gettid_() { return uint32_t(syscall(SYS_gettid)); }
nvtxEventAttributes_t attrs(uint32_t color, uint32_t category) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  if (color) a.colorType = NVTX_COLOR_ARGB, a.color = color;
  a.category = category;
  return a;
}
struct cpp_domain {
  static constexpr const char* name{"cpp"};
};
struct cpp_phase {
  static constexpr const char* message{"cpp_registered"};
};
struct cpp_category {
  static constexpr const char* name{"cpp_category"};
  static constexpr uint32_t id{7};
};
}  // namespace

int main() {
  // Before cuInit: a pop and an end with nothing open, then a range and a mark.
  nvtxRangePop();
  nvtxRangeEnd(987654321);
  nvtxRangePushA("before_init");
  nvtxMarkA("before_init_mark");
  nvtxRangePop();
  init_primary();
  CUmodule m = load_fake_module("kernel k_spec 20000\n");
  CUfunction f = get_function(m, "k_spec");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  nvtxNameOsThreadA(gettid_(), "spec_main");
  // CUDA resource names: two streams that both get a kernel, a device, the context, two events.
  CUstream s2;
  CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CUcontext ctx;
  CHECK(cuCtxGetCurrent(&ctx));
  CUevent ev1, ev2;
  CHECK(cuEventCreate(&ev1, 0));
  CHECK(cuEventCreate(&ev2, 0));
  nvtxNameCuStreamA(s, "dataloader");
  nvtxNameCudaStreamW(s2, L"copy_\u00e9");
  nvtxNameCuDeviceA(0, "gpu_zero");
  nvtxNameCudaDeviceW(1, L"gpu_one");
  nvtxNameCuContextW(ctx, L"main_ctx");
  nvtxNameCuEventA(ev1, "ev_a");
  nvtxNameCudaEventW(ev2, L"ev_w");
  CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s2, nullptr, nullptr));
  nvtxDomainHandle_t second = nvtxDomainCreateA("second");
  nvtxDomainHandle_t wide = nvtxDomainCreateW(L"wide_dom\u00e9");
  nvtxNameCategoryA(1, "cat_one");
  nvtxNameCategoryW(2, L"cat_two_\u4e8c");
  nvtxDomainNameCategoryA(second, 3, "second_cat");
  nvtxDomainNameCategoryW(wide, 4, L"wide_cat");

  // Wide entry points; the pop of a PushW ends it, not the enclosing range.
  nvtxRangePushA("outer_a");
  sleep_ms(2);
  nvtxRangePushW(L"inner_w_\u00fc");
  sleep_ms(4);
  nvtxRangePop();
  sleep_ms(1);
  nvtxRangePop();
  nvtxRangeId_t sw = nvtxRangeStartW(L"start_w");
  nvtxMarkW(L"mark_w_\u2713");
  nvtxRangeEnd(sw);
  nvtxStringHandle_t reg_w = nvtxDomainRegisterStringW(wide, L"registered_w");
  nvtxEventAttributes_t a = attrs(0xFF112233, 4);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED, a.message.registered = reg_w;
  nvtxDomainRangePushEx(wide, &a);
  CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  nvtxDomainRangePop(wide);
  a = attrs(0xFF00FF00, 2);
  a.messageType = NVTX_MESSAGE_TYPE_UNICODE, a.message.unicode = L"unicode_ex_\u00e5";
  nvtxRangePushEx(&a);
  nvtxMarkEx(&a);
  nvtxRangePop();
  a = attrs(0xFF0000FF, 3);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII, a.message.ascii = "second_mark";
  nvtxDomainMarkEx(second, &a);

  // Push A, push B (domain second), pop A, pop B: A lasts about 9 ms, B about 8 ms.
  nvtxRangePushA("A");
  sleep_ms(6);
  nvtxEventAttributes_t b = attrs(0, 0);
  b.messageType = NVTX_MESSAGE_TYPE_ASCII, b.message.ascii = "B";
  nvtxDomainRangePushEx(second, &b);
  sleep_ms(3);
  nvtxRangePop();
  sleep_ms(5);
  nvtxDomainRangePop(second);
  // A pop on an empty domain does not end the default domain's range.
  nvtxRangePushA("survives_empty_pop");
  nvtxDomainRangePop(second);
  sleep_ms(4);
  nvtxRangePop();

  // 200 deep, round-robin over the default domain, second and wide; popped domain by domain.
  nvtxDomainHandle_t doms[3] = {nullptr, second, wide};
  for (int i = 0; i < 200; ++i) {
    std::string name = "deep_" + std::to_string(i);
    nvtxEventAttributes_t e = attrs(0xFF000000u | uint32_t(i), uint32_t(i % 5));
    e.messageType = NVTX_MESSAGE_TYPE_ASCII, e.message.ascii = name.c_str();
    if (i % 3 == 0) nvtxRangePushEx(&e);
    else nvtxDomainRangePushEx(doms[i % 3], &e);
    if (i % 50 == 0) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  }
  for (int d : {2, 0, 1})
    for (int i = 199; i >= 0; --i)
      if (i % 3 == d) {
        if (d == 0) nvtxRangePop();
        else nvtxDomainRangePop(doms[d]);
        if (i % 40 == d) sleep_ms(1);
      }

  // Payloads of every scalar type. The 32-bit ones are written over a union whose high bytes hold
  // other bits, which must not show.
  {
    auto with = [](const char* name, int type, uint64_t bits) {
      nvtxEventAttributes_t e = attrs(0, 0);
      e.messageType = NVTX_MESSAGE_TYPE_ASCII, e.message.ascii = name;
      e.payloadType = type;
      e.payload.ullValue = bits;
      return e;
    };
    auto low = [](uint32_t v) { return 0xDEADBEEF00000000ull | v; };
    auto f32 = [](float f) {
      uint32_t u;
      memcpy(&u, &f, sizeof u);
      return u;
    };
    auto f64 = [](double d) {
      uint64_t u;
      memcpy(&u, &d, sizeof u);
      return u;
    };
    nvtxEventAttributes_t e = with("pl_u64", NVTX_PAYLOAD_TYPE_UNSIGNED_INT64, ~0ull);
    nvtxRangePushEx(&e);
    nvtxRangePop();
    e = with("pl_i64", NVTX_PAYLOAD_TYPE_INT64, 1ull << 63);
    nvtxRangeEnd(nvtxRangeStartEx(&e));
    e = with("pl_f64", NVTX_PAYLOAD_TYPE_DOUBLE, f64(0.1));
    nvtxDomainRangePushEx(second, &e);
    nvtxDomainRangePop(second);
    e = with("pl_u32", NVTX_PAYLOAD_TYPE_UNSIGNED_INT32, low(0xFFFFFFFFu));
    nvtxRangePushEx(&e);
    nvtxRangePop();
    e = with("pl_i32", NVTX_PAYLOAD_TYPE_INT32, low(0x80000000u));
    nvtxDomainRangeEnd(wide, nvtxDomainRangeStartEx(wide, &e));
    e = with("pl_f32", NVTX_PAYLOAD_TYPE_FLOAT, low(f32(3.14159274f)));
    nvtxRangePushEx(&e);
    nvtxRangePop();
    e = with("pl_unknown_type", 99, 5);
    nvtxRangePushEx(&e);
    nvtxRangePop();
    e = with("plm_u64", NVTX_PAYLOAD_TYPE_UNSIGNED_INT64, (1ull << 63) | 5);
    nvtxMarkEx(&e);
    e = with("plm_i64", NVTX_PAYLOAD_TYPE_INT64, ~0ull);
    nvtxDomainMarkEx(second, &e);
    e = with("plm_f64", NVTX_PAYLOAD_TYPE_DOUBLE, f64(-1.5e-300));
    nvtxMarkEx(&e);
    e = with("plm_u32", NVTX_PAYLOAD_TYPE_UNSIGNED_INT32, low(7));
    nvtxMarkEx(&e);
    e = with("plm_i32", NVTX_PAYLOAD_TYPE_INT32, low(uint32_t(-7)));
    nvtxMarkEx(&e);
    e = with("plm_f32", NVTX_PAYLOAD_TYPE_FLOAT, low(f32(1e-45f)));
    nvtxMarkEx(&e);
    e = attrs(0xFF445566, 1);  // a payload next to a colour, a category and a wide message
    e.messageType = NVTX_MESSAGE_TYPE_UNICODE, e.message.unicode = L"pl_wide_\u00e9";
    e.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE, e.payload.dValue = -2.5;
    nvtxRangePushEx(&e);
    nvtxMarkEx(&e);
    nvtxRangePop();
  }

  // A sync-user object in domain "second" and a resource in the default domain.
  {
    nvtxSyncUserAttributes_t sa{};
    sa.version = NVTX_VERSION, sa.size = NVTX_SYNCUSER_ATTRIB_STRUCT_SIZE;
    sa.messageType = NVTX_MESSAGE_TYPE_ASCII, sa.message.ascii = "queue_lock";
    nvtxSyncUser_t u = nvtxDomainSyncUserCreate(second, &sa);
    nvtxDomainSyncUserAcquireStart(u);
    nvtxDomainSyncUserAcquireFailed(u);
    nvtxDomainSyncUserAcquireStart(u);
    nvtxDomainSyncUserAcquireSuccess(u);
    nvtxDomainSyncUserReleasing(u);
    nvtxDomainSyncUserDestroy(u);
    nvtxResourceAttributes_t ra{};  // a handle, not a pointer: the same in both runs
    ra.version = NVTX_VERSION, ra.size = NVTX_RESOURCE_ATTRIB_STRUCT_SIZE;
    ra.identifierType = NVTX_RESOURCE_TYPE_GENERIC_HANDLE, ra.identifier.ullValue = 4242;
    ra.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    ra.message.registered = nvtxDomainRegisterStringA(nullptr, "staging_buffer");
    nvtxResourceHandle_t rh = nvtxDomainResourceCreate(nullptr, &ra);
    nvtxDomainResourceDestroy(rh);
  }

  // NVTX3 C++ API.
  {
    auto& reg = nvtx3::registered_string_in<cpp_domain>::get<cpp_phase>();
    auto& cat = nvtx3::named_category_in<cpp_domain>::get<cpp_category>();
    nvtx3::scoped_range_in<cpp_domain> r{reg, cat, nvtx3::rgb{10, 20, 30}, nvtx3::payload{42}};
    nvtx3::scoped_range_in<cpp_domain> inner{"cpp_inner"};
    nvtx3::mark_in<cpp_domain>("cpp_mark");
    sleep_ms(1);
  }

  // Start here, end on a thread that never uses CUDA, which also pushes, marks and names itself.
  nvtxRangeId_t cross = nvtxRangeStartA("cross_thread");
  std::thread t([cross] {
    nvtxNameOsThreadW(gettid_(), L"helper_\u00df");
    nvtxRangePushA("helper_push");
    nvtxMarkA("helper_mark");
    sleep_ms(2);
    nvtxRangePop();
    nvtxRangeEnd(cross);
  });
  t.join();

  // NULL and empty names, a 100 KB name, invalid UTF-8.
  nvtxRangePushA(nullptr);
  nvtxRangePop();
  nvtxRangePushA("");
  nvtxRangePop();
  nvtxMarkA(nullptr);
  nvtxRangePushW(nullptr);
  nvtxRangePop();
  std::string big(100 * 1024, 'x');
  for (size_t i = 0; i < big.size(); i += 97) big[i] = 'y';
  nvtxRangePushA(big.c_str());
  nvtxRangePop();
  nvtxRangePushA("bad_utf8_\xff\xc3(");
  nvtxRangePop();
  nvtxRangeEnd(0);
  nvtxRangeEnd(~0ull);

  CHECK(cuStreamSynchronize(s));
  // Left open at exit.
  nvtxRangePushA("open_at_exit");
  nvtxRangeStartA("started_open_at_exit");
  sleep_ms(1);
  printf("nvtx_spec: OK\n");
  return 0;
}
