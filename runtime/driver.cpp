#include "runtime/driver.h"
#include <dlfcn.h>
#include <mutex>
#include "runtime/config.h"

extern "C" {
__attribute__((visibility("hidden"))) void* ct_real_dlsym = nullptr;

// Also called from the dlsym entry (shim/binding.cpp) before anything is initialised: a library
// loaded ahead of the shim (a sanitizer runtime, a profiler) looks up its RTLD_NEXT symbols from
// its own constructor, before the shim's constructors ran. Hence no sanitizer instrumentation.
__attribute__((visibility("hidden"), used, no_sanitize("address", "thread", "undefined"))) void*
ct_resolve_real_dlsym() {
  void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  __atomic_store_n(&ct_real_dlsym, p, __ATOMIC_RELEASE);
  return p;
}
}

namespace cutrace {

using DlsymFn = void* (*)(void*, const char*);

static DlsymFn resolve_real_dlsym() { return reinterpret_cast<DlsymFn>(ct_resolve_real_dlsym()); }

__attribute__((no_sanitize("address", "thread", "undefined"))) void* real_dlsym(void* handle, const char* name) {
  DlsymFn f = reinterpret_cast<DlsymFn>(__atomic_load_n(&ct_real_dlsym, __ATOMIC_ACQUIRE));
  if (!f) f = resolve_real_dlsym();
  return f ? f(handle, name) : nullptr;
}

void* libcuda_handle() {
  static void* h = [] {
    void* p = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!p) p = dlopen("libcuda.so.1", RTLD_LAZY);
    return p;
  }();
  return h;
}

bool is_own_address(const void* addr) {
  static void* own_base = [] {
    Dl_info info{};
    dladdr(reinterpret_cast<void*>(&libcuda_handle), &info);
    return info.dli_fbase;
  }();
  Dl_info info{};
  return addr && dladdr(addr, &info) && info.dli_fbase == own_base;
}

template <class F>
static void load(void* h, F& slot, const char* name) {
  slot = reinterpret_cast<F>(real_dlsym(h, name));
}

static void resolve(Driver& d) {
  void* h = libcuda_handle();
  if (!h) {
    log_warn("libcuda.so.1 could not be opened: GPU timing disabled");
    return;
  }
  load(h, d.cuCtxGetCurrent, "cuCtxGetCurrent");
  load(h, d.cuCtxSetCurrent, "cuCtxSetCurrent");
  load(h, d.cuCtxGetDevice, "cuCtxGetDevice");
  load(h, d.cuEventCreate, "cuEventCreate");
  load(h, d.cuEventDestroy, "cuEventDestroy_v2");
  load(h, d.cuEventRecord, "cuEventRecord");
  load(h, d.cuEventQuery, "cuEventQuery");
  load(h, d.cuEventSynchronize, "cuEventSynchronize");
  load(h, d.cuEventElapsedTime, "cuEventElapsedTime");
  load(h, d.cuStreamCreate, "cuStreamCreate");
  load(h, d.cuStreamIsCapturing, "cuStreamIsCapturing");
  load(h, d.cuStreamIsCapturing_ptsz, "cuStreamIsCapturing_ptsz");
  load(h, d.cuFuncGetName, "cuFuncGetName");
  load(h, d.cuKernelGetName, "cuKernelGetName");
  load(h, d.cuFuncGetAttribute, "cuFuncGetAttribute");
  load(h, d.cuKernelGetAttribute, "cuKernelGetAttribute");
  load(h, d.cuPointerGetAttribute, "cuPointerGetAttribute");
  load(h, d.cuDeviceGetCount, "cuDeviceGetCount");
  load(h, d.cuDeviceGetName, "cuDeviceGetName");
  load(h, d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  load(h, d.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  load(h, d.cuDeviceGetUuid, "cuDeviceGetUuid");
  load(h, d.cuDriverGetVersion, "cuDriverGetVersion");
  load(h, d.cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
  d.ok = d.cuCtxGetCurrent && d.cuEventCreate && d.cuEventRecord && d.cuEventQuery && d.cuEventElapsedTime &&
         d.cuEventDestroy && d.cuCtxSetCurrent && d.cuStreamCreate;
  if (!d.ok) log_warn("libcuda lacks event entry points: GPU timing disabled");
}

const Driver& driver() {
  static Driver* d = [] {
    Driver* p = new Driver();
    resolve(*p);
    return p;
  }();
  return *d;
}

}  // namespace cutrace
