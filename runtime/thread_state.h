// Per-thread state: the chain of record chunks and the per-context pools of timing events.
// Only the owning thread writes records and takes events; only the collector reads the records
// and refills the pools. No locks on either side.
#pragma once
#include <atomic>
#include <cstdint>
#include "runtime/nvtx_stack.h"
#include "runtime/raw.h"
#include "runtime/raw_pack.h"
#include "runtime/record_buffer.h"
#include "runtime/spsc.h"
#include "runtime/stack_ring.h"

namespace cutrace {

inline constexpr int kMaxPoolsPerThread = 4;  // contexts one thread times with pooled events
inline constexpr size_t kPoolSlots = 2048;    // events per (thread, context)
inline constexpr size_t kPoolTarget = 512;    // the collector tops pools up to this

struct EventPool {
  std::atomic<CUcontext> ctx{nullptr};  // claimed once by the owning thread
  SpscRing<CUevent, kPoolSlots> free;   // collector -> owner
};

// Records lost on one thread: per RawKind, and the ticks of the first and last loss since the
// collector last reported them (it clears `open`).
struct LossCounters {
  std::atomic<uint64_t> count[kRawKinds] = {};
  std::atomic<uint64_t> first{0}, last{0};
  std::atomic<bool> open{false};
};

struct ThreadState {
  // Owner: the chunk records are written into, and the next free byte of it.
  Chunk* wr = nullptr;
  uint32_t wpos = 0;
  CUcontext cur_ctx = nullptr;               // context of the last call recorded (a Context record on change)
  std::atomic<Chunk*> first_chunk{nullptr};  // published once; the collector follows `next` from it
  // Nonzero (the RawKind) while the owner is between deciding to record a call and publishing it:
  // at exit the collector waits for such calls, and counts those that do not finish.
  std::atomic<uint8_t> busy{0};
  // Owner, before a synchronisation calls the driver (relaxed stores, valid while busy == Sync):
  // its entry tick, stream or event handle, and (api << 16 | per-thread << 8 | SyncKind). The
  // collector reads them at exit for a thread still blocked in it (an open Sync record); a sync_t0
  // not newer than the last record it read is a finished call's.
  std::atomic<uint64_t> sync_t0{0};
  std::atomic<uint64_t> sync_handle{0};
  std::atomic<uint32_t> sync_what{0};
  StackRing* stacks = nullptr;  // call stacks, owner -> collector (CUTRACE_BACKTRACE != none)
  EventPool pools[kMaxPoolsPerThread];
  LossCounters lost;                       // records lost because the buffer budget was in use
  std::atomic<uint64_t> inline_events{0};  // events the owner had to create (pool empty)
  std::atomic<uint64_t> stacks_lost{0};    // call stacks not kept because the stack ring was full
  std::atomic<bool> retired{false};        // owner thread exited
  // The owner is inside a driver call whose GPU times CUPTI is asked for: the collector keeps
  // CUPTI collecting until it returns (the call's record may not be published yet).
  std::atomic<bool> in_cupti_call{false};
  std::atomic<ThreadState*> next{nullptr};
  uint32_t tid = 0;
  uint32_t index = 0;
  // Collector-private bookkeeping.
  Chunk* rd = nullptr;  // chunk being read, and the next unread byte of it
  uint32_t rpos = 0;
  CUcontext rd_ctx = nullptr;  // context of the calls being read (Context records)
  uint64_t seq = 0;            // records read: their correlation ids are (index << 40) | seq
  uint64_t last_t0 = 0;        // entry tick of the newest record read (an older sync_t0 is stale)
  uint64_t lost_reported[kRawKinds] = {};
  uint64_t stacks_lost_reported = 0;
  uint32_t pending_refs = 0;

  // Owner: room for `n` bytes in the current chunk (a new chunk when it is full), or nullptr when
  // the budget is spent. commit() publishes them with one release store.
  uint8_t* reserve(uint32_t n) {
    if (__builtin_expect(wr != nullptr && wpos + n <= kChunkData, 1)) return wr->data + wpos;
    return reserve_slow(n);
  }
  void commit(uint32_t n) {
    wpos += n;
    wr->committed.store(wpos, std::memory_order_release);
  }
  uint8_t* reserve_slow(uint32_t n);
  void count_lost(RawKind k);         // owner: one record of kind k not recorded (budget in use)
  NvtxStacks nvtx;                    // push/pop nesting per domain, owner only (NVTX returns the depth)
  CUevent take_event(CUcontext ctx);  // pooled event for ctx; creates one if the pool is empty
  EventPool* pool_for(CUcontext ctx);
};

extern __thread ThreadState* t_state __attribute__((tls_model("initial-exec")));
extern __thread bool t_in_shim __attribute__((tls_model("initial-exec")));

// Defined by the shim (shim/init.cpp): starts the collector on a thread's first recorded call.
ThreadState* thread_state_slow();
// The calling thread's new state, pushed at the registry's head.
ThreadState* registry_add_current_thread();
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
// (asked before a drain: a call seen over has its record published).
bool registry_in_cupti_call();

}  // namespace cutrace
