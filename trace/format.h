// On-disk trace format, version 2. docs/FORMAT.md describes it in prose; this header is the
// normative definition shared by the writer (collector) and the one reader library.
//
// File  := FileHeader Block*
// Block := BlockHeader LZ4(payload)          payload := packed columns (2.x; trace/codec.h)
//                                                       | Record* (1.x files)
// Record:= RecHeader body                    (size counts the header; little-endian, packed)
//
// Version 2 packs the records of a block into columns of varints (times as deltas, kernel
// launch configurations as ids of KernelConfig records); the reader unpacks them into the
// structs below, so tools see the same records as in 1.x, which readers still accept.
//
// Every block is self-contained for decompression and begins with a sync magic, so a reader can
// skip a damaged block and a truncated file reads up to its last complete block. Strings are
// interned: a String record (id -> bytes) always precedes, in the same or an earlier block, the
// first record that uses the id. All times are int64 nanoseconds of the host's CLOCK_MONOTONIC;
// ClockSync records give the matching CLOCK_REALTIME. GPU times were mapped to that clock by the
// collector. A value of 0 in gpu_start/gpu_end means "not measured".
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cutrace::trace {

inline constexpr char kFileMagic[8] = {'C', 'U', 'T', 'R', 'A', 'C', 'E', '\0'};
// 1.1: Range and Mark records. 1.2: Module, Stack, OpStack (call stacks). 2.0: packed block
// payloads (kernels ~100 B -> ~10 B on disk).
inline constexpr uint16_t kVersionMajor = 2;             // readers refuse a larger major
inline constexpr uint16_t kVersionMinor = 0;             // readers accept any minor (unknown records skipped)
inline constexpr uint32_t kBlockMagic = 0x4B4C4243;      // bytes "CBLK"
inline constexpr uint32_t kMaxBlockRaw = 1u << 20;       // writers never exceed 1 MiB raw per block
inline constexpr uint32_t kMaxBlockDecoded = 4u << 20;   // a packed block unpacks to at most 4 MiB
inline constexpr uint32_t kMaxKernelConfigs = 1u << 16;  // more distinct configs: kernels verbatim
inline constexpr uint32_t kBlockTargetRaw = 256u << 10;  // TraceWriter flushes before exceeding this
inline constexpr uint32_t kMaxStringBytes = 65000;       // longer strings are truncated by the writer

#pragma pack(push, 1)

struct FileHeader {
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_size;  // sizeof(FileHeader); lets a later minor version append fields
};
static_assert(sizeof(FileHeader) == 16);

struct BlockHeader {
  uint32_t magic;            // kBlockMagic
  uint32_t compressed_size;  // bytes of LZ4 data following this header
  uint32_t raw_size;         // bytes after decompression (<= kMaxBlockRaw)
  uint32_t checksum;         // xxh32(raw payload): XXH32, seed 0, of the decompressed bytes
  uint64_t seq;              // 0,1,2,... per file; a gap means a block was lost
};
static_assert(sizeof(BlockHeader) == 24);

enum class RecType : uint16_t {
  String = 1,   // StringRec + bytes (not NUL-terminated)
  Meta = 2,     // key/value strings about the process (see docs/FORMAT.md for keys)
  ApiName = 3,  // api id -> name string id
  Thread = 4,   // OS thread id -> name
  Device = 5,   // one per GPU used
  Stream = 6,   // stream id -> handle, device
  Kernel = 10,
  Memcpy = 11,
  Memset = 12,
  Sync = 13,
  Memory = 14,
  Api = 15,    // any other traced driver call (event record, stream wait, errors, ...)
  Range = 16,  // an NVTX range or a cutrace Python annotation, with its GPU projection
  Mark = 17,   // an NVTX mark (instant)
  CpuSample = 20,
  GpuSample = 21,
  ClockSync = 30,
  Dropped = 31,
  Window = 32,
  End = 33,
  KernelConfig = 34,  // 2.x: a kernel launch configuration, written once per file (packed blocks)
  Loss = 35,          // 2.x: records not captured on one thread in an interval, by kind (LossRec)
  // 36-39: reserved
  Module = 40,   // a loaded ELF object that backtrace frames point into
  Stack = 41,    // an interned call stack: frames as (module, offset)
  OpStack = 42,  // links an operation (by corr) to the call stack that issued it
  Payload = 43,  // an NVTX event's scalar payload; directly precedes its Range or Mark record
  // 44: reserved
  PyCode = 45,   // an interned Python code object: file, names, first line
  PyStack = 46,  // an interned call stack with Python frames: (code, line) then native frames
  // 47: reserved (Python stacks)
  // The hang watchdog (--hang-timeout): a report, its items, and the report's work completing.
  Hang = 48,
  HangItem = 49,
  HangEnd = 50,
  // 51-53: CPU performance counters (perf_event_open), read by the collector's sampler.
  CounterDef = 51,      // a counter's id, name, scope (process or one CPU) and unit
  CounterSample = 52,   // CounterSampleRec + `count` CounterValue: deltas over one interval
  CounterMissing = 53,  // a counter that was asked for and could not be opened, with the reason
};

struct RecHeader {
  uint16_t type;  // RecType
  uint16_t size;  // whole record, header included
};
static_assert(sizeof(RecHeader) == 4);

struct StringRec {
  RecHeader h;
  uint32_t id;  // ids start at 1; 0 means "no string"
  // followed by h.size - 8 bytes of UTF-8 (or raw) text
};
static_assert(sizeof(StringRec) == 8);

struct MetaRec {
  RecHeader h;
  uint32_t key_id;
  uint32_t value_id;
};
static_assert(sizeof(MetaRec) == 12);

struct ApiNameRec {
  RecHeader h;
  uint16_t api;
  uint16_t pad;
  uint32_t name_id;
};
static_assert(sizeof(ApiNameRec) == 12);

struct ThreadRec {
  RecHeader h;
  uint32_t tid;
  uint32_t name_id;
};
static_assert(sizeof(ThreadRec) == 12);

struct DeviceRec {
  RecHeader h;
  uint16_t device;  // CUdevice ordinal
  uint16_t cc_major;
  uint16_t cc_minor;
  uint16_t sm_count;
  uint32_t name_id;
  uint64_t total_mem;
  uint8_t uuid[16];
  uint32_t pci_bus;
};
static_assert(sizeof(DeviceRec) == 44);

struct StreamRec {
  RecHeader h;
  uint32_t stream;  // id used by op records (1, 2, ...; 0 = none)
  uint16_t device;
  uint16_t flags;   // StreamFlags
  uint64_t handle;  // CUstream value as seen by the application
};
static_assert(sizeof(StreamRec) == 20);

enum StreamFlags : uint16_t {
  kStreamLegacyDefault = 1 << 0,     // the context's legacy default (NULL) stream
  kStreamPerThreadDefault = 1 << 1,  // a thread's per-thread default stream
};

// Flags shared by GPU operation records (OpCommon::flags).
enum OpFlags : uint16_t {
  kOpInferredStart = 1 << 0,  // gpu_start inferred (default timing mode), not measured
  kOpNoGpuTime = 1 << 1,      // no GPU time (event pool empty, error, or captured into a graph)
  kOpCaptured = 1 << 2,       // issued while the stream was capturing a CUDA graph
  kOpError = 1 << 3,          // the driver returned an error (result != 0)
  kOpAsync = 1 << 4,          // memcpy/memset: *Async API
  kOpPerThreadStream = 1 << 5,
  kOpNotSampled = 1 << 6,  // no GPU time by design: issued outside the GPU-timing sample (gpu_sample meta)
  // A graph launch whose replay's operations follow it as records flagged GraphNode (CUPTI
  // timing): those carry the GPU work; this record stays the launch call (and the replay's span).
  kOpGraphNodes = 1 << 7,
  // One kernel, copy or memset of a graph replay, after the launch's record (same corr, tid,
  // stream, CPU times: the launch call's): GPU work only, it stands for no call of its own.
  kOpGraphNode = 1 << 8,
  // Launched, and its GPU work not seen complete when the process ended (SIGTERM, SIGINT, or exit
  // with work still running): gpu_start/gpu_end are 0 (kOpNoGpuTime is set too). Tools show it
  // as pending, never as a duration.
  kOpPendingExit = 1 << 9,
};
// The record stands for a host call: every operation but a graph replay's nodes.
inline bool is_call(uint16_t flags) { return !(flags & kOpGraphNode); }
// The record stands for GPU work of its own: every operation but a graph launch whose nodes follow.
inline bool is_gpu_work(uint16_t flags) { return !(flags & kOpGraphNodes); }

struct OpCommon {
  uint64_t corr;      // correlation id: links launch to execution; unique per file but for a graph replay's nodes
  int64_t cpu_begin;  // ns, host call entry
  int64_t cpu_end;    // ns, host call return
  int64_t gpu_start;  // ns (host clock), 0 = unknown
  int64_t gpu_end;    // ns (host clock), 0 = unknown
  uint32_t tid;       // OS thread id of the caller
  uint32_t stream;    // stream id (StreamRec)
  uint16_t device;
  uint16_t api;    // api id (ApiNameRec)
  uint16_t flags;  // OpFlags
  uint16_t pad;
  int32_t result;  // CUresult returned to the application
};
static_assert(sizeof(OpCommon) == 60);

enum class KernelKind : uint8_t { Kernel = 0, Cooperative = 1, Graph = 2 };

struct KernelRec {
  RecHeader h;
  OpCommon op;
  uint32_t name_id;  // demangled name; for graphs "cudaGraphExec <n>"
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dyn_smem;
  uint32_t static_smem;
  uint16_t regs;
  uint8_t kind;  // KernelKind
  uint8_t pad;
  uint32_t graph_id;  // graph exec id for kind Graph and the kernels of its replays, else 0
};
static_assert(sizeof(KernelRec) == 4 + 60 + 44);

// 2.x: the launch configuration of packed Kernel records: KernelRec's bytes from name_id to
// graph_id, under an id (1, 2, ... per file) that packed kernels carry instead. The writer emits
// it before the first kernel that uses it; the reader consumes it (visitors never see it).
struct KernelConfigRec {
  RecHeader h;
  uint32_t id;
  uint32_t name_id;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dyn_smem;
  uint32_t static_smem;
  uint16_t regs;
  uint8_t kind;
  uint8_t pad;
  uint32_t graph_id;
};
static_assert(sizeof(KernelConfigRec) == 8 + 44);

// 2.x: columns of a packed block payload, in this order (docs/FORMAT.md, "Packed payload").
enum Column : uint8_t {
  kColTag = 0,      // u8 per record: 0 verbatim, else the RecType of a packed record
  kColVerbatim,     // whole records (RecHeader + body), for tag 0
  kColCorr,         // correlation ids, delta from the previous one
  kColThread,       // tid
  kColStream,       // stream id
  kColDevice,       // device, src_device, dst_device
  kColApi,          // api id
  kColFlags,        // OpFlags
  kColResult,       // CUresult, zigzag
  kColCpuBegin,     // cpu_begin, delta from the previous record of the same thread
  kColCpuDuration,  // cpu_end - cpu_begin
  kColGpuStart,     // gpu_start, relative to max(previous gpu_end on the stream, cpu_end)
  kColGpuDuration,  // gpu_end - gpu_start
  kColConfig,       // KernelConfig id
  kColBytes,        // byte counts of copies, sets, allocations
  kColHandle,       // event / argument / address handles, delta from the previous one
  kColSmall,        // small enums: copy and memory kinds, memset value and width, sync kind, ...
  kColumnCount
};

enum class CopyKind : uint8_t { Unknown = 0, HtoD = 1, DtoH = 2, DtoD = 3, HtoH = 4, PtoP = 5 };
enum class MemKind : uint8_t { Unknown = 0, Pageable = 1, Pinned = 2, Device = 3, Managed = 4, Array = 5 };

struct MemcpyRec {
  RecHeader h;
  OpCommon op;
  uint64_t bytes;
  uint8_t copy_kind;  // CopyKind
  uint8_t src_kind;   // MemKind
  uint8_t dst_kind;   // MemKind
  uint8_t pad;
  uint16_t src_device;
  uint16_t dst_device;
};
static_assert(sizeof(MemcpyRec) == 4 + 60 + 16);

struct MemsetRec {
  RecHeader h;
  OpCommon op;
  uint64_t bytes;
  uint32_t value;
  uint8_t element_size;  // 1, 2 or 4; 0: unknown (a graph replay's memset)
  uint8_t pad[3];
};
static_assert(sizeof(MemsetRec) == 4 + 60 + 16);

enum class SyncKind : uint8_t {
  Context = 1,     // cuCtxSynchronize
  Stream = 2,      // cuStreamSynchronize
  Event = 3,       // cuEventSynchronize
  StreamWait = 4,  // cuStreamWaitEvent (GPU-side wait; CPU time is the call only)
  StreamQuery = 5,
  EventQuery = 6,
};

// SyncRec::kind holds the SyncKind in its low bits and this flag: the call had begun and not
// returned when the process ended (a thread blocked in it): cpu_end is where capture ended,
// result is 0 (no result came back).
inline constexpr uint8_t kSyncOpen = 0x80;

struct SyncRec {
  RecHeader h;
  int64_t cpu_begin;
  int64_t cpu_end;
  uint64_t event;  // CUevent handle, if any
  uint32_t tid;
  uint32_t stream;  // stream id, if any
  uint16_t device;
  uint16_t api;
  int32_t result;
  uint8_t kind;  // SyncKind
  uint8_t pad[3];
  uint64_t corr;
};
static_assert(sizeof(SyncRec) == 4 + 8 * 3 + 4 * 2 + 2 * 2 + 4 + 4 + 8);
inline uint8_t sync_kind(const SyncRec& s) { return uint8_t(s.kind & ~kSyncOpen); }
inline bool sync_open(const SyncRec& s) { return (s.kind & kSyncOpen) != 0; }

enum class MemOp : uint8_t { Alloc = 1, Free = 2 };

struct MemoryRec {
  RecHeader h;
  int64_t cpu_begin;
  int64_t cpu_end;
  uint64_t address;
  uint64_t bytes;  // 0 for Free when unknown: match the address of the Alloc
  uint32_t tid;
  uint32_t stream;  // for async (stream-ordered) allocations
  uint16_t device;
  uint16_t api;
  int32_t result;
  uint8_t op;        // MemOp
  uint8_t mem_kind;  // MemKind: Device, Pinned (host alloc), Managed
  uint8_t pad[2];
};
static_assert(sizeof(MemoryRec) == 4 + 8 * 4 + 4 * 2 + 2 * 2 + 4 + 4);

struct ApiRec {
  RecHeader h;
  int64_t cpu_begin;
  int64_t cpu_end;
  uint64_t corr;
  uint64_t arg;  // main handle argument (event for cuEventRecord, ...)
  uint32_t tid;
  uint32_t stream;
  uint16_t api;
  uint16_t device;
  int32_t result;
};
static_assert(sizeof(ApiRec) == 4 + 8 * 4 + 4 * 2 + 2 * 2 + 4);

enum class RangeKind : uint8_t { PushPop = 1, StartEnd = 2 };
// RangeRec::kind holds the RangeKind in its low bits and this flag: the range's end was not
// captured (still open at the end of the trace): cpu_end is where the trace ends.
inline constexpr uint8_t kRangeOpen = 0x80;
enum class RangeSource : uint8_t { Nvtx = 1, Api = 2 };  // Api: cutrace's C/Python annotation API

struct RangeRec {
  RecHeader h;
  int64_t cpu_begin;
  int64_t cpu_end;
  int64_t gpu_start;  // GPU projection: earliest start of the GPU work launched inside the range
  int64_t gpu_end;    // ... latest end; both 0 when no timed GPU work was launched inside
  uint64_t id;        // unique per file (start/end ranges: NVTX's range id)
  uint32_t tid;       // thread that opened the range
  uint32_t end_tid;   // thread that closed it (start/end ranges may end elsewhere)
  uint32_t name_id;
  uint32_t domain_id;  // string id of the NVTX domain name, 0 = the default domain
  uint32_t category;
  uint32_t color;    // ARGB, 0 = none
  uint32_t gpu_ops;  // GPU operations launched inside
  uint16_t depth;    // push/pop nesting depth on its thread (0 = outermost)
  uint8_t kind;      // RangeKind
  uint8_t source;    // RangeSource
};
static_assert(sizeof(RangeRec) == 4 + 8 * 5 + 4 * 7 + 2 + 1 + 1);
inline RangeKind range_kind(const RangeRec& g) { return RangeKind(g.kind & ~kRangeOpen); }
// Open at the end of the trace: flagged, or (older writers) written with cpu_end = 0.
inline bool range_open(const RangeRec& g) { return (g.kind & kRangeOpen) || g.cpu_end == 0; }
// Where tools end a range: cpu_end, or cpu_begin for an open range of an older writer.
inline int64_t range_end(const RangeRec& g) { return g.cpu_end >= g.cpu_begin ? g.cpu_end : g.cpu_begin; }

struct MarkRec {
  RecHeader h;
  int64_t ts;
  uint32_t tid;
  uint32_t name_id;
  uint32_t domain_id;
  uint32_t category;
  uint32_t color;
  uint8_t source;  // RangeSource
  uint8_t pad[3];
};
static_assert(sizeof(MarkRec) == 4 + 8 + 4 * 5 + 4);

// NVTX scalar payload types: the values of nvtxPayloadType_t.
enum class PayloadType : uint8_t { U64 = 1, I64 = 2, F64 = 3, U32 = 4, I32 = 5, F32 = 6 };
inline constexpr uint8_t kPayloadTypeMax = 6;

// The payload of the Range or Mark record that directly follows it (same tid; a Range: id =
// target, a Mark: ts). `bits`: U64/I64/F64 the value's 64 bits; U32 zero- and I32 sign-extended
// to 64; F32 the float's 32 bits, zero-extended.
struct PayloadRec {
  RecHeader h;
  uint64_t target;  // RangeRec::id; 0 for a mark
  int64_t ts;       // RangeRec::cpu_begin or MarkRec::ts
  uint32_t tid;
  uint16_t of;   // RecType of the event: Range or Mark
  uint8_t type;  // PayloadType
  uint8_t pad;
  uint64_t bits;
};
static_assert(sizeof(PayloadRec) == 36);

// Per-core utilisation; followed by `ncores` uint16 values in hundredths of a percent.
struct CpuSampleRec {
  RecHeader h;
  int64_t ts;
  uint16_t ncores;
  uint16_t total_util;    // whole host, hundredths of a percent (0..10000)
  uint32_t process_util;  // this process, hundredths of a percent of one core (may exceed 10000)
};
static_assert(sizeof(CpuSampleRec) == 20);

struct GpuSampleRec {
  RecHeader h;
  int64_t ts;
  uint16_t device;
  uint16_t util;      // percent 0..100 (NVML utilization.gpu)
  uint16_t mem_util;  // percent
  uint16_t temp_c;
  uint32_t sm_clock_mhz;
  uint32_t power_mw;
  uint64_t mem_used;
  uint64_t mem_total;
};
static_assert(sizeof(GpuSampleRec) == 44);

enum class CounterScope : uint8_t { Process = 1, Cpu = 2 };  // Process: all its threads; Cpu: all tasks on it
enum class CounterUnit : uint8_t { Events = 0, Nanoseconds = 1 };

struct CounterDefRec {
  RecHeader h;
  uint16_t counter;  // the id CounterValue entries use; unique in the file
  uint8_t scope;     // CounterScope
  uint8_t unit;      // CounterUnit
  int32_t cpu;       // the CPU for scope Cpu, -1 otherwise
  uint32_t name_id;  // as asked for: "cycles", "context-switches", "msr/tsc", ...
  uint8_t source;    // 0 perf_event_open; 1 getrusage (perf_event_open refused a software counter)
  uint8_t pad[3];
};
static_assert(sizeof(CounterDefRec) == 20);

// Followed by `count` CounterValue.
struct CounterSampleRec {
  RecHeader h;
  int64_t ts;           // end of the interval
  int64_t interval_ns;  // length of the interval the deltas cover
  uint16_t count;
  uint16_t pad;
};
static_assert(sizeof(CounterSampleRec) == 24);

struct CounterValue {
  uint16_t counter;  // CounterDefRec.counter
  uint16_t running;  // share of the interval the counter was counting, 1/10000 (multiplexed: < 10000)
  uint32_t pad;
  uint64_t delta;  // events (or ns) in the interval, scaled up by 10000/running when multiplexed
};
static_assert(sizeof(CounterValue) == 16);

struct CounterMissingRec {
  RecHeader h;
  uint32_t name_id;    // the counter as asked for
  uint32_t reason_id;  // why it is missing, one line ("no hardware PMU ...", "perf_event_paranoid is 2 ...")
  int32_t err;         // errno from perf_event_open; 0 when it was never tried (unknown name)
  uint8_t scope;       // CounterScope asked for
  uint8_t pad[3];
};
static_assert(sizeof(CounterMissingRec) == 20);

struct ClockSyncRec {
  RecHeader h;
  int64_t monotonic_ns;
  int64_t realtime_ns;
};
static_assert(sizeof(ClockSyncRec) == 20);

struct DroppedRec {
  RecHeader h;
  int64_t ts;
  uint32_t tid;
  uint32_t pad;
  uint64_t count;  // records lost on this thread since the previous DroppedRec
};
static_assert(sizeof(DroppedRec) == 28);

// What a LossRec counts: the records of the trace that are missing, by the record they would be.
enum LossKind : uint8_t {
  kLossKernel = 0,  // Kernel records (launches, graph replays)
  kLossMemcpy = 1,
  kLossMemset = 2,
  kLossSync = 3,  // Sync records (synchronisations, queries, stream waits)
  kLossMemory = 4,
  kLossApi = 5,         // Api records (event records)
  kLossRangeBegin = 6,  // ranges whose push or start was not captured: the range is missing
  kLossRangeEnd = 7,    // pops/ends not captured: the range's end is missing
  kLossMark = 8,
  kLossOther = 9,  // thread names, window edges, context changes
  kLossKinds = 10,
};

enum class LossReason : uint8_t {
  Budget = 1,  // the capture buffer budget (CUTRACE_BUFFER_MB) was in use
  Exit = 2,    // a call in progress when the process ended (exit or fatal signal) did not finish
};

// Records lost on one thread between begin_ns and end_ns (the first and the last of them): the
// trace is incomplete there. Every lost record is in exactly one LossRec.
struct LossRec {
  RecHeader h;
  int64_t begin_ns;
  int64_t end_ns;
  uint32_t tid;
  uint8_t reason;  // LossReason
  uint8_t pad[3];
  uint64_t count[kLossKinds];
};
static_assert(sizeof(LossRec) == 108);

enum class WindowEdge : uint8_t { Begin = 1, End = 2 };

struct WindowRec {
  RecHeader h;
  int64_t ts;
  uint32_t index;      // 0,1,2,... per file
  uint32_t reason_id;  // string: "process", "cudaProfilerApi", "nvtx:step_*", "signal", ...
  uint8_t edge;        // WindowEdge
  uint8_t pad[3];
};
static_assert(sizeof(WindowRec) == 24);

struct EndRec {
  RecHeader h;
  int64_t ts;
  uint64_t records;  // records written before this one
  uint64_t dropped;  // total records dropped (the sum of the Loss, or 1.x Dropped, records)
  uint32_t flags;    // EndFlags
};
static_assert(sizeof(EndRec) == 32);

enum EndFlags : uint32_t {
  kEndClean = 1 << 0,       // normal shutdown
  kEndSignal = 1 << 1,      // flushed from a fatal-signal handler
  kEndWriteError = 1 << 2,  // a write failed earlier: blocks are missing
};

// Call stacks (CUTRACE_BACKTRACE). Module and Stack records are interned: each is written once,
// before the first record that uses its id. Frames are return addresses (the caller's PC after
// the call instruction), innermost first, the shim's own frames removed.
struct ModuleRec {
  RecHeader h;
  uint32_t module;       // id used by StackFrame (1, 2, ...; 0 = no module: offset is the raw PC)
  uint32_t path_id;      // string: file path as the loader saw it ("[vdso]" when it has no file)
  uint64_t base;         // load bias: offset = PC - base is the address in the ELF file
  uint64_t size;         // bytes from the lowest to the highest address of its PT_LOAD segments
  uint32_t build_id_id;  // string: GNU build-id in lowercase hex, 0 = none
  uint32_t pad;
};
static_assert(sizeof(ModuleRec) == 36);

struct StackFrame {
  uint32_t module;  // ModuleRec id, 0 = unknown (then offset is the raw PC)
  uint64_t offset;  // return address - module base
};
static_assert(sizeof(StackFrame) == 12);

// Followed by `depth` StackFrame values.
struct StackRec {
  RecHeader h;
  uint32_t stack;  // id (1, 2, ...)
  uint16_t depth;  // frames that follow (at most kMaxStackFrames)
  uint16_t pad;
};
static_assert(sizeof(StackRec) == 12);
inline constexpr uint16_t kMaxStackFrames = 24;

struct OpStackRec {
  RecHeader h;
  uint64_t corr;     // the operation's correlation id (Kernel/Memcpy/Memset/Sync corr)
  uint32_t stack;    // StackRec id
  uint16_t op_type;  // RecType of the operation record (it may come later: GPU ops are written
                     // when their GPU times are known)
  uint16_t pad;
};
static_assert(sizeof(OpStackRec) == 20);

// The hang watchdog (CUTRACE_HANG_TIMEOUT): GPU work incomplete, or a thread blocked in a
// synchronisation, longer than timeout_ns. A Hang record, then its HangItem records (same hang).
struct HangRec {
  RecHeader h;
  int64_t ts;                     // when the watchdog reported it
  int64_t since;                  // the oldest stuck item's start (see HangItemRec::begin)
  int64_t timeout_ns;             // the watchdog's timeout
  uint32_t hang;                  // 1, 2, ... per file
  uint32_t ops;                   // operations launched and not complete (all streams)
  uint32_t threads;               // threads blocked in a synchronisation
  uint32_t report_id;             // string: path of the text report (DIR/hang.<host>.rank<N>.txt)
  uint64_t collectives_launched;  // NCCL kernels launched so far
  uint64_t collectives_done;      // ... of which complete
};
static_assert(sizeof(HangRec) == 4 + 8 * 3 + 4 * 4 + 8 * 2);

enum class HangItemKind : uint8_t {
  Op = 1,              // launched, not complete: begin/end = the launch call, stream, name, stack
  Thread = 2,          // a thread blocked in a synchronisation since begin: api, stream or event
  CollectiveDone = 3,  // one of the last collectives completed: begin/end = its GPU span
};

struct HangItemRec {
  RecHeader h;
  int64_t begin;
  int64_t end;     // 0 for a Thread item
  uint64_t corr;   // the operation's correlation id (Op, CollectiveDone); 0 for a Thread item
  uint64_t seq;    // collective sequence number (the process's NCCL kernels by launch, from 1); 0: none
  uint64_t event;  // Thread: the CUevent waited for, if any
  uint32_t hang;   // HangRec::hang
  uint32_t tid;
  uint32_t stream;   // stream id, 0 = none
  uint32_t name_id;  // Op, CollectiveDone: kernel name or "memcpy HtoD" / "memset"; Thread: api name
  uint32_t stack;    // StackRec id of the launch's call stack, 0 = none captured
  uint16_t op_type;  // RecType of the operation (Kernel, Memcpy, Memset); Sync for a Thread item
  uint16_t device;
  uint8_t kind;       // HangItemKind
  uint8_t sync_kind;  // Thread: SyncKind
  uint8_t pad[2];
};
static_assert(sizeof(HangItemRec) == 4 + 8 * 5 + 4 * 5 + 2 * 2 + 4);

// The work a Hang record reported completed (every op item done, every blocked thread returned).
struct HangEndRec {
  RecHeader h;
  int64_t ts;        // when the watchdog saw it
  int64_t stuck_ns;  // ts - HangRec::since
  uint32_t hang;
  uint32_t pad;
};
static_assert(sizeof(HangEndRec) == 4 + 8 * 2 + 4 * 2);

// Python call stacks (CUTRACE_PYTHON_STACKS). A PyCode record is written once per code object,
// before the first PyStack that names it.
struct PyCodeRec {
  RecHeader h;
  uint32_t code;         // id used by PyFrame (1, 2, ...)
  uint32_t file_id;      // string: co_filename ("?" when the object could not be read)
  uint32_t name_id;      // string: co_name
  uint32_t qualname_id;  // string: co_qualname (co_name before 3.11)
  uint32_t first_line;   // co_firstlineno
};
static_assert(sizeof(PyCodeRec) == 24);

struct PyFrame {
  uint32_t code;  // PyCodeRec id
  uint32_t line;  // source line of the instruction executing (0 = unknown)
};
static_assert(sizeof(PyFrame) == 8);

// Shares its id space with StackRec (an OpStack names either). Followed by `py_depth` PyFrame
// values (innermost first), then `depth` StackFrame values (the native stack, as in StackRec).
struct PyStackRec {
  RecHeader h;
  uint32_t stack;     // id (1, 2, ...), never also used by a StackRec
  uint16_t py_depth;  // at most kMaxPyFrames
  uint16_t depth;     // at most kMaxStackFrames
};
static_assert(sizeof(PyStackRec) == 12);
inline constexpr uint16_t kMaxPyFrames = 32;

#pragma pack(pop)

// XXH32 with seed 0 (the xxHash 32-bit algorithm, as in the LZ4 frame format): the block
// checksum. About 7 GB/s on one core, where byte-serial FNV-1a manages under 1 GB/s.
namespace xxh32_detail {
inline constexpr uint32_t kP1 = 0x9E3779B1u, kP2 = 0x85EBCA77u, kP3 = 0xC2B2AE3Du, kP4 = 0x27D4EB2Fu, kP5 = 0x165667B1u;
inline uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
inline uint32_t read32(const unsigned char* p) {  // little-endian hosts only, like the format
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint32_t lane_step(uint32_t acc, uint32_t input) { return rotl(acc + input * kP2, 13) * kP1; }
}  // namespace xxh32_detail

inline uint32_t xxh32(const void* data, uint64_t n) {
  using namespace xxh32_detail;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  const unsigned char* end = p + n;
  uint32_t h;
  if (n >= 16) {
    uint32_t v1 = kP1 + kP2, v2 = kP2, v3 = 0, v4 = 0u - kP1;
    for (; end - p >= 16; p += 16) {
      v1 = lane_step(v1, read32(p));
      v2 = lane_step(v2, read32(p + 4));
      v3 = lane_step(v3, read32(p + 8));
      v4 = lane_step(v4, read32(p + 12));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
  } else {
    h = kP5;
  }
  h += static_cast<uint32_t>(n);
  for (; end - p >= 4; p += 4) h = rotl(h + read32(p) * kP3, 17) * kP4;
  for (; p < end; ++p) h = rotl(h + *p * kP5, 11) * kP1;
  h ^= h >> 15;
  h *= kP2;
  h ^= h >> 13;
  h *= kP3;
  h ^= h >> 16;
  return h;
}

}  // namespace cutrace::trace
