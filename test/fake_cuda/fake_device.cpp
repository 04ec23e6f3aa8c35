// Driver initialisation and device queries. Every fake device is the same H100-like
// "Fake CUDA GPU": compute capability 9.0, 132 SMs, 80 GiB; FAKE_CUDA_DEVICE_COUNT sets how many.
#include <cstdio>
#include <cstring>

#include "test/fake_cuda/fake_internal.h"

namespace {

struct AttributeValue {
  CUdevice_attribute attribute;
  int value;
};

const AttributeValue kAttributes[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},  // kHz
    {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
    {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT},
    {CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
    {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1},
    {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},  // kHz
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
    {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
    {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
    {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 32505856},
    {CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632},
    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 1},
    {CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 4},
    {CU_DEVICE_ATTRIBUTE_NUMA_ID, -1},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1},
};

// Per-device dummy objects whose addresses serve as the default memory pool handles.
char g_defaultPools[64];

CUresult checkDevice(CUdevice dev) {
  if (CUresult r = fake::checkInit()) return r;
  return fake::validDevice(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

}  // namespace

FAKE_API CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (fake::deviceCount() == 0) return CUDA_ERROR_NO_DEVICE;
  fake::markInitialized();
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = fake::kDriverVersion;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetCount(int* count) {
  if (CUresult r = fake::checkInit()) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = fake::deviceCount();
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult r = fake::checkInit()) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!fake::validDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(len), "%s", "Fake CUDA GPU");
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) {
    *pi = dev + 1;
    return CUDA_SUCCESS;
  }
  if (attrib == CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID) {
    *pi = dev;
    return CUDA_SUCCESS;
  }
  *pi = 0;
  for (const AttributeValue& a : kAttributes) {
    if (a.attribute == attrib) *pi = a.value;
  }
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *major = 9;
  *minor = 0;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = fake::kTotalDeviceMemory;
  return CUDA_SUCCESS;
}

namespace {

CUresult deviceUuid(CUuuid* uuid, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static const char kPrefix[] = "FAKECUDAGPU-";  // 12 bytes, then the ordinal (big endian)
  std::memcpy(uuid->bytes, kPrefix, 12);
  for (int i = 0; i < 4; ++i) uuid->bytes[12 + i] = static_cast<char>((dev >> (8 * (3 - i))) & 0xff);
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_API CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return deviceUuid(uuid, dev); }

FAKE_API CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) { return deviceUuid(uuid, dev); }

FAKE_API CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(pciBusId, static_cast<size_t>(len), "0000:%02X:00.0", dev + 1);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  if (CUresult r = fake::checkInit()) return r;
  if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4 &&
      std::sscanf(pciBusId, "%x:%x.%x", &bus, &device, &function) != 3) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int ordinal = static_cast<int>(bus) - 1;
  if (domain != 0 || device != 0 || function != 0 || !fake::validDevice(ordinal)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *dev = ordinal;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (CUresult r = checkDevice(peerDev)) return r;
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *canAccessPeer = dev != peerDev ? 1 : 0;
  return CUDA_SUCCESS;
}

namespace {

CUresult defaultPool(CUmemoryPool* pool, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pool = reinterpret_cast<CUmemoryPool>(&g_defaultPools[dev]);
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) { return defaultPool(pool_out, dev); }

FAKE_API CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) { return defaultPool(pool, dev); }
