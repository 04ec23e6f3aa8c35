// Draining the threads' chunks: rounds that hand the records of all threads over in call order,
// the losses the threads counted, and the event pools they time with (collector/collector_impl.h).
#include <algorithm>
#include "collector/chunk_reader.h"
#include "collector/collector_impl.h"
#include "runtime/driver.h"
#include "runtime/raw_pack.h"
#include "runtime/record_buffer.h"
#include "runtime/stack_ring.h"

namespace cutrace {

namespace {
// Maps the shim's record kinds to the trace's LossKind.
uint8_t loss_kind(uint8_t raw) {
  switch (RawKind(raw)) {
    case RawKind::Kernel: return trace::kLossKernel;
    case RawKind::Memcpy: return trace::kLossMemcpy;
    case RawKind::Memset: return trace::kLossMemset;
    case RawKind::Sync:
    case RawKind::StreamWait: return trace::kLossSync;
    case RawKind::Memory: return trace::kLossMemory;
    case RawKind::EventRecord: return trace::kLossApi;
    case RawKind::RangePush:
    case RawKind::RangeStart: return trace::kLossRangeBegin;
    case RawKind::RangePop:
    case RawKind::RangeEnd: return trace::kLossRangeEnd;
    case RawKind::Mark: return trace::kLossMark;
    default: return trace::kLossOther;
  }
}
}  // namespace

void Collector::drain(bool all) {
  for (int i = 0; all || i < kDrainRounds; ++i) {
    if (ops_.pending() > kMaxPendingOps) {
      // Finished operations first; what the GPU has not done yet waits in the threads' chunks.
      ops_.poll(/*all=*/false, /*grace_ns=*/20000000);
      if (!all && ops_.pending() > kMaxPendingOps) return;
    }
    if (drain_round() == 0) return;
  }
}

void Collector::write_loss(uint32_t tid, trace::LossReason why, int64_t begin, int64_t end,
                           const uint64_t* by_raw_kind) {
  trace::LossRec l{};
  l.begin_ns = begin, l.end_ns = end, l.tid = tid, l.reason = uint8_t(why);
  uint64_t total = 0;
  for (int k = 0; k < kRawKinds; ++k) {
    l.count[loss_kind(uint8_t(k))] += by_raw_kind[k];
    total += by_raw_kind[k];
  }
  if (!total) return;
  w_.add(l, trace::RecType::Loss);
  dropped_total_ += total;
}

void Collector::report_losses(ThreadState* s) {
  uint64_t delta[kRawKinds];
  bool any = false;
  for (int k = 0; k < kRawKinds; ++k) {
    uint64_t c = s->lost.count[k].load(std::memory_order_acquire);
    delta[k] = c - s->lost_reported[k];
    s->lost_reported[k] = c;
    any |= delta[k] != 0;
  }
  if (!any) return;
  // A loss between these loads and clearing `open` is counted in the next report, whose interval
  // then begins at its last loss: intervals may start late by one report, never miss a count.
  uint64_t first = s->lost.first.load(std::memory_order_relaxed);
  uint64_t last = s->lost.last.load(std::memory_order_relaxed);
  s->lost.open.store(false, std::memory_order_relaxed);
  int64_t b = clock_.to_ns(first), e = clock_.to_ns(last);
  write_loss(s->tid, trace::LossReason::Budget, std::min(b, e), e, delta);
}

// Reads up to `limit` records of `s` whose call began by `horizon` (ticks) into the batch.
size_t Collector::read_records(ThreadState* s, size_t limit, uint64_t horizon) {
  size_t taken = 0;
  while (taken < limit) {
    const uint8_t* p = next_record(s, horizon);
    if (!p) break;
    if (batch_n_ == batch_.size()) batch_.emplace_back();
    Drained& d = batch_[batch_n_];
    d.name.clear();
    d.stack = 0;
    unpack(p, &d.r, &d.name);
    if (d.r.kind == RawKind::Context) {
      s->rd_ctx = d.r.ctx;
      continue;
    }
    ++batch_n_;
    if (d.r.kind <= RawKind::StreamWait) d.r.ctx = s->rd_ctx;
    d.r.corr = (uint64_t(s->index) << 40) | ++s->seq;
    s->last_t0 = d.r.t0;
    d.owner = s;
    if ((d.r.flags & kRawStackSlot) && s->stacks) {
      if (const StackSlot* st = s->stacks->peek()) {
        d.stack = stacks_.intern(
            st->pc, st->depth, [](uint64_t pc) { return in_shim(pc); }, st->py, st->py_depth);
        s->stacks->pop();
      }
    }
    ++s->pending_refs;
    ++taken;
  }
  records_read_ += taken;
  return taken;
}

// One round: at most kDrainChunk records of each thread, and none past the time by which every
// thread with a backlog has kDrainChunk records, so that rounds hand the records of all threads
// over in time order (a thread far behind the others would otherwise send its old operations
// after the newer ones of the streams it shares with them).
size_t Collector::drain_round() {
  batch_n_ = 0;
  stacks_.modules().new_cycle();
  uint64_t horizon = 0;
  bool bounded = false;
  for (ThreadState* s = registry_head(); s; s = s->next.load(std::memory_order_acquire)) {
    uint64_t t0;
    if (scan_ahead(s, kDrainChunk, &t0) && (!bounded || int64_t(t0 - horizon) < 0)) horizon = t0, bounded = true;
  }
  ThreadState* prev = nullptr;
  for (ThreadState* s = registry_head(); s;) {
    ThreadState* next = s->next.load(std::memory_order_acquire);
    bool retired = s->retired.load(std::memory_order_acquire);
    read_records(s, kDrainChunk, bounded ? horizon : ticks() + (uint64_t(1) << 62));
    report_losses(s);
    uint64_t lost = s->stacks_lost.load(std::memory_order_relaxed);
    stacks_lost_ += lost - s->stacks_lost_reported;
    s->stacks_lost_reported = lost;
    if (retired && s->pending_refs == 0 && fully_read(s) && registry_unlink(prev, s)) {
      for (EventPool& p : s->pools) {
        CUevent e;
        while (p.free.pop(&e)) driver().cuEventDestroy(e);
      }
      if (s->rd) chunk_pool().give(s->rd);
      delete s->stacks;
      delete s;
    } else {
      prev = s;
    }
    s = next;
  }
  // In call order across threads: each thread's records are in order already, so sort indices.
  order_.resize(batch_n_);
  for (uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
  auto by_t0 = [&](uint32_t a, uint32_t b) { return int64_t(batch_[a].r.t0 - batch_[b].r.t0) < 0; };
  if (!std::is_sorted(order_.begin(), order_.end(), by_t0)) std::stable_sort(order_.begin(), order_.end(), by_t0);
  for (uint32_t i : order_) handle(batch_[i]);
  return batch_n_;
}

void Collector::refill_pools() {
  const Driver& d = driver();
  int budget = 256;  // events created per cycle at most
  for (ThreadState* s = registry_head(); s && budget > 0; s = s->next.load(std::memory_order_acquire)) {
    if (s->retired.load(std::memory_order_acquire)) continue;
    for (EventPool& p : s->pools) {
      CUcontext ctx = p.ctx.load(std::memory_order_acquire);
      if (!ctx || p.free.size() >= kPoolTarget || !use_context(ctx)) continue;
      while (p.free.size() < kPoolTarget && budget-- > 0) {
        CUevent e;
        if (d.cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) break;
        if (!p.free.push(e)) {
          d.cuEventDestroy(e);
          break;
        }
      }
    }
  }
}

}  // namespace cutrace
