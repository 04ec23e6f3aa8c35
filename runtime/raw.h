// The record an application thread hands to the collector (one per intercepted call), as the
// wrappers fill it and the collector reads it. In the thread's chunks it is stored packed
// (runtime/raw_pack.h): only the fields its kind uses; the collector turns it into the on-disk
// records of trace/format.h.
#pragma once
#include <cuda.h>
#include <cstdint>

namespace cutrace {

enum class RawKind : uint8_t {
  Kernel = 1,  // kernel launch or graph launch (sub = trace::KernelKind)
  Memcpy = 2,
  Memset = 3,
  Sync = 4,         // sub = trace::SyncKind
  Memory = 5,       // sub = trace::MemOp
  EventRecord = 6,  // the application recorded one of its events: used for cross-stream timing
  StreamWait = 7,
  RangePush = 9,  // NVTX / API annotations (nvtx_bridge/)
  RangePop = 10,
  RangeStart = 11,
  RangeEnd = 12,
  Mark = 13,
  ThreadName = 14,
  Window = 15,        // capture window edge (sub = trace::WindowEdge)
  Context = 16,       // the thread's current context changed: the calls after it ran in `ctx`
  CategoryName = 17,  // NVTX category `id` of `domain` named
};
inline constexpr int kRawKinds = 18;

enum RawFlags : uint16_t {
  kRawPerThread = 1 << 0,  // stream 0 means the per-thread default stream
  kRawBlocking = 1 << 1,   // the call returns after the GPU work (synchronous memcpy/memset)
  kRawCaptured = 1 << 2,   // stream was capturing a graph: no events recorded
  kRawAsync = 1 << 3,
  kRawCupti = 1 << 4,       // GPU times come from CUPTI, joined on the correlation id
  kRawNameSlot = 1 << 5,    // the name was copied into the record (packed form: it follows)
  kRawStackSlot = 1 << 6,   // the call stack is in the thread's stack ring (next slot)
  kRawNotSampled = 1 << 7,  // GPU work issued between GPU-timing sample windows: not timed
  kRawNameCut = 1 << 8,     // the copied name was longer than kMaxInlineName: cut on a UTF-8 boundary
  kRawPayload = 1 << 9,     // annotation: nvtx.payload_type and nvtx.payload are set (packed: they follow)
};

struct RawRecord {
  RawKind kind;
  uint8_t sub;
  uint16_t api;    // index of the traced function (shim/binding.h)
  int32_t result;  // CUresult returned to the application
  uint16_t flags;  // RawFlags
  uint16_t pad;
  uint32_t cupti_corr;  // CUPTI's correlation id (cupti timing mode)
  uint64_t t0, t1;      // ticks at call entry and return (runtime/ticks.h)
  uint64_t corr;        // assigned by the collector: (thread index << 40) | record number
  CUcontext ctx;
  CUstream stream;
  CUevent ev_start;  // pool events recorded around the operation (events mode: both)
  CUevent ev_end;
  union {
    struct {
      void* func;
      uint32_t grid[3];
      uint32_t block[3];
      uint32_t shmem;
    } kernel;  // func: CUfunction/CUkernel, or CUgraphExec
    struct {
      uint64_t bytes;
      uint64_t src, dst;
      uint8_t copy_kind, src_kind, dst_kind;
    } copy;
    struct {
      uint64_t bytes;
      uint32_t value;
      uint8_t elem;
    } set;
    struct {
      CUevent event;
    } ev;  // event for Sync(Event/EventQuery), EventRecord, StreamWait
    struct {
      uint64_t address, bytes;
      uint8_t mem_kind;
    } mem;
    // name: a stable string (registered, or a literal); else kRawNameSlot is set.
    struct {
      const char* name;
      uint64_t id;
      const void* domain;
      uint32_t category, color;
      uint8_t source;
      uint8_t payload_type;  // trace::PayloadType, with kRawPayload
      uint64_t payload;      // its bits as trace::PayloadRec::bits
    } nvtx;
  };
};

}  // namespace cutrace
