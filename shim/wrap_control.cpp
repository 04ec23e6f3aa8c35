// cuGetProcAddress (how cudart, cuBLAS, cuDNN and NCCL reach every driver function), and the
// lifecycle calls before which pending records must be resolved (context teardown, unload).
#include "collector/collector.h"
#include "shim/capture.h"
#include "shim/op.h"

namespace cutrace {
namespace {

using PFN_getproc_v2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
CUresult getproc_v2(const Binding& b, const char* sym, void** pfn, int ver, cuuint64_t flags,
                    CUdriverProcAddressQueryResult* status) {
  CUresult r = b.fn<PFN_getproc_v2>()(sym, pfn, ver, flags, status);
  if (r == CUDA_SUCCESS && pfn && *pfn && config().enabled) *pfn = wrap_proc_address(sym, *pfn, ver, flags);
  return r;
}

using PFN_getproc_v1 = CUresult (*)(const char*, void**, int, cuuint64_t);
CUresult getproc_v1(const Binding& b, const char* sym, void** pfn, int ver, cuuint64_t flags) {
  CUresult r = b.fn<PFN_getproc_v1>()(sym, pfn, ver, flags);
  if (r == CUDA_SUCCESS && pfn && *pfn && config().enabled) *pfn = wrap_proc_address(sym, *pfn, ver, flags);
  return r;
}

// Before a context goes away its pooled events die with it: resolve everything first.
void before_teardown() {
  if (!t_in_shim) collector_sync(/*wait_gpu=*/true);
}

using PFN_ctx_destroy = CUresult (*)(CUcontext);
CUresult ctx_destroy(const Binding& b, CUcontext c) {
  before_teardown();
  collector_forget_context(c);
  return b.fn<PFN_ctx_destroy>()(c);
}
using PFN_primary = CUresult (*)(CUdevice);
CUresult primary_release(const Binding& b, CUdevice d) {
  before_teardown();
  return b.fn<PFN_primary>()(d);
}
CUresult primary_reset(const Binding& b, CUdevice d) {
  before_teardown();  // the contexts are re-learned afterwards
  return b.fn<PFN_primary>()(d);
}

// Kernel names are looked up when the collector drains a record: drain before code unloads.
using PFN_module_unload = CUresult (*)(CUmodule);
CUresult module_unload(const Binding& b, CUmodule m) {
  if (!t_in_shim) collector_sync(/*wait_gpu=*/false);
  return b.fn<PFN_module_unload>()(m);
}
using PFN_library_unload = CUresult (*)(CUlibrary);
CUresult library_unload(const Binding& b, CUlibrary l) {
  if (!t_in_shim) collector_sync(/*wait_gpu=*/false);
  return b.fn<PFN_library_unload>()(l);
}

// cudaProfilerStart/Stop land here: capture windows with CUTRACE_CAPTURE_RANGE=cudaProfilerApi.
using PFN_profiler = CUresult (*)();
CUresult profiler_start(const Binding& b) {
  CUresult r = b.fn<PFN_profiler>()();
  if (config().capture == CaptureRange::CudaProfilerApi) capture_begin_from_app("cudaProfilerApi");
  return r;
}
CUresult profiler_stop(const Binding& b) {
  if (config().capture == CaptureRange::CudaProfilerApi) capture_end_from_app("cudaProfilerApi");
  return b.fn<PFN_profiler>()();
}

}  // namespace
}  // namespace cutrace

using namespace cutrace;
#undef cuGetProcAddress
CUTRACE_FUNC(f_getproc_v2, PFN_getproc_v2, getproc_v2, "cuGetProcAddress", 12000, cuGetProcAddress_v2)
CUTRACE_FUNC(f_getproc_v1, PFN_getproc_v1, getproc_v1, "cuGetProcAddress", 11030, cuGetProcAddress)
CUTRACE_FUNC(f_ctx_destroy, PFN_ctx_destroy, ctx_destroy, "cuCtxDestroy", 4000, cuCtxDestroy_v2)
CUTRACE_FUNC(f_primary_release, PFN_primary, primary_release, "cuDevicePrimaryCtxRelease", 11000,
             cuDevicePrimaryCtxRelease_v2)
CUTRACE_FUNC(f_primary_reset, PFN_primary, primary_reset, "cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2)
CUTRACE_FUNC(f_module_unload, PFN_module_unload, module_unload, "cuModuleUnload", 2000, cuModuleUnload)
CUTRACE_FUNC(f_profiler_start, PFN_profiler, profiler_start, "cuProfilerStart", 4000, cuProfilerStart)
CUTRACE_FUNC(f_profiler_stop, PFN_profiler, profiler_stop, "cuProfilerStop", 4000, cuProfilerStop)
CUTRACE_FUNC(f_library_unload, PFN_library_unload, library_unload, "cuLibraryUnload", 12000, cuLibraryUnload)
