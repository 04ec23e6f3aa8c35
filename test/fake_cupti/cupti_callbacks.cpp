// Fake CUPTI: version, the subscriber and its driver-API callbacks, correlation ids, and the
// hooks into the fake driver (fake_cupti.h describes the model).
#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "test/fake_cupti/fake_cupti.h"

namespace fake_cupti {
namespace {

// The one subscriber CUPTI allows; its handle is the address of this storage.
struct Subscriber {
  std::atomic<bool> active{false};
  std::atomic<CUpti_CallbackFunc> callback{nullptr};
  std::atomic<void*> userdata{nullptr};
  std::atomic<bool> driverEnabled[CUPTI_DRIVER_TRACE_CBID_SIZE] = {};
};

Subscriber g_subscriber;
std::atomic<uint32_t> g_lastCorrelation{0};

Subscriber* fromHandle(CUpti_SubscriberHandle handle) {
  Subscriber* s = reinterpret_cast<Subscriber*>(handle);
  return s == &g_subscriber && s->active.load() ? s : nullptr;
}

// FAKE_CUPTI_SILENT_CALLS=name,name,...: driver calls (exported names, e.g. cuMemsetD8Async)
// that get no callback, as a call CUPTI has no callback id for would; their operations still
// get activity records, under a correlation id the client never saw.
bool silent(const char* name) {
  static const EnvNameList silenced("FAKE_CUPTI_SILENT_CALLS");
  return silenced.has(name);
}

// A thread whose call got its API_ENTER callback and not its API_EXIT (the call's callback id was
// switched off in between) is stranded: none of its later calls gets a callback, even once the id
// is on again, while its operations' records still come (as real CUPTI does on the H200).
thread_local bool t_entered = false;
thread_local bool t_stranded = false;  // a finalize does not undo it (its state is the thread's)
std::atomic<uint64_t> g_finalizes{0};
std::atomic<uint64_t> g_armedIdleCalls{0};  // hooked calls while armed with no kind on

// FAKE_CUPTI_REPORT=1: at exit, stderr says when the last driver callback was delivered
// (CLOCK_MONOTONIC ns, the trace's clock) and how many callback ids were still on, so that a
// test can tell whether a client switched its callbacks off.
std::atomic<int64_t> g_lastCallbackNs{0};
struct ExitReport {
  ~ExitReport() {
    if (!getenv("FAKE_CUPTI_REPORT")) return;
    int on = 0;
    for (const auto& enabled : g_subscriber.driverEnabled) on += enabled.load() ? 1 : 0;
    fprintf(stderr, "fake_cupti: last driver callback at %lld ns, %d callback ids on at exit\n",
            (long long)g_lastCallbackNs.load(), on);
    fprintf(stderr, "fake_cupti: %llu finalizes, %llu calls while armed and not collecting\n",
            (unsigned long long)g_finalizes.load(), (unsigned long long)g_armedIdleCalls.load());
  }
} g_exitReport;

void notify(CUpti_ApiCallbackSite site, FakeCudaApiCall* call) {
  Subscriber& s = g_subscriber;
  if (t_stranded) return;
  if (!s.active.load(std::memory_order_acquire) || call->cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE ||
      !s.driverEnabled[call->cbid].load(std::memory_order_acquire) || silent(call->name)) {
    if (site == CUPTI_API_EXIT && t_entered) t_stranded = true;
    t_entered = false;
    return;
  }
  t_entered = site == CUPTI_API_ENTER;
  CUpti_CallbackFunc fn = s.callback.load();
  if (fn == nullptr) return;
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = call->name;
  data.functionReturnValue = site == CUPTI_API_EXIT ? &call->result : nullptr;
  data.correlationData = &call->correlation_data;
  data.correlationId = call->correlation_id;
  fn(s.userdata.load(), CUPTI_CB_DOMAIN_DRIVER_API, call->cbid, &data);
  g_lastCallbackNs.store(nowNs(), std::memory_order_relaxed);
}

}  // namespace

EnvNameList::EnvNameList(const char* var) {
  if (const char* v = getenv(var)) list_ = "," + std::string(v) + ",";
}

bool EnvNameList::has(const char* name) const {
  return !list_.empty() && name && list_.find("," + std::string(name) + ",") != std::string::npos;
}

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

bool installHooks() {
  static const FakeCudaCuptiHooks hooks = {&apiEnter, &apiExit, &gpuOp};
  static const bool installed = [] {
    auto set = reinterpret_cast<FakeCudaSetCuptiHooksFn>(dlsym(RTLD_DEFAULT, "fakeCudaSetCuptiHooks"));
    if (set == nullptr) return false;
    set(&hooks);
    return true;
  }();
  return installed;
}

void finalizeCallbacks() {
  for (auto& enabled : g_subscriber.driverEnabled) enabled.store(false);
  g_subscriber.callback.store(nullptr);
  g_subscriber.active.store(false);
  g_finalizes.fetch_add(1);
}

void apiEnter(FakeCudaApiCall* call) {
  call->correlation_id = g_lastCorrelation.fetch_add(1) + 1;
  if (armedIdle()) g_armedIdleCalls.fetch_add(1, std::memory_order_relaxed);
  notify(CUPTI_API_ENTER, call);
  // FAKE_CUPTI_CALL_US: every hooked call spends this long between its two callbacks (a slow
  // driver), so that a switch of the callbacks is likely to fall inside one.
  static const int64_t spin_ns = [] {
    const char* v = getenv("FAKE_CUPTI_CALL_US");
    return v ? int64_t{atoi(v)} * 1000 : 0;
  }();
  for (int64_t until = spin_ns ? nowNs() + spin_ns : 0; nowNs() < until;) {}
}

void apiExit(FakeCudaApiCall* call) { notify(CUPTI_API_EXIT, call); }

}  // namespace fake_cupti

using fake_cupti::g_subscriber;

FAKE_CUPTI_API CUptiResult cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                          void* userdata) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (!fake_cupti::installHooks()) return CUPTI_ERROR_NOT_INITIALIZED;
  bool expected = false;
  if (!g_subscriber.active.compare_exchange_strong(expected, true)) {
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  g_subscriber.userdata.store(userdata);
  g_subscriber.callback.store(callback);
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber);
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  fake_cupti::Subscriber* s = fake_cupti::fromHandle(subscriber);
  if (s == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  for (auto& enabled : s->driverEnabled) enabled.store(false);
  s->active.store(false);
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                               CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  fake_cupti::Subscriber* s = fake_cupti::fromHandle(subscriber);
  if (s == nullptr || domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return CUPTI_SUCCESS;  // no runtime here: never called
  if (cbid == CUPTI_DRIVER_TRACE_CBID_INVALID || cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  s->driverEnabled[cbid].store(enable != 0);
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiFinalize() {
  fake_cupti::finalizeCallbacks();
  fake_cupti::finalizeActivity();
  return CUPTI_SUCCESS;
}
