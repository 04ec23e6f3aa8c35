// The hot path shared by every wrapper: reserve room in the thread's chunk, timestamp, record pool
// events around GPU work, pack and publish with one release store. No locks, no allocation, no
// syscalls.
#pragma once
#include <cuda.h>
#include "collector/cupti_source.h"
#include "runtime/config.h"
#include "runtime/driver.h"
#include "runtime/thread_state.h"
#include "runtime/ticks.h"
#include "shim/backtrace.h"
#include "shim/binding.h"
#include "shim/py_stack.h"
#include "trace/format.h"

namespace cutrace {

extern GpuTiming g_timing;  // copy of config().timing, read on the hot path

// Op::begin's `stack` bits.
inline constexpr uint8_t kStackNative = 1, kStackPython = 2;

// Marks the thread busy recording a call of kind k, then checks capture again: at exit the
// collector turns capture off, makes every thread's stores visible (collector_quiesce's
// membarrier) and then reads `busy`, so either it sees this thread busy or this thread sees capture
// off. Not a fence here: the membarrier does the ordering.
// `force`: recorded whether capture is on or not (the pop of a recorded push).
inline bool enter_record(ThreadState* ts, RawKind k, bool force = false) {
  ts->busy.store(uint8_t(k), std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (__builtin_expect(!force && !g_capture_on.load(std::memory_order_relaxed), 0)) {
    ts->busy.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}
inline void leave_record(ThreadState* ts) { ts->busy.store(0, std::memory_order_release); }

// The calling thread's current context, with a Context record first when it changed.
bool note_context(ThreadState* ts, CUcontext ctx);

class Op {
 public:
  // False when this call is not recorded: capture off, re-entry, or the buffer budget in use
  // (counted). `stack`: record the caller's native call stack (kStackNative, shim/backtrace.h)
  // and/or its Python frames (kStackPython, shim/py_stack.h) too.
  bool begin(const Binding& b, RawKind kind, CUstream stream, uint16_t flags = 0, uint8_t stack = 0) {
    if (!capture_on() || t_in_shim) return false;
    ts_ = thread_state();
    if (!ts_ || !enter_record(ts_, kind)) return false;
    t_in_shim = true;
    const Driver& d = driver();
    CUcontext ctx = nullptr;
    if (d.ok) d.cuCtxGetCurrent(&ctx);
    if ((ctx != ts_->cur_ctx && !note_context(ts_, ctx)) || !(out_ = ts_->reserve(kMaxCallBytes))) {
      ts_->count_lost(kind);
      leave_record(ts_);
      t_in_shim = false;
      return false;
    }
    rec_.kind = kind;
    rec_.sub = 0;
    rec_.api = b.api;
    rec_.flags = uint16_t(flags | (b.per_thread ? kRawPerThread : 0));
    rec_.stream = stream;
    rec_.ev_start = rec_.ev_end = nullptr;
    rec_.cupti_corr = 0;
    rec_.ev.event = nullptr;  // the fill sets what its kind uses
    rec_.ctx = ctx;
    if (stack) take_stack(stack);  // before t0: the unwind is not charged to the call
    rec_.t0 = ticks();
    return true;
  }

  RawRecord& rec() { return rec_; }

  // A synchronisation about to call the driver: what the collector needs to write it as open if
  // the process ends while this thread is blocked in it (ThreadState::sync_t0).
  void publish_sync(uint8_t kind, uint64_t handle) {
    ts_->sync_handle.store(handle, std::memory_order_relaxed);
    ts_->sync_what.store(uint32_t(rec_.api) << 16 | (rec_.flags & kRawPerThread ? 1u << 8 : 0u) | kind,
                         std::memory_order_relaxed);
    ts_->sync_t0.store(rec_.t0, std::memory_order_relaxed);
  }

  // Before the real call of an operation that runs on the GPU.
  void gpu_begin() {
    if (g_timing == GpuTiming::None || !rec_.ctx) return;
    if (g_active_captures.load(std::memory_order_relaxed) > 0 && stream_capturing()) {
      rec_.flags |= kRawCaptured;
      return;
    }
    const bool cupti = g_timing == GpuTiming::Cupti;
    // Marked before the sample flag is read (relaxed: a store may become visible a little after
    // the load, far within the collector's 5 ms between the flag going down and CUPTI going
    // off): the collector turns CUPTI off only when no thread is marked.
    if (cupti) ts_->in_cupti_call.store(true, std::memory_order_relaxed);
    if (!gpu_sample_on()) {
      if (cupti) ts_->in_cupti_call.store(false, std::memory_order_relaxed);
      rec_.flags |= kRawNotSampled;
      return;
    }
    if (cupti) {
      rec_.flags |= kRawCupti;
      cupti_ = true;
      cupti_clear_correlation();
      return;
    }
    ev_stream_ = (rec_.stream == nullptr && (rec_.flags & kRawPerThread)) ? CU_STREAM_PER_THREAD : rec_.stream;
    timed_ = true;
    if (g_timing == GpuTiming::Events) rec_.ev_start = record_event();
  }

  // After it: the completion event (only if the driver accepted the work), then publish.
  CUresult gpu_end(CUresult r) {
    if (timed_ && r == CUDA_SUCCESS) rec_.ev_end = record_event();
    if (cupti_) rec_.cupti_corr = cupti_last_correlation();
    return end(r);
  }

  CUresult end(CUresult r) {
    rec_.result = int32_t(r);
    rec_.t1 = ticks();
    ts_->commit(pack_call(rec_, out_));
    // After the commit: a collector that sees the call over finds its record published.
    if (cupti_) ts_->in_cupti_call.store(false, std::memory_order_release);
    leave_record(ts_);
    t_in_shim = false;
    return r;
  }

 private:
  void take_stack(uint8_t what) {
    StackRing* ring = ts_->stacks;
    if (!ring) return;
    StackSlot* slot = ring->reserve();
    if (!slot) {
      ts_->stacks_lost.store(ts_->stacks_lost.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return;
    }
    slot->depth = 0;
    if (what & kStackNative) capture_stack(slot);
    slot->py_depth = (what & kStackPython) ? capture_py_stack(slot->py, kPyCaptureFrames) : 0;
    ring->commit();  // published before the record (whose commit the collector acquires first)
    rec_.flags |= kRawStackSlot;
  }
  CUevent record_event() {
    CUevent e = ts_->take_event(rec_.ctx);
    if (e && driver().cuEventRecord(e, ev_stream_) != CUDA_SUCCESS) {
      rec_.flags |= kRawCaptured;  // not usable for timing; the collector recycles it
    }
    return e;
  }
  bool stream_capturing() const {
    const Driver& d = driver();
    auto fn = (rec_.flags & kRawPerThread) ? d.cuStreamIsCapturing_ptsz : d.cuStreamIsCapturing;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    return fn && fn(rec_.stream, &st) == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
  }

  ThreadState* ts_ = nullptr;
  RawRecord rec_;           // filled by the wrapper, packed into out_ at the end
  uint8_t* out_ = nullptr;  // kMaxCallBytes reserved in the thread's chunk
  CUstream ev_stream_ = nullptr;
  bool timed_ = false;
  bool cupti_ = false;
};

// What a blocking synchronisation, copy or memset records: both kinds of stack by default.
inline uint8_t blocking_stack() {
  return uint8_t((g_backtrace != Backtrace::None ? kStackNative : 0) |
                 (g_py_stacks != PyStacks::None ? kStackPython : 0));
}

// Call stacks of GPU operations: blocking copies/memsets by default, every one with `all`;
// Python frames of every one with CUTRACE_PYTHON_STACKS=launch.
inline uint8_t gpu_op_wants_stack(uint16_t flags) {
  Backtrace m = g_backtrace;
  PyStacks p = g_py_stacks;
  if (m == Backtrace::None && p == PyStacks::None) return 0;
  if (flags & kRawBlocking) return blocking_stack();
  uint8_t s = 0;
  if (m == Backtrace::All) s = kStackNative | (p != PyStacks::None ? kStackPython : 0);
  if (p == PyStacks::Launch) s |= kStackPython;
  return s;
}

// Wrapper of an operation that enqueues GPU work: `call(real)` makes the real call.
template <class PFN, class Fill, class Call>
inline CUresult traced_gpu_op(const Binding& b, RawKind kind, CUstream s, uint16_t flags, Fill&& fill, Call&& call) {
  PFN real = b.fn<PFN>();
  Op op;
  if (!op.begin(b, kind, s, flags, gpu_op_wants_stack(flags))) return call(real);
  fill(op.rec());
  op.gpu_begin();
  return op.gpu_end(call(real));
}

// Wrapper of a host-side call (sync, memory, event record): CPU times and result only.
// `stack`: record the call stack (synchronisations).
template <class PFN, class Fill, class Call>
inline CUresult traced_call(const Binding& b, RawKind kind, CUstream s, Fill&& fill, Call&& call, uint8_t stack = 0) {
  PFN real = b.fn<PFN>();
  Op op;
  if (!op.begin(b, kind, s, 0, stack)) return call(real);
  CUresult r = call(real);
  fill(op.rec(), r);
  return op.end(r);
}

}  // namespace cutrace
