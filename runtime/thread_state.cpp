#include "runtime/thread_state.h"
#include <sys/syscall.h>
#include <unistd.h>
#include "runtime/config.h"
#include "runtime/driver.h"
#include "runtime/ticks.h"

namespace cutrace {

__thread ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_in_shim __attribute__((tls_model("initial-exec"))) = false;

static std::atomic<ThreadState*> g_head{nullptr};
static std::atomic<uint32_t> g_next_index{1};

ThreadState* registry_head() { return g_head.load(std::memory_order_acquire); }

bool registry_in_cupti_call() {
  for (ThreadState* s = registry_head(); s; s = s->next.load(std::memory_order_acquire))
    if (s->in_cupti_call.load(std::memory_order_acquire)) return true;
  return false;
}

bool registry_unlink(ThreadState* prev, ThreadState* s) {
  ThreadState* next = s->next.load(std::memory_order_acquire);
  if (prev) {
    prev->next.store(next, std::memory_order_release);
    return true;
  }
  ThreadState* expected = s;
  return g_head.compare_exchange_strong(expected, next, std::memory_order_acq_rel);
}

// The states of the parent's threads, in a child after fork(): kept, never used (LeakSanitizer
// sees them reachable; they are not lost by mistake).
static std::atomic<ThreadState*> g_abandoned_after_fork{nullptr};

void registry_reset_after_fork() {
  // The parent's threads do not exist in the child; their states are abandoned (not freed:
  // the child may not touch memory another thread was using when fork happened).
  if (ThreadState* head = g_head.load(std::memory_order_relaxed)) {
    ThreadState* tail = head;  // one list with those of earlier forks (a grandchild)
    while (ThreadState* n = tail->next.load(std::memory_order_relaxed)) tail = n;
    tail->next.store(g_abandoned_after_fork.load(std::memory_order_relaxed), std::memory_order_relaxed);
    g_abandoned_after_fork.store(head, std::memory_order_relaxed);
  }
  g_head.store(nullptr, std::memory_order_relaxed);
  t_state = nullptr;
}

namespace {
// Marks the owner's state retired when its thread exits; the collector drains and frees it.
struct ExitGuard {
  ~ExitGuard() {
    if (t_state) t_state->retired.store(true, std::memory_order_release);
    t_state = nullptr;
  }
};
thread_local ExitGuard t_exit_guard;
}  // namespace

ThreadState* registry_add_current_thread() {
  auto* s = new ThreadState;
  s->tid = uint32_t(syscall(SYS_gettid));
  s->index = g_next_index.fetch_add(1, std::memory_order_relaxed);
  if (g_backtrace != Backtrace::None || g_py_stacks != PyStacks::None) s->stacks = new StackRing;
  ThreadState* head = g_head.load(std::memory_order_relaxed);
  do {
    s->next.store(head, std::memory_order_relaxed);
  } while (!g_head.compare_exchange_weak(head, s, std::memory_order_release, std::memory_order_relaxed));
  (void)&t_exit_guard;  // constructs the guard: its destructor runs at thread exit
  t_state = s;
  return s;
}

uint8_t* ThreadState::reserve_slow(uint32_t n) {
  if (n > kChunkData) return nullptr;
  Chunk* c = chunk_pool().take();
  if (!c) return nullptr;
  if (wr) wr->next.store(chunk_pool().index_of(c) + 1, std::memory_order_release);
  else first_chunk.store(c, std::memory_order_release);
  wr = c;
  wpos = 0;
  return c->data;
}

bool note_context(ThreadState* ts, CUcontext ctx) {
  uint8_t* p = ts->reserve(24);
  if (!p) return false;
  RawRecord r;
  r.kind = RawKind::Context, r.sub = 0, r.flags = 0, r.api = 0, r.t0 = 0, r.ctx = ctx;
  ts->commit(pack_note(r, nullptr, 0, p));
  ts->cur_ctx = ctx;
  return true;
}

void ThreadState::count_lost(RawKind k) {
  uint64_t now = ticks();
  if (!lost.open.load(std::memory_order_relaxed)) {
    lost.first.store(now, std::memory_order_relaxed);
    lost.open.store(true, std::memory_order_relaxed);
  }
  lost.last.store(now, std::memory_order_relaxed);
  auto& c = lost.count[uint8_t(k) < kRawKinds ? uint8_t(k) : 0];
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

EventPool* ThreadState::pool_for(CUcontext ctx) {
  for (EventPool& p : pools) {
    CUcontext c = p.ctx.load(std::memory_order_relaxed);
    if (c == ctx) return &p;
    if (c == nullptr) {
      p.ctx.store(ctx, std::memory_order_release);  // the collector starts filling it
      return &p;
    }
  }
  return nullptr;
}

CUevent ThreadState::take_event(CUcontext ctx) {
  CUevent e = nullptr;
  EventPool* p = pool_for(ctx);
  if (p && p->free.pop(&e)) return e;
  // Pool empty (first use, or the GPU is far behind): create one here. Rare by design.
  if (driver().cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return nullptr;
  inline_events.store(inline_events.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return e;
}

}  // namespace cutrace
