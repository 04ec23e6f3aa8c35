// Internal declarations shared by the source files of the fake CUDA driver
// (build/test/fake_cuda/libcuda.so.1): handle structs, global state, the virtual-GPU timeline and
// the helpers every entry point uses. Nothing declared here is exported: the `fake` namespace and
// the handle structs are hidden, and only functions defined with FAKE_API become dynamic symbols
// (checked at the Makefile's -O2; at -O0 some std inline helpers also escape as weak symbols).
// Exported functions never call each other (a preloaded profiler may wrap any of them): aliases
// such as cuCtxDestroy / cuCtxDestroy_v2 share a file-local implementation instead.
//
// Virtual GPU model, in short: GPU time is host CLOCK_MONOTONIC in ns. Every stream keeps
// `readyNs`, the end of its last queued op. An op submitted at host time `now` occupies
// [max(readyNs, now + launch latency), + duration). Bytes are moved at submission time (device
// memory is host memory), so results are real; only the *timing* is virtual. Not modelled: the
// legacy stream's implicit synchronisation with other blocking streams, concurrency limits,
// stream priorities' effect on scheduling.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <cupti_driver_cbid.h>  // an enum only: the callback ids of the exported entry points

#include "test/fake_cuda/fake_cuda_cupti.h"
#include "test/fake_cuda/fake_cuda_stats.h"
#include "test/fake_cuda/fake_cuda_undef.h"

// An exported driver entry point: C linkage, default visibility.
#define FAKE_API extern "C" __attribute__((visibility("default")))
#define FAKE_HIDDEN __attribute__((visibility("hidden")))

// The handle structs are hidden before any use, so that std containers of them (and their
// out-of-line template code) are not exported from the library either.
struct FAKE_HIDDEN CUctx_st;
struct FAKE_HIDDEN CUstream_st;
struct FAKE_HIDDEN CUevent_st;
struct FAKE_HIDDEN CUmod_st;
struct FAKE_HIDDEN CUfunc_st;
struct FAKE_HIDDEN CUlib_st;
struct FAKE_HIDDEN CUkern_st;
struct FAKE_HIDDEN CUgraph_st;
struct FAKE_HIDDEN CUgraphNode_st;
struct FAKE_HIDDEN CUgraphExec_st;

// Defines the pair `name` (stream 0 = the context's legacy stream) and `name<suffix>` (stream 0 =
// the calling thread's per-thread default stream), both forwarding to
// impl(fake::DefaultStream, args...). `params` and `args` are parenthesised lists. Each call is
// an ApiCall (the fake CUPTI's API callbacks and correlation id, fake_cuda_cupti.h): `name` and
// `name<suffix>` must both have a CUPTI_DRIVER_TRACE_CBID_ (cupti_driver_cbid.h).
#define FAKE_UNPAREN(...) __VA_ARGS__
#define FAKE_EXPORT_PT(name, suffix, impl, params, args)                        \
  FAKE_API CUresult name params {                                               \
    fake::ApiCall call(CUPTI_DRIVER_TRACE_CBID_##name, #name);                  \
    return call.done(impl(fake::DefaultStream::kLegacy, FAKE_UNPAREN args));    \
  }                                                                             \
  FAKE_API CUresult name##suffix params {                                       \
    fake::ApiCall call(CUPTI_DRIVER_TRACE_CBID_##name##suffix, #name #suffix);  \
    return call.done(impl(fake::DefaultStream::kPerThread, FAKE_UNPAREN args)); \
  }
// Stream-ordered ops: `name` + `name_ptsz`. Synchronous copies/memsets: `name` + `name_ptds`.
#define FAKE_EXPORT_PTSZ(name, impl, params, args) FAKE_EXPORT_PT(name, _ptsz, impl, params, args)
#define FAKE_EXPORT_PTDS(name, impl, params, args) FAKE_EXPORT_PT(name, _ptds, impl, params, args)

namespace fake FAKE_HIDDEN {

// Tag stored first in every handle struct and in the live-handle registry.
enum class Kind : uint32_t {
  kContext = 0xFA4EC000,
  kStream,
  kEvent,
  kModule,
  kFunction,
  kLibrary,
  kKernel,
  kGraph,
  kGraphNode,
  kGraphExec,
};

// What stream handle 0 means for the entry point being served.
enum class DefaultStream { kLegacy, kPerThread };

// ---- clock and configuration -------------------------------------------------------------------

constexpr size_t kTotalDeviceMemory = size_t{80} << 30;  // 80 GiB per device
constexpr int kMaxDevices = 64;
constexpr int kDriverVersion = 13000;

int64_t nowNs();                      // CLOCK_MONOTONIC
void sleepUntil(int64_t deadlineNs);  // absolute CLOCK_MONOTONIC deadline
int64_t launchLatencyNs();            // env FAKE_CUDA_LAUNCH_LATENCY_NS, default 2000
// How long a cuEventRecord on an idle stream (the collector's GPU clock anchors) is held up after
// stamping its event, as if preempted there (lock held): env FAKE_CUDA_IDLE_RECORD_STALL_NS
// (default 0) for every FAKE_CUDA_IDLE_RECORD_STALL_EVERY-th such record (default 1), 0 for others.
int64_t idleRecordStallNs();
int deviceCount();  // env FAKE_CUDA_DEVICE_COUNT, default 2, at most kMaxDevices

inline uint64_t copyDurationNs(size_t bytes) { return 1000 + bytes / 10; }
inline uint64_t setDurationNs(size_t bytes) { return 500 + bytes / 100; }

// ---- operations on the virtual GPU --------------------------------------------------------------

// A strided copy of `depth` slices of `height` rows of `widthBytes` bytes each.
struct CopyDesc {
  const char* src = nullptr;
  char* dst = nullptr;
  size_t widthBytes = 0, height = 1, depth = 1;
  size_t srcPitch = 0, srcSlicePitch = 0, dstPitch = 0, dstSlicePitch = 0;
  size_t bytes() const { return widthBytes * height * depth; }
  void run() const;
};

// A 2D fill of `height` rows of `width` elements of `elementSize` (1, 2 or 4) bytes.
struct SetDesc {
  char* dst = nullptr;
  size_t pitch = 0;
  uint32_t value = 0;
  unsigned elementSize = 1;
  size_t width = 0, height = 1;
  size_t bytes() const { return width * elementSize * height; }
  void run() const;
};

enum class OpKind { kKernel, kCopy, kSet, kGraph };

// One unit of stream work: what runs, how long it takes, and (for graphs) its children.
struct Op {
  OpKind kind = OpKind::kKernel;
  uint64_t durationNs = 0;
  CUfunction func = nullptr;  // kKernel only; informational
  CopyDesc copy;
  SetDesc set;
  std::vector<Op> children;  // kGraph only: the graph's nodes, in order
  void applyBytes() const;   // performs the memory effects (copies, fills), recursively
};

Op kernelOp(CUfunc_st* func);
Op copyOp(const CopyDesc& copy);
Op setOp(const SetDesc& set);

// ---- process state ------------------------------------------------------------------------------

enum class MemKind { kDevice, kManaged, kHostAlloc, kHostRegistered };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  MemKind kind = MemKind::kDevice;
  CUctx_st* ctx = nullptr;  // may dangle once the context is destroyed: informational only
  CUdevice device = 0;
  unsigned flags = 0;
  uint64_t id = 0;
};

// Registry entry of a live handle (a struct, not the bare enum, so that the map stays hidden).
struct HandleInfo {
  Kind kind;
};

struct State {
  std::mutex mu;  // guards everything below and every handle struct; never held while sleeping
  std::unordered_map<const void*, HandleInfo> live;  // every valid handle
  CUctx_st* primaryContexts[kMaxDevices] = {};       // by device ordinal; created on first use
  size_t deviceBytesInUse[kMaxDevices] = {};         // by device ordinal
  std::map<uintptr_t, Allocation> allocations;       // by base address
  FakeCudaStats stats = {};
  uint64_t lastId = 0;
};

State& state();

// Holds state().mu from construction until unlock() or destruction. (Not std::unique_lock: its
// out-of-line members would be exported from the library.)
class Lock {
 public:
  Lock();
  ~Lock();
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;
  void unlock();

 private:
  bool held_;
};

Lock lockState();   // `Lock lock = lockState();` (guaranteed copy elision)
uint64_t nextId();  // process-unique, increasing; lock held

CUresult checkInit();  // CUDA_ERROR_NOT_INITIALIZED before a successful cuInit
void markInitialized();

// Live-handle registry (lock held). lookup() returns null for garbage, freed or wrong-kind handles.
void registerHandle(const void* handle, Kind kind);
void unregisterHandle(const void* handle);
bool isLive(const void* handle, Kind kind);
template <class T>
T* lookup(const void* handle) {
  if (handle == nullptr || !isLive(handle, T::kKind)) return nullptr;
  T* object = static_cast<T*>(const_cast<void*>(handle));
  return object->magic == T::kKind ? object : nullptr;
}

// ---- contexts (lock held) -----------------------------------------------------------------------

bool validDevice(CUdevice dev);
CUctx_st* currentContext();                                // null if none or no longer valid
CUresult requireContext(CUctx_st** out);                   // NOT_INITIALIZED / INVALID_CONTEXT / SUCCESS
CUresult contextOrCurrent(CUcontext ctx, CUctx_st** out);  // ctx, or the current one if null
int64_t contextReadyNs(const CUctx_st* ctx);               // when every stream of ctx is idle

// ---- streams (lock held) ------------------------------------------------------------------------

CUstream_st* newStream(CUctx_st* ctx, unsigned flags, int priority);
void deleteStream(CUstream_st* stream);
// Maps a user stream handle to a stream: 0 per `d`, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a
// stream created by cuStreamCreate. Fails with NOT_INITIALIZED / INVALID_CONTEXT / INVALID_HANDLE.
CUresult resolveStream(CUstream handle, DefaultStream d, CUstream_st** out);

// Reserves [start, end) on the stream's timeline for an op of `durationNs`.
struct Span {
  int64_t start, end;
};
Span enqueue(CUstream_st* stream, uint64_t durationNs);

// Runs `op` on the stream (or appends it to the stream's capture graph). Blocking ops wait, with
// the lock released, until the op ends; they are refused on a capturing stream.
// submitLocked is called with the lock held and may release it.
CUresult submitLocked(Lock& lock, CUstream handle, DefaultStream d, const Op& op, bool blocking);
CUresult submit(CUstream handle, DefaultStream d, const Op& op, bool blocking);

// Runs `body(stream)` under the lock on the resolved stream; for the small stream getters.
template <class Body>
CUresult withStream(CUstream handle, DefaultStream d, Body body) {
  Lock lock = lockState();
  CUstream_st* stream = nullptr;
  if (CUresult r = resolveStream(handle, d, &stream)) return r;
  return body(stream);
}

// ---- memory (lock held) -------------------------------------------------------------------------

const Allocation* findAllocation(uintptr_t address);   // the allocation containing address
bool deviceRangeValid(CUdeviceptr ptr, size_t bytes);  // inside one tracked allocation
// Converts a 3D copy descriptor (host/device/unified memory only) into a CopyDesc.
CUresult copyFrom3D(const CUDA_MEMCPY3D& p, CopyDesc* out);
// Validates a memset target and builds its SetDesc.
CUresult makeSet(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elementSize, size_t width, size_t height,
                 SetDesc* out);

// ---- CUPTI hooks (fake_cupti_hooks.cpp, fake_cuda_cupti.h) --------------------------------------

// One call of an exported entry point, seen by the fake CUPTI's hooks if set: api_enter at
// construction (the call's correlation id then tags the work it submits), api_exit at destruction.
class ApiCall {
 public:
  ApiCall(uint32_t cbid, const char* name);
  ~ApiCall();
  ApiCall(const ApiCall&) = delete;
  ApiCall& operator=(const ApiCall&) = delete;
  CUresult done(CUresult r) {
    call_.result = r;
    return r;
  }

 private:
  const FakeCudaCuptiHooks* hooks_;
  FakeCudaApiCall call_;
};

// Reports the op just enqueued on `stream` over `span` to the hooks and FAKE_CUDA_OP_LOG (lock held).
void reportOp(const CUstream_st* stream, const Op& op, const Span& span);

// ---- modules and graphs (lock held) -------------------------------------------------------------

CUfunc_st* resolveFunction(const void* handle);     // a CUfunction, or a CUkernel cast to one
void captureOp(CUstream_st* stream, const Op& op);  // appends op as a node of the capture graph
void deleteCapture(CUstream_st* stream);            // drops an unfinished capture

}  // namespace FAKE_HIDDEN

// ---- handle structs (the types behind CUcontext, CUstream, ...) ---------------------------------

struct FAKE_HIDDEN CUctx_st {
  static constexpr fake::Kind kKind = fake::Kind::kContext;
  fake::Kind magic = kKind;
  CUdevice device = 0;
  unsigned flags = 0;
  uint64_t id = 0;
  bool primary = false;
  int primaryRefs = 0;  // primary contexts: active while > 0
  CUstream_st* legacyStream = nullptr;
  std::vector<CUstream_st*> streams;  // all streams, legacy and per-thread ones included
};

struct FAKE_HIDDEN CUstream_st {
  static constexpr fake::Kind kKind = fake::Kind::kStream;
  fake::Kind magic = kKind;
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  int priority = 0;
  uint64_t id = 0;
  bool builtin = false;           // legacy or per-thread stream: cannot be destroyed
  int64_t readyNs = 0;            // end of the last queued op
  CUgraph_st* capture = nullptr;  // graph being captured into, if capturing
  bool captureOwnsGraph = false;  // false for cuStreamBeginCaptureToGraph
  uint64_t captureId = 0;
  CUstreamCaptureMode captureMode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  CUgraphNode captureTail = nullptr;  // last captured node (the capture's dependency)
};

struct FAKE_HIDDEN CUevent_st {
  static constexpr fake::Kind kKind = fake::Kind::kEvent;
  enum class Recorded { kNever, kOnStream, kInCapture };
  fake::Kind magic = kKind;
  unsigned flags = 0;
  Recorded recorded = Recorded::kNever;
  int64_t timeNs = 0;
};

// One `kernel <name> <duration_ns> [regs=<n>] [smem=<bytes>]` line of a module image.
struct FAKE_HIDDEN CUfunc_st {
  static constexpr fake::Kind kKind = fake::Kind::kFunction;
  fake::Kind magic = kKind;
  CUmod_st* module = nullptr;
  std::string name;
  uint64_t durationNs = 0;
  int numRegs = 32;
  int sharedBytes = 0;
  int maxDynamicSharedBytes = 48 * 1024;
  bool failLaunch = false;  // name contains "__fail_launch"
};

struct FAKE_HIDDEN CUmod_st {
  static constexpr fake::Kind kKind = fake::Kind::kModule;
  fake::Kind magic = kKind;
  CUlib_st* library = nullptr;  // owning library, for modules of cuLibraryLoad*
  std::vector<std::unique_ptr<CUfunc_st>> functions;
};

struct FAKE_HIDDEN CUkern_st {
  static constexpr fake::Kind kKind = fake::Kind::kKernel;
  fake::Kind magic = kKind;
  CUlib_st* library = nullptr;
  CUfunc_st* function = nullptr;
};

struct FAKE_HIDDEN CUlib_st {
  static constexpr fake::Kind kKind = fake::Kind::kLibrary;
  fake::Kind magic = kKind;
  CUmod_st* module = nullptr;
  std::vector<std::unique_ptr<CUkern_st>> kernels;
};

struct FAKE_HIDDEN CUgraphNode_st {
  static constexpr fake::Kind kKind = fake::Kind::kGraphNode;
  fake::Kind magic = kKind;
  CUgraph_st* graph = nullptr;
  fake::Op op;
};

struct FAKE_HIDDEN CUgraph_st {
  static constexpr fake::Kind kKind = fake::Kind::kGraph;
  fake::Kind magic = kKind;
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // in insertion (= execution) order
};

struct FAKE_HIDDEN CUgraphExec_st {
  static constexpr fake::Kind kKind = fake::Kind::kGraphExec;
  fake::Kind magic = kKind;
  std::vector<fake::Op> ops;
  uint64_t durationNs = 0;  // sum of the nodes' durations
};
