// The tables of `cutrace export --format sqlite` (tools/export/sqlite.cpp): each table's columns
// in the order Nsight Systems writes them, the rows of the ENUM_* tables those columns reference,
// and the mappings of the trace's enums to nsys's values.
#pragma once
#include <cstddef>
#include <cstdint>

namespace cutrace {
namespace sqlite_export {

struct Table {
  const char* name;
  const char* columns;  // "name TYPE, ..." in nsys's order
};

// Column lists and order as nsys 2024.x writes them (columns cutrace never knows stay NULL).
extern const Table kStringIds, kKernel, kGraphTrace, kMemcpy, kMemset, kRuntime, kSync, kMemUsage, kNvtx, kThreadNames,
    kProcesses, kSessionStart, kGpu, kDevice, kStream, kMetaExport, kRank;

struct EnumRow {
  int id;
  const char* name;
  const char* label;
};
struct EnumTable {  // an ENUM_* table: (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT)
  const char* name;
  const EnumRow* rows;
  size_t count;
};
// The ENUM_* tables, in the order they are created and filled.
extern const EnumTable kEnumTables[];
extern const size_t kEnumTableCount;

constexpr int kEventClassDriver = 1;
// META_DATA_EXPORT's EXPORT_SCHEMA_VERSION: the nsys export schema whose tables and columns
// these follow (nsys 2024.4).
constexpr const char* kSchemaVersion = "3.15.1";
constexpr int kNvtxMark = 34, kNvtxPushPop = 59, kNvtxStartEnd = 60, kNvtxDomainCreate = 75;
constexpr int kLaunchRegular = 1, kLaunchCoop = 2;
constexpr int kMemKindUnknown = 7;
constexpr int kMemKindDevice = 2;

int copy_oper(uint8_t k);  // trace::CopyKind -> ENUM_CUDA_MEMCPY_OPER
int mem_kind(uint8_t k);   // trace::MemKind -> ENUM_CUDA_MEM_KIND
int sync_type(uint8_t k);  // trace::SyncKind -> ENUM_CUPTI_SYNC_TYPE; 0: not a synchronization

}  // namespace sqlite_export
}  // namespace cutrace
