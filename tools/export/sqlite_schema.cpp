#include "tools/export/sqlite_schema.h"

#include <iterator>

#include "trace/format.h"

namespace cutrace {
namespace sqlite_export {

const Table kStringIds = {"StringIds", "id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL"};
const Table kKernel = {"CUPTI_ACTIVITY_KIND_KERNEL",
                       "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                       "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
                       "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, "
                       "shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, "
                       "registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, "
                       "gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, "
                       "blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, "
                       "dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER, localMemoryTotal INTEGER, "
                       "gridId INTEGER, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, "
                       "sharedMemoryLimitConfig INTEGER"};
const Table kGraphTrace = {"CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
                           "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                           "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
                           "correlationId INTEGER, globalPid INTEGER, graphId INTEGER, graphExecId INTEGER"};
const Table kMemcpy = {"CUPTI_ACTIVITY_KIND_MEMCPY",
                       "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                       "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
                       "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, "
                       "deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, "
                       "srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, "
                       "graphNodeId INTEGER, virtualAddress INTEGER"};
const Table kMemset = {"CUPTI_ACTIVITY_KIND_MEMSET",
                       "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                       "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
                       "correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, "
                       "graphNodeId INTEGER, memKind INTEGER"};
const Table kRuntime = {"CUPTI_ACTIVITY_KIND_RUNTIME",
                        "start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, "
                        "globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, "
                        "returnValue INTEGER NOT NULL, callchainId INTEGER"};
const Table kSync = {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                     "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                     "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
                     "correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER"};
const Table kMemUsage = {"CUDA_GPU_MEMORY_USAGE_EVENTS",
                         "start INTEGER NOT NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                         "contextId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL, "
                         "bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, "
                         "name TEXT, correlationId INTEGER, streamId INTEGER"};
const Table kNvtx = {"NVTX_EVENTS",
                     "start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, "
                     "category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, "
                     "textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, "
                     "uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, "
                     "binaryData TEXT"};
const Table kThreadNames = {"ThreadNames", "nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER"};
const Table kProcesses = {"PROCESSES", "globalPid INTEGER, pid INTEGER, name TEXT"};
const Table kSessionStart = {"TARGET_INFO_SESSION_START_TIME", "utcEpochNs INTEGER, utcTime TEXT, localTime TEXT"};
// A subset of nsys's columns: one row per GPU.
const Table kGpu = {"TARGET_INFO_GPU",
                    "vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, totalMemory INTEGER, "
                    "smCount INTEGER, uuid TEXT, chipName TEXT, cuDevice INTEGER, computeMajor INTEGER, "
                    "computeMinor INTEGER"};
// cutrace: which GPU (deviceId) each process's CUDA device ordinal is.
const Table kDevice = {"cutrace_device",
                       "globalPid INTEGER NOT NULL, cudaDevice INTEGER NOT NULL, deviceId INTEGER NOT NULL"};
const Table kStream = {"TARGET_INFO_CUDA_STREAM",
                       "streamId INTEGER NOT NULL, hwId INTEGER NOT NULL, vmId INTEGER NOT NULL, "
                       "processId INTEGER NOT NULL, contextId INTEGER NOT NULL, priority INTEGER NOT NULL, "
                       "flag INTEGER NOT NULL"};
const Table kMetaExport = {"META_DATA_EXPORT", "name TEXT NOT NULL, value TEXT"};
const Table kRank = {"cutrace_rank",
                     "globalPid INTEGER PRIMARY KEY, rank INTEGER, host TEXT, file TEXT, "
                     "pid INTEGER, clockOffsetNs INTEGER"};

namespace {

// ENUM_CUDA_MEMCPY_OPER (= CUpti_ActivityMemcpyKind)
constexpr EnumRow kMemcpyOper[] = {
    {0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"},
    {1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"},
    {2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"},
    {3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"},
    {4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"},
    {5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"},
    {6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"},
    {7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"},
    {8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"},
    {9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"},
    {10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"},
    {11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"},
    {12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"},
    {13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"},
};
// ENUM_CUDA_MEM_KIND (nsys's own numbering, not CUPTI's)
constexpr EnumRow kMemKind[] = {
    {0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"},
    {1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"},
    {2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"},
    {3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"},
    {4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"},
    {5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"},
    {6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"},
    {7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"},
};
// ENUM_CUPTI_SYNC_TYPE (= CUpti_ActivitySynchronizationType)
constexpr EnumRow kSyncType[] = {
    {0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"},
    {1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"},
    {2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"},
    {3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"},
    {4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"},
};
// ENUM_NSYS_EVENT_TYPE (the NVTX values)
constexpr EnumRow kEventType[] = {
    {34, "NvtxMark", "NvtxMark"},
    {59, "NvtxPushPopRange", "NvtxPushPopRange"},
    {60, "NvtxStartEndRange", "NvtxStartEndRange"},
    {75, "NvtxDomainCreate", "NvtxDomainCreate"},
};
// ENUM_NSYS_EVENT_CLASS (the CUDA API values)
constexpr EnumRow kEventClass[] = {
    {0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA Runtime API"},
    {1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA Driver API"},
};
constexpr EnumRow kLaunchType[] = {
    {0, "CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN", "Unknown"},
    {1, "CUDA_KERNEL_LAUNCH_TYPE_REGULAR", "Regular"},
    {2, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE", "Coop Single Device"},
    {3, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE", "Coop Multi Device"},
};
constexpr EnumRow kDevMemOper[] = {
    {0, "CUDA_DEV_MEM_EVENT_OPR_ALLOCATION", "Allocation"},
    {1, "CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION", "Deallocation"},
};

}  // namespace

const EnumTable kEnumTables[] = {
    {"ENUM_CUDA_MEMCPY_OPER", kMemcpyOper, std::size(kMemcpyOper)},
    {"ENUM_CUDA_MEM_KIND", kMemKind, std::size(kMemKind)},
    {"ENUM_CUPTI_SYNC_TYPE", kSyncType, std::size(kSyncType)},
    {"ENUM_NSYS_EVENT_TYPE", kEventType, std::size(kEventType)},
    {"ENUM_NSYS_EVENT_CLASS", kEventClass, std::size(kEventClass)},
    {"ENUM_CUDA_KERNEL_LAUNCH_TYPE", kLaunchType, std::size(kLaunchType)},
    {"ENUM_CUDA_DEV_MEM_EVENT_OPER", kDevMemOper, std::size(kDevMemOper)},
};
const size_t kEnumTableCount = std::size(kEnumTables);

// trace::CopyKind -> ENUM_CUDA_MEMCPY_OPER
int copy_oper(uint8_t k) {
  switch (trace::CopyKind(k)) {
    case trace::CopyKind::HtoD: return 1;
    case trace::CopyKind::DtoH: return 2;
    case trace::CopyKind::DtoD: return 8;
    case trace::CopyKind::HtoH: return 9;
    case trace::CopyKind::PtoP: return 10;
    default: return 0;
  }
}
// trace::MemKind -> ENUM_CUDA_MEM_KIND
int mem_kind(uint8_t k) {
  switch (trace::MemKind(k)) {
    case trace::MemKind::Pageable: return 0;
    case trace::MemKind::Pinned: return 1;
    case trace::MemKind::Device: return 2;
    case trace::MemKind::Array: return 3;
    case trace::MemKind::Managed: return 4;
    default: return kMemKindUnknown;
  }
}
// trace::SyncKind -> ENUM_CUPTI_SYNC_TYPE; 0: not a synchronization (the query calls)
int sync_type(uint8_t k) {
  switch (trace::SyncKind(k)) {
    case trace::SyncKind::Event: return 1;
    case trace::SyncKind::StreamWait: return 2;
    case trace::SyncKind::Stream: return 3;
    case trace::SyncKind::Context: return 4;
    default: return 0;
  }
}

}  // namespace sqlite_export
}  // namespace cutrace
