// The real driver entry points the shim and the collector call for their own work (events,
// names, device info). Resolved from libcuda with the real dlsym, so they never hit a wrapper.
#pragma once
#include <cuda.h>

namespace cutrace {

struct Driver {
  bool ok = false;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*cuStreamIsCapturing_ptsz)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*cuFuncGetName)(const char**, CUfunction) = nullptr;
  CUresult (*cuKernelGetName)(const char**, CUkernel) = nullptr;
  CUresult (*cuFuncGetAttribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*cuKernelGetAttribute)(int*, CUfunction_attribute, CUkernel, CUdevice) = nullptr;
  CUresult (*cuPointerGetAttribute)(void*, CUpointer_attribute, CUdeviceptr) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*cuDeviceGetUuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode*) = nullptr;
};

// Resolves on first call (libcuda must be loaded by then: every caller runs after a CUDA call).
const Driver& driver();

// libc's dlsym, bypassing the shim's own dlsym.
void* real_dlsym(void* handle, const char* name);
// The process's libcuda.so.1 (already loaded), or nullptr.
void* libcuda_handle();
// True if `addr` lies inside the shim itself.
bool is_own_address(const void* addr);

}  // namespace cutrace
