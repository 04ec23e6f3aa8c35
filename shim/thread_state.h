// Per-thread state: the ring of raw records and the per-context pools of timing events.
// Only the owning thread produces into the ring and consumes from the pools; only the collector
// consumes the ring and refills the pools. No locks on either side.
#pragma once
#include <atomic>
#include <cstdint>
#include "shim/backtrace.h"
#include "shim/raw.h"
#include "shim/spsc.h"

namespace cutrace {

inline constexpr int kMaxPoolsPerThread = 4;  // contexts one thread times with pooled events
inline constexpr size_t kRingSlots = 4096;    // 512 KiB of records per thread
inline constexpr size_t kPoolSlots = 2048;    // events per (thread, context)
inline constexpr size_t kPoolTarget = 512;    // the collector tops pools up to this

struct EventPool {
  std::atomic<CUcontext> ctx{nullptr};  // claimed once by the owning thread
  SpscRing<CUevent, kPoolSlots> free;   // collector -> owner
};

// Copies of annotation names whose memory the caller may reuse (NVTX ASCII messages).
struct NameSlot {
  uint16_t len;
  char text[254];
};
inline constexpr size_t kNameSlots = 1024;

struct ThreadState {
  SpscRing<RawRecord, kRingSlots> ring;  // owner -> collector
  std::atomic<SpscRing<NameSlot, kNameSlots>*> names{nullptr};  // allocated on first annotation
  StackRing* stacks = nullptr;  // call stacks, owner -> collector (CUTRACE_BACKTRACE != none)
  EventPool pools[kMaxPoolsPerThread];
  std::atomic<uint64_t> dropped{0};        // records lost because the ring was full
  std::atomic<uint64_t> inline_events{0};  // events the owner had to create (pool empty)
  std::atomic<uint64_t> stacks_lost{0};    // call stacks not kept because the stack ring was full
  std::atomic<bool> retired{false};        // owner thread exited
  // The owner is inside a driver call whose GPU times CUPTI is asked for: the collector keeps
  // CUPTI collecting until it returns (the call's record may not be published yet).
  std::atomic<bool> in_cupti_call{false};
  std::atomic<ThreadState*> next{nullptr};
  uint32_t tid = 0;
  uint32_t index = 0;
  uint64_t seq = 0;  // correlation counter, owner only
  // Collector-private bookkeeping.
  uint64_t dropped_reported = 0;
  uint64_t stacks_lost_reported = 0;
  uint32_t pending_refs = 0;

  uint64_t next_corr() { return (uint64_t(index) << 40) | ++seq; }
  int nvtx_depth = 0;          // push/pop nesting, owner only (NVTX returns it)
  uint64_t nvtx_recorded = 0;  // bit d: the push at depth d was recorded (its pop must be)
  CUevent take_event(CUcontext ctx);  // pooled event for ctx; creates one if the pool is empty
  EventPool* pool_for(CUcontext ctx);
};

extern __thread ThreadState* t_state __attribute__((tls_model("initial-exec")));
extern __thread bool t_in_shim __attribute__((tls_model("initial-exec")));

ThreadState* thread_state_slow();
inline ThreadState* thread_state() {
  ThreadState* s = t_state;
  return __builtin_expect(s != nullptr, 1) ? s : thread_state_slow();
}

// Registry of every live thread's state, newest first. Producers only push at the head.
ThreadState* registry_head();
// Collector: unlinks `s` (whose predecessor is `prev`, or nullptr if `s` is the head).
// Returns false if it could not do so now (a push raced with head removal).
bool registry_unlink(ThreadState* prev, ThreadState* s);
void registry_reset_after_fork();
// Collector: whether some thread is inside a driver call whose GPU times CUPTI is asked for
// (asked before a drain: a call seen over has its record in the ring).
bool registry_in_cupti_call();

}  // namespace cutrace
