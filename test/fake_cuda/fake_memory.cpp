// Memory management: device, managed, pinned-host and registered-host memory, and pointer
// queries. "Device" memory is host memory from aligned_alloc, so device pointers can be read and
// written by the fake's copies and fills; each device's allocations are capped at 80 GiB (tracked,
// not reserved). Stream-ordered allocation (cuMemAllocAsync/FreeAsync) happens immediately and is
// never captured into graphs.
#include <cstdlib>
#include <cstring>

#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::Allocation;
using fake::DefaultStream;
using fake::Lock;
using fake::MemKind;

constexpr size_t kAlignment = 256;
constexpr size_t kPitchAlignment = 512;

bool countsAgainstDevice(MemKind kind) { return kind == MemKind::kDevice || kind == MemKind::kManaged; }

size_t& deviceBytesInUse(CUdevice dev) { return fake::state().deviceBytesInUse[dev]; }

Allocation makeAllocation(uintptr_t base, size_t size, MemKind kind, CUctx_st* ctx, unsigned flags) {
  Allocation a;
  a.base = base;
  a.size = size;
  a.kind = kind;
  a.ctx = ctx;
  a.device = ctx->device;
  a.flags = flags;
  a.id = fake::nextId();
  return a;
}

// Allocates and tracks memory for the current context (lock held).
CUresult allocate(size_t bytes, MemKind kind, unsigned flags, void** out) {
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  size_t& used = deviceBytesInUse(ctx->device);
  if (countsAgainstDevice(kind) && bytes > fake::kTotalDeviceMemory - used) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = rounded >= bytes ? std::aligned_alloc(kAlignment, rounded) : nullptr;
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t base = reinterpret_cast<uintptr_t>(p);
  fake::state().allocations[base] = makeAllocation(base, bytes, kind, ctx, flags);
  if (countsAgainstDevice(kind)) used += bytes;
  *out = p;
  return CUDA_SUCCESS;
}

// Frees an allocation made by allocate(); `device` selects cuMemFree vs cuMemFreeHost rules.
CUresult release(uintptr_t base, bool device) {
  if (CUresult r = fake::checkInit()) return r;
  auto& allocations = fake::state().allocations;
  auto it = allocations.find(base);
  if (it == allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  const Allocation& a = it->second;
  bool isDevice = countsAgainstDevice(a.kind);
  if (a.kind == MemKind::kHostRegistered || isDevice != device) return CUDA_ERROR_INVALID_VALUE;
  if (isDevice) deviceBytesInUse(a.device) -= a.size;
  std::free(reinterpret_cast<void*>(base));
  allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult allocDevice(CUdeviceptr* dptr, size_t bytes, MemKind kind, unsigned flags) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  CUresult r = allocate(bytes, kind, flags, &p);
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

CUresult allocHost(void** pp, size_t bytes, unsigned flags) {
  Lock lock = fake::lockState();
  return allocate(bytes, MemKind::kHostAlloc, flags, pp);
}

CUresult allocAsync(DefaultStream d, CUdeviceptr* dptr, size_t bytes, CUstream hStream) {
  Lock lock = fake::lockState();
  CUstream_st* stream = nullptr;
  if (CUresult r = fake::resolveStream(hStream, d, &stream)) return r;
  return allocDevice(dptr, bytes, MemKind::kDevice, 0);
}

CUresult allocFromPoolAsync(DefaultStream d, CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return allocAsync(d, dptr, bytes, hStream);
}

CUresult freeAsync(DefaultStream d, CUdeviceptr dptr, CUstream hStream) {
  Lock lock = fake::lockState();
  CUstream_st* stream = nullptr;
  if (CUresult r = fake::resolveStream(hStream, d, &stream)) return r;
  return release(dptr, true);
}

bool overlapsAllocation(uintptr_t base, size_t size) {
  auto& allocations = fake::state().allocations;
  auto it = allocations.lower_bound(base + size);
  if (it == allocations.begin()) return false;
  --it;
  return it->first + it->second.size > base;
}

CUresult hostRegister(void* p, size_t bytes, unsigned flags) {
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  if (p == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t base = reinterpret_cast<uintptr_t>(p);
  if (overlapsAllocation(base, bytes)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  fake::state().allocations[base] = makeAllocation(base, bytes, MemKind::kHostRegistered, ctx, flags);
  return CUDA_SUCCESS;
}

}  // namespace

namespace fake {

const Allocation* findAllocation(uintptr_t address) {
  auto& allocations = state().allocations;
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return nullptr;
  --it;
  return address < it->first + it->second.size ? &it->second : nullptr;
}

bool deviceRangeValid(CUdeviceptr ptr, size_t bytes) {
  if (bytes == 0) return true;
  const Allocation* a = findAllocation(ptr);
  return a != nullptr && bytes <= a->base + a->size - ptr;
}

}  // namespace fake

// ---- allocation ---------------------------------------------------------------------------------

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Lock lock = fake::lockState();
  return allocDevice(dptr, bytesize, MemKind::kDevice, 0);
}

FAKE_API CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                                     unsigned int ElementSizeBytes) {
  if (CUresult r = fake::checkInit()) return r;
  if (pPitch == nullptr || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t pitch = (WidthInBytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  Lock lock = fake::lockState();
  CUresult r = allocDevice(dptr, pitch * Height, MemKind::kDevice, 0);
  if (r == CUDA_SUCCESS) *pPitch = pitch;
  return r;
}

FAKE_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (CUresult r = fake::checkInit()) return r;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  return allocDevice(dptr, bytesize, MemKind::kManaged, flags);
}

FAKE_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Lock lock = fake::lockState();
  if (dptr == 0) return fake::checkInit();
  return release(dptr, true);
}

FAKE_API CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { return allocHost(pp, bytesize, 0); }

FAKE_API CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return allocHost(pp, bytesize, Flags);
}

FAKE_API CUresult cuMemFreeHost(void* p) {
  Lock lock = fake::lockState();
  return release(reinterpret_cast<uintptr_t>(p), false);
}

FAKE_EXPORT_PTSZ(cuMemAllocAsync, allocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),
                 (dptr, bytesize, hStream))
FAKE_EXPORT_PTSZ(cuMemAllocFromPoolAsync, allocFromPoolAsync,
                 (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
                 (dptr, bytesize, pool, hStream))
FAKE_EXPORT_PTSZ(cuMemFreeAsync, freeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))

FAKE_API CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (CUresult r = fake::checkInit()) return r;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  *total = fake::kTotalDeviceMemory;
  *free = fake::kTotalDeviceMemory - deviceBytesInUse(ctx->device);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  const Allocation* a = fake::findAllocation(dptr);
  if (a == nullptr || !countsAgainstDevice(a->kind)) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = a->base;
  if (psize != nullptr) *psize = a->size;
  return CUDA_SUCCESS;
}

// ---- host registration --------------------------------------------------------------------------

FAKE_API CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return hostRegister(p, bytesize, Flags);
}

FAKE_API CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  return hostRegister(p, bytesize, Flags);
}

FAKE_API CUresult cuMemHostUnregister(void* p) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  auto& allocations = fake::state().allocations;
  auto it = allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations.end() || it->second.kind != MemKind::kHostRegistered) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  allocations.erase(it);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  if (CUresult r = fake::checkInit()) return r;
  if (pdptr == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  const Allocation* a = fake::findAllocation(reinterpret_cast<uintptr_t>(p));
  if (a == nullptr || countsAgainstDevice(a->kind)) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  if (CUresult r = fake::checkInit()) return r;
  if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  const Allocation* a = fake::findAllocation(reinterpret_cast<uintptr_t>(p));
  if (a == nullptr || a->kind != MemKind::kHostAlloc) return CUDA_ERROR_INVALID_VALUE;
  *pFlags = a->flags;
  return CUDA_SUCCESS;
}
