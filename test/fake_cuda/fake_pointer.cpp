// Pointer attribute queries over the allocations tracked by fake_memory.cpp. Device and managed
// allocations report CU_MEMORYTYPE_DEVICE; cuMemAllocHost / cuMemHostAlloc / registered memory
// report CU_MEMORYTYPE_HOST; any other (pageable) pointer is unknown to the driver, as on a real
// GPU: cuPointerGetAttribute fails with CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes zeroes.
// Boolean attributes are written as unsigned int.
#include <cstring>

#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::Allocation;
using fake::Lock;
using fake::MemKind;

bool isDeviceMemory(MemKind kind) { return kind == MemKind::kDevice || kind == MemKind::kManaged; }

template <class T>
CUresult put(void* data, T value) {
  std::memcpy(data, &value, sizeof value);
  return CUDA_SUCCESS;
}

// Bytes written for `attr`, or 0 if the fake does not support it.
size_t attributeSize(CUpointer_attribute attr) {
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return sizeof(CUcontext);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: return sizeof(void*);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return sizeof(CUmemoryPool);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED: return sizeof(unsigned);
    default: return 0;
  }
}

CUresult attribute(const Allocation& a, CUdeviceptr ptr, CUpointer_attribute attr, void* data) {
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return put<CUcontext>(data, a.ctx);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      return put<unsigned>(data, isDeviceMemory(a.kind) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: return put<CUdeviceptr>(data, ptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (a.kind == MemKind::kDevice) return CUDA_ERROR_INVALID_VALUE;
      return put<void*>(data, reinterpret_cast<void*>(ptr));
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: return put<unsigned long long>(data, a.id);
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: return put<unsigned>(data, a.kind == MemKind::kManaged);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return put<int>(data, a.device);
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: return put<unsigned>(data, a.kind == MemKind::kDevice);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: return put<CUdeviceptr>(data, a.base);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return put<size_t>(data, a.size);
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_MAPPED: return put<unsigned>(data, 1u);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return put<CUmemoryPool>(data, nullptr);
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

FAKE_API CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute_, CUdeviceptr ptr) {
  if (CUresult r = fake::checkInit()) return r;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  const Allocation* a = fake::findAllocation(ptr);
  if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return attribute(*a, ptr, attribute_, data);
}

FAKE_API CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes, void** data,
                                         CUdeviceptr ptr) {
  if (CUresult r = fake::checkInit()) return r;
  if (numAttributes > 0 && (attributes == nullptr || data == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Lock lock = fake::lockState();
  const Allocation* a = fake::findAllocation(ptr);
  for (unsigned i = 0; i < numAttributes; ++i) {
    size_t size = attributeSize(attributes[i]);
    if (size == 0 || data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (a == nullptr || attribute(*a, ptr, attributes[i], data[i]) != CUDA_SUCCESS) {
      std::memset(data[i], 0, size);  // not applicable: the driver's "NULL value"
    }
  }
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute_, CUdeviceptr ptr) {
  if (CUresult r = fake::checkInit()) return r;
  if (value == nullptr || attribute_ != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Lock lock = fake::lockState();
  return fake::findAllocation(ptr) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
