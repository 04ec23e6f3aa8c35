// cuGetProcAddress / cuGetProcAddress_v2: look a driver function up by its *base* name
// ("cuMemAlloc") and return the ABI version the caller's cudaVersion expects, or its _ptsz/_ptds
// variant when CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM is set. Addresses are read from this
// library's own dynamic symbol table, so they equal what dlsym(handle, "<exported name>") returns
// and are never an interposer's wrapper: a preloaded profiler may define the same cu* names and
// even interpose dlsym itself, so neither `&cuMemAlloc_v2` nor dlsym could be trusted here.
//
// Each table row is one exported ABI: base name, the CUDA version that introduced it (as in
// cudaTypedefs.h's PFN_<name>_v<version>), the exported symbol, and its per-thread variant suffix.
#include <link.h>

#include <cstring>

#include "test/fake_cuda/fake_internal.h"

namespace {

enum Variant { kNone, kPtsz, kPtds };

struct ProcEntry {
  const char* base;
  int version;
  const char* symbol;
  Variant variant;
};

const ProcEntry kProcs[] = {
    // Initialisation, errors, misc.
    {"cuInit", 2000, "cuInit", kNone},
    {"cuDriverGetVersion", 2020, "cuDriverGetVersion", kNone},
    {"cuGetErrorName", 6000, "cuGetErrorName", kNone},
    {"cuGetErrorString", 6000, "cuGetErrorString", kNone},
    {"cuGetExportTable", 3000, "cuGetExportTable", kNone},
    {"cuGetProcAddress", 11030, "cuGetProcAddress", kNone},
    {"cuGetProcAddress", 12000, "cuGetProcAddress_v2", kNone},
    {"cuProfilerStart", 4000, "cuProfilerStart", kNone},
    {"cuProfilerStop", 4000, "cuProfilerStop", kNone},
    // Devices.
    {"cuDeviceGet", 2000, "cuDeviceGet", kNone},
    {"cuDeviceGetCount", 2000, "cuDeviceGetCount", kNone},
    {"cuDeviceGetName", 2000, "cuDeviceGetName", kNone},
    {"cuDeviceGetAttribute", 2000, "cuDeviceGetAttribute", kNone},
    {"cuDeviceComputeCapability", 2000, "cuDeviceComputeCapability", kNone},
    {"cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2", kNone},
    {"cuDeviceGetUuid", 9020, "cuDeviceGetUuid", kNone},
    {"cuDeviceGetUuid", 11040, "cuDeviceGetUuid_v2", kNone},
    {"cuDeviceGetPCIBusId", 4010, "cuDeviceGetPCIBusId", kNone},
    {"cuDeviceGetByPCIBusId", 4010, "cuDeviceGetByPCIBusId", kNone},
    {"cuDeviceCanAccessPeer", 4000, "cuDeviceCanAccessPeer", kNone},
    {"cuDeviceGetDefaultMemPool", 11020, "cuDeviceGetDefaultMemPool", kNone},
    {"cuDeviceGetMemPool", 11020, "cuDeviceGetMemPool", kNone},
    {"cuDevicePrimaryCtxRetain", 7000, "cuDevicePrimaryCtxRetain", kNone},
    {"cuDevicePrimaryCtxRelease", 7000, "cuDevicePrimaryCtxRelease", kNone},
    {"cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2", kNone},
    {"cuDevicePrimaryCtxReset", 7000, "cuDevicePrimaryCtxReset", kNone},
    {"cuDevicePrimaryCtxReset", 11000, "cuDevicePrimaryCtxReset_v2", kNone},
    {"cuDevicePrimaryCtxSetFlags", 7000, "cuDevicePrimaryCtxSetFlags", kNone},
    {"cuDevicePrimaryCtxSetFlags", 11000, "cuDevicePrimaryCtxSetFlags_v2", kNone},
    {"cuDevicePrimaryCtxGetState", 7000, "cuDevicePrimaryCtxGetState", kNone},
    // Contexts.
    {"cuCtxCreate", 2000, "cuCtxCreate", kNone},
    {"cuCtxCreate", 3020, "cuCtxCreate_v2", kNone},
    {"cuCtxCreate", 11040, "cuCtxCreate_v3", kNone},
    {"cuCtxCreate", 12050, "cuCtxCreate_v4", kNone},
    {"cuCtxDestroy", 2000, "cuCtxDestroy", kNone},
    {"cuCtxDestroy", 4000, "cuCtxDestroy_v2", kNone},
    {"cuCtxPushCurrent", 2000, "cuCtxPushCurrent", kNone},
    {"cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2", kNone},
    {"cuCtxPopCurrent", 2000, "cuCtxPopCurrent", kNone},
    {"cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2", kNone},
    {"cuCtxSetCurrent", 4000, "cuCtxSetCurrent", kNone},
    {"cuCtxGetCurrent", 4000, "cuCtxGetCurrent", kNone},
    {"cuCtxGetDevice", 2000, "cuCtxGetDevice", kNone},
    {"cuCtxGetDevice", 13000, "cuCtxGetDevice_v2", kNone},
    {"cuCtxGetFlags", 7000, "cuCtxGetFlags", kNone},
    {"cuCtxSetFlags", 12010, "cuCtxSetFlags", kNone},
    {"cuCtxGetId", 12000, "cuCtxGetId", kNone},
    {"cuCtxGetApiVersion", 3020, "cuCtxGetApiVersion", kNone},
    {"cuCtxGetStreamPriorityRange", 5050, "cuCtxGetStreamPriorityRange", kNone},
    {"cuCtxSynchronize", 2000, "cuCtxSynchronize", kNone},
    {"cuCtxSynchronize", 13000, "cuCtxSynchronize_v2", kNone},
    {"cuCtxEnablePeerAccess", 4000, "cuCtxEnablePeerAccess", kNone},
    {"cuCtxDisablePeerAccess", 4000, "cuCtxDisablePeerAccess", kNone},
    // Modules, libraries, functions, kernels.
    {"cuModuleLoad", 2000, "cuModuleLoad", kNone},
    {"cuModuleLoadData", 2000, "cuModuleLoadData", kNone},
    {"cuModuleLoadDataEx", 2010, "cuModuleLoadDataEx", kNone},
    {"cuModuleLoadFatBinary", 2000, "cuModuleLoadFatBinary", kNone},
    {"cuModuleUnload", 2000, "cuModuleUnload", kNone},
    {"cuModuleGetFunction", 2000, "cuModuleGetFunction", kNone},
    {"cuModuleGetFunctionCount", 12040, "cuModuleGetFunctionCount", kNone},
    {"cuModuleEnumerateFunctions", 12040, "cuModuleEnumerateFunctions", kNone},
    {"cuModuleGetGlobal", 3020, "cuModuleGetGlobal_v2", kNone},
    {"cuModuleGetLoadingMode", 11070, "cuModuleGetLoadingMode", kNone},
    {"cuLibraryLoadData", 12000, "cuLibraryLoadData", kNone},
    {"cuLibraryLoadFromFile", 12000, "cuLibraryLoadFromFile", kNone},
    {"cuLibraryUnload", 12000, "cuLibraryUnload", kNone},
    {"cuLibraryGetKernel", 12000, "cuLibraryGetKernel", kNone},
    {"cuLibraryGetKernelCount", 12040, "cuLibraryGetKernelCount", kNone},
    {"cuLibraryEnumerateKernels", 12040, "cuLibraryEnumerateKernels", kNone},
    {"cuLibraryGetModule", 12000, "cuLibraryGetModule", kNone},
    {"cuLibraryGetGlobal", 12000, "cuLibraryGetGlobal", kNone},
    {"cuKernelGetFunction", 12000, "cuKernelGetFunction", kNone},
    {"cuKernelGetLibrary", 12050, "cuKernelGetLibrary", kNone},
    {"cuKernelGetName", 12030, "cuKernelGetName", kNone},
    {"cuKernelGetAttribute", 12000, "cuKernelGetAttribute", kNone},
    {"cuKernelSetAttribute", 12000, "cuKernelSetAttribute", kNone},
    {"cuFuncGetName", 12030, "cuFuncGetName", kNone},
    {"cuFuncGetAttribute", 2020, "cuFuncGetAttribute", kNone},
    {"cuFuncSetAttribute", 9000, "cuFuncSetAttribute", kNone},
    {"cuFuncSetCacheConfig", 3000, "cuFuncSetCacheConfig", kNone},
    {"cuFuncGetModule", 11000, "cuFuncGetModule", kNone},
    {"cuFuncIsLoaded", 12040, "cuFuncIsLoaded", kNone},
    {"cuFuncLoad", 12040, "cuFuncLoad", kNone},
    // Launches.
    {"cuLaunchKernel", 4000, "cuLaunchKernel", kPtsz},
    {"cuLaunchKernelEx", 11060, "cuLaunchKernelEx", kPtsz},
    {"cuLaunchCooperativeKernel", 9000, "cuLaunchCooperativeKernel", kPtsz},
    // Memory.
    {"cuMemAlloc", 3020, "cuMemAlloc_v2", kNone},
    {"cuMemAllocPitch", 3020, "cuMemAllocPitch_v2", kNone},
    {"cuMemAllocManaged", 6000, "cuMemAllocManaged", kNone},
    {"cuMemFree", 3020, "cuMemFree_v2", kNone},
    {"cuMemAllocHost", 3020, "cuMemAllocHost_v2", kNone},
    {"cuMemHostAlloc", 2020, "cuMemHostAlloc", kNone},
    {"cuMemFreeHost", 2000, "cuMemFreeHost", kNone},
    {"cuMemAllocAsync", 11020, "cuMemAllocAsync", kPtsz},
    {"cuMemAllocFromPoolAsync", 11020, "cuMemAllocFromPoolAsync", kPtsz},
    {"cuMemFreeAsync", 11020, "cuMemFreeAsync", kPtsz},
    {"cuMemGetInfo", 3020, "cuMemGetInfo_v2", kNone},
    {"cuMemGetAddressRange", 3020, "cuMemGetAddressRange_v2", kNone},
    {"cuMemHostRegister", 4000, "cuMemHostRegister", kNone},
    {"cuMemHostRegister", 6050, "cuMemHostRegister_v2", kNone},
    {"cuMemHostUnregister", 4000, "cuMemHostUnregister", kNone},
    {"cuMemHostGetDevicePointer", 3020, "cuMemHostGetDevicePointer_v2", kNone},
    {"cuMemHostGetFlags", 2030, "cuMemHostGetFlags", kNone},
    {"cuPointerGetAttribute", 4000, "cuPointerGetAttribute", kNone},
    {"cuPointerGetAttributes", 7000, "cuPointerGetAttributes", kNone},
    {"cuPointerSetAttribute", 6000, "cuPointerSetAttribute", kNone},
    // Copies and fills.
    {"cuMemcpy", 4000, "cuMemcpy", kPtds},
    {"cuMemcpyAsync", 4000, "cuMemcpyAsync", kPtsz},
    {"cuMemcpyPeer", 4000, "cuMemcpyPeer", kPtds},
    {"cuMemcpyPeerAsync", 4000, "cuMemcpyPeerAsync", kPtsz},
    {"cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2", kPtds},
    {"cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2", kPtds},
    {"cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2", kPtds},
    {"cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2", kPtsz},
    {"cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2", kPtsz},
    {"cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2", kPtsz},
    {"cuMemcpy2D", 3020, "cuMemcpy2D_v2", kPtds},
    {"cuMemcpy2DUnaligned", 3020, "cuMemcpy2DUnaligned_v2", kPtds},
    {"cuMemcpy2DAsync", 3020, "cuMemcpy2DAsync_v2", kPtsz},
    {"cuMemcpy3D", 3020, "cuMemcpy3D_v2", kPtds},
    {"cuMemcpy3DAsync", 3020, "cuMemcpy3DAsync_v2", kPtsz},
    {"cuMemcpy3DPeer", 4000, "cuMemcpy3DPeer", kPtds},
    {"cuMemcpy3DPeerAsync", 4000, "cuMemcpy3DPeerAsync", kPtsz},
    {"cuMemsetD8", 3020, "cuMemsetD8_v2", kPtds},
    {"cuMemsetD16", 3020, "cuMemsetD16_v2", kPtds},
    {"cuMemsetD32", 3020, "cuMemsetD32_v2", kPtds},
    {"cuMemsetD2D8", 3020, "cuMemsetD2D8_v2", kPtds},
    {"cuMemsetD2D16", 3020, "cuMemsetD2D16_v2", kPtds},
    {"cuMemsetD2D32", 3020, "cuMemsetD2D32_v2", kPtds},
    {"cuMemsetD8Async", 3020, "cuMemsetD8Async", kPtsz},
    {"cuMemsetD16Async", 3020, "cuMemsetD16Async", kPtsz},
    {"cuMemsetD32Async", 3020, "cuMemsetD32Async", kPtsz},
    {"cuMemsetD2D8Async", 3020, "cuMemsetD2D8Async", kPtsz},
    {"cuMemsetD2D16Async", 3020, "cuMemsetD2D16Async", kPtsz},
    {"cuMemsetD2D32Async", 3020, "cuMemsetD2D32Async", kPtsz},
    // Streams and events.
    {"cuStreamCreate", 2000, "cuStreamCreate", kNone},
    {"cuStreamCreateWithPriority", 5050, "cuStreamCreateWithPriority", kNone},
    {"cuStreamDestroy", 2000, "cuStreamDestroy", kNone},
    {"cuStreamDestroy", 4000, "cuStreamDestroy_v2", kNone},
    {"cuStreamSynchronize", 2000, "cuStreamSynchronize", kPtsz},
    {"cuStreamQuery", 2000, "cuStreamQuery", kPtsz},
    {"cuStreamWaitEvent", 3020, "cuStreamWaitEvent", kPtsz},
    {"cuStreamGetCtx", 9020, "cuStreamGetCtx", kPtsz},
    {"cuStreamGetCtx", 12050, "cuStreamGetCtx_v2", kPtsz},
    {"cuStreamGetDevice", 12080, "cuStreamGetDevice", kPtsz},
    {"cuStreamGetId", 12000, "cuStreamGetId", kPtsz},
    {"cuStreamGetPriority", 5050, "cuStreamGetPriority", kPtsz},
    {"cuStreamGetFlags", 5050, "cuStreamGetFlags", kPtsz},
    {"cuEventCreate", 2000, "cuEventCreate", kNone},
    {"cuEventDestroy", 2000, "cuEventDestroy", kNone},
    {"cuEventDestroy", 4000, "cuEventDestroy_v2", kNone},
    {"cuEventRecord", 2000, "cuEventRecord", kPtsz},
    {"cuEventRecordWithFlags", 11010, "cuEventRecordWithFlags", kPtsz},
    {"cuEventQuery", 2000, "cuEventQuery", kNone},
    {"cuEventSynchronize", 2000, "cuEventSynchronize", kNone},
    {"cuEventElapsedTime", 2000, "cuEventElapsedTime", kNone},
    {"cuEventElapsedTime", 12080, "cuEventElapsedTime_v2", kNone},
    // Graphs and capture.
    {"cuGraphCreate", 10000, "cuGraphCreate", kNone},
    {"cuGraphDestroy", 10000, "cuGraphDestroy", kNone},
    {"cuGraphAddKernelNode", 10000, "cuGraphAddKernelNode", kNone},
    {"cuGraphAddKernelNode", 12000, "cuGraphAddKernelNode_v2", kNone},
    {"cuGraphAddMemcpyNode", 10000, "cuGraphAddMemcpyNode", kNone},
    {"cuGraphAddMemsetNode", 10000, "cuGraphAddMemsetNode", kNone},
    {"cuGraphGetNodes", 10000, "cuGraphGetNodes", kNone},
    {"cuGraphNodeGetType", 10000, "cuGraphNodeGetType", kNone},
    {"cuGraphInstantiate", 10000, "cuGraphInstantiate", kNone},
    {"cuGraphInstantiate", 11000, "cuGraphInstantiate_v2", kNone},
    {"cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags", kNone},
    {"cuGraphInstantiateWithFlags", 11040, "cuGraphInstantiateWithFlags", kNone},
    {"cuGraphInstantiateWithParams", 12000, "cuGraphInstantiateWithParams", kPtsz},
    {"cuGraphLaunch", 10000, "cuGraphLaunch", kPtsz},
    {"cuGraphUpload", 11010, "cuGraphUpload", kPtsz},
    {"cuGraphExecDestroy", 10000, "cuGraphExecDestroy", kNone},
    {"cuStreamBeginCapture", 10000, "cuStreamBeginCapture", kPtsz},
    {"cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2", kPtsz},
    {"cuStreamBeginCaptureToGraph", 12030, "cuStreamBeginCaptureToGraph", kPtsz},
    {"cuStreamEndCapture", 10000, "cuStreamEndCapture", kPtsz},
    {"cuStreamIsCapturing", 10000, "cuStreamIsCapturing", kPtsz},
    {"cuStreamGetCaptureInfo", 10010, "cuStreamGetCaptureInfo", kPtsz},
    {"cuStreamGetCaptureInfo", 11030, "cuStreamGetCaptureInfo_v2", kPtsz},
    {"cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3", kPtsz},
    {"cuThreadExchangeStreamCaptureMode", 10010, "cuThreadExchangeStreamCaptureMode", kNone},
};

// ---- this library's dynamic symbol table --------------------------------------------------------

struct SymbolTable {
  ElfW(Addr) base = 0;
  const ElfW(Sym) * symbols = nullptr;
  const char* strings = nullptr;
  size_t count = 0;
};

const char kAnchor = 0;  // any object of this library, to recognise it among the loaded ones

// Number of entries of the dynamic symbol table, from a DT_GNU_HASH table: the highest symbol
// index any bucket or chain reaches, plus one.
size_t gnuHashSymbolCount(const uint32_t* hash) {
  uint32_t nbuckets = hash[0], symoffset = hash[1], bloomWords = hash[2];
  const uint32_t* buckets = hash + 4 + bloomWords * (sizeof(ElfW(Addr)) / 4);
  const uint32_t* chains = buckets + nbuckets;
  uint32_t last = 0;
  for (uint32_t i = 0; i < nbuckets; ++i) last = buckets[i] > last ? buckets[i] : last;
  if (last < symoffset) return symoffset;
  while ((chains[last - symoffset] & 1) == 0) ++last;
  return last + 1;
}

void readDynamic(const ElfW(Dyn) * dyn, SymbolTable* table) {
  // glibc relocates these pointers in place when loading; other loaders leave them relative.
  auto absolute = [table](ElfW(Addr) p) { return p < table->base ? p + table->base : p; };
  const uint32_t* sysvHash = nullptr;
  const uint32_t* gnuHash = nullptr;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    ElfW(Addr) p = absolute(dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_SYMTAB) table->symbols = reinterpret_cast<const ElfW(Sym)*>(p);
    if (dyn->d_tag == DT_STRTAB) table->strings = reinterpret_cast<const char*>(p);
    if (dyn->d_tag == DT_HASH) sysvHash = reinterpret_cast<const uint32_t*>(p);
    if (dyn->d_tag == DT_GNU_HASH) gnuHash = reinterpret_cast<const uint32_t*>(p);
  }
  table->count = sysvHash != nullptr ? sysvHash[1] : gnuHash != nullptr ? gnuHashSymbolCount(gnuHash) : 0;
}

int findSelf(dl_phdr_info* info, size_t, void* data) {
  auto anchor = reinterpret_cast<ElfW(Addr)>(&kAnchor);
  const ElfW(Phdr)* dynamic = nullptr;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    ElfW(Addr) start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && anchor >= start && anchor < start + ph.p_memsz) mine = true;
    if (ph.p_type == PT_DYNAMIC) dynamic = &ph;
  }
  if (!mine || dynamic == nullptr) return 0;
  auto* table = static_cast<SymbolTable*>(data);
  table->base = info->dlpi_addr;
  readDynamic(reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + dynamic->p_vaddr), table);
  return 1;
}

// The address of this library's own definition of the function `name`, or null.
void* ownFunction(const char* name) {
  static const SymbolTable table = [] {
    SymbolTable t;
    dl_iterate_phdr(findSelf, &t);
    return t;
  }();
  for (size_t i = 1; i < table.count && table.symbols != nullptr; ++i) {
    const ElfW(Sym)& sym = table.symbols[i];
    if (sym.st_shndx == SHN_UNDEF || ELF32_ST_TYPE(sym.st_info) != STT_FUNC) continue;  // == ELF64_ST_TYPE
    if (std::strcmp(table.strings + sym.st_name, name) == 0) {
      return reinterpret_cast<void*>(table.base + sym.st_value);
    }
  }
  return nullptr;
}

// ---- lookup -------------------------------------------------------------------------------------

// The newest row for `base` that `cudaVersion` admits; *known tells whether `base` exists at all.
const ProcEntry* findProc(const char* base, int cudaVersion, bool* known) {
  const ProcEntry* best = nullptr;
  *known = false;
  for (const ProcEntry& e : kProcs) {
    if (std::strcmp(e.base, base) != 0) continue;
    *known = true;
    if (e.version <= cudaVersion && (best == nullptr || e.version > best->version)) best = &e;
  }
  return best;
}

void* resolve(const ProcEntry& e, cuuint64_t flags) {
  std::string name = e.symbol;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
    if (e.variant == kPtsz) name += "_ptsz";
    if (e.variant == kPtds) name += "_ptds";
  }
  return ownFunction(name.c_str());
}

CUresult getProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                        CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  bool known = false;
  const ProcEntry* entry = findProc(symbol, cudaVersion, &known);
  if (entry != nullptr) *pfn = resolve(*entry, flags);
  if (status != nullptr) {
    *status = *pfn != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS
              : known         ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                              : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return *pfn != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // namespace

FAKE_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return getProcAddress(symbol, pfn, cudaVersion, flags, nullptr);
}

FAKE_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult* symbolStatus) {
  return getProcAddress(symbol, pfn, cudaVersion, flags, symbolStatus);
}
