#include "collector/gpu_clock.h"
#include <cmath>
#include <cstdint>
#include <utility>
#include "runtime/driver.h"
#include "runtime/ticks.h"

namespace cutrace {

bool use_context(CUcontext ctx) {
  static thread_local CUcontext current = nullptr;
  if (ctx == current) return true;
  if (driver().cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return false;
  current = ctx;
  return true;
}

GpuClock::Ctx* GpuClock::context(CUcontext ctx) {
  for (Ctx* c : ctxs_)
    if (c->ctx == ctx) return c;
  const Driver& d = driver();
  if (!d.ok || !ctx || !use_context(ctx)) return nullptr;
  auto* c = new Ctx();
  c->ctx = ctx;
  CUdevice dev = 0;
  if (d.cuCtxGetDevice) d.cuCtxGetDevice(&dev);
  c->device = dev;
  if (d.cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) c->stream = nullptr;
  for (CUevent& e : c->ev)
    if (d.cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) e = nullptr;
  if (d.cuEventCreate(&c->spare, CU_EVENT_DEFAULT) != CUDA_SUCCESS) c->spare = nullptr;
  ctxs_.push_back(c);  // its first anchor: anchor_new() or tick(), inside a capture window
  return c;
}

void GpuClock::forget(CUcontext ctx) {
  for (size_t i = 0; i < ctxs_.size(); ++i) {
    if (ctxs_[i]->ctx != ctx) continue;
    delete ctxs_[i];  // its stream and events die with the context
    ctxs_.erase(ctxs_.begin() + long(i));
    return;
  }
}

// Records an anchor on the private stream and waits for it: its GPU timestamp corresponds to
// the host time just after the record call returned (the fake driver stamps it inside the call,
// an idle GPU a little after). A thread held up between the stamp and reading the host clock
// (preempted, a VM's vCPU descheduled) reads a host time late by as much, and every GPU time
// mapped through this anchor (100 ms of them) with it (CI's e2e gpu_sample test once saw a whole
// window of end-mode times 40 us late).
// So a record call longer than kAnchorCallNs is tried again, up to kAnchorTries times, and the
// shortest one is kept (a slow driver, every call long, still gets an anchor).
bool GpuClock::anchor(Ctx& c) {
  constexpr int64_t kAnchorCallNs = 5000;
  constexpr int kAnchorTries = 8;
  const Driver& d = driver();
  int slot = c.count % Ctx::kAnchors;
  if (!c.ev[slot] || !c.stream || !use_context(c.ctx)) return false;
  int64_t host = 0, call_ns = INT64_MAX;
  for (int i = 0; i < kAnchorTries && call_ns > kAnchorCallNs && (i == 0 || c.spare); ++i) {
    CUevent e = i == 0 ? c.ev[slot] : c.spare;
    int64_t before = mono_ns();
    if (d.cuEventRecord(e, c.stream) != CUDA_SUCCESS) return false;
    int64_t after = mono_ns();
    if (after - before >= call_ns) continue;
    call_ns = after - before, host = after;
    if (i > 0) std::swap(c.ev[slot], c.spare);  // the best so far in the ring, the other one spare
  }
  if (d.cuEventSynchronize(c.ev[slot]) != CUDA_SUCCESS) return false;
  c.host[slot] = host;
  c.last_anchor_ns = host;
  ++c.count;
  return true;
}

void GpuClock::tick(int64_t now_ns) {
  for (Ctx* c : ctxs_)
    if (now_ns - c->last_anchor_ns >= 100000000) anchor(*c);  // a new context's first too (last 0)
}

void GpuClock::anchor_new() {
  for (Ctx* c : ctxs_)
    if (c->count == 0) anchor(*c);
}

int64_t GpuClock::to_host(Ctx& c, CUevent ev, int64_t hint_ns) {
  if (c.count == 0 || !ev) return 0;
  // The newest anchor taken before hint + 50 ms, else the oldest one still kept.
  int n = c.count < Ctx::kAnchors ? c.count : Ctx::kAnchors;
  int best = -1;
  int64_t best_dist = INT64_MAX;
  for (int i = 0; i < n; ++i) {
    int slot = (c.count - 1 - i) % Ctx::kAnchors;
    int64_t dist = c.host[slot] > hint_ns ? c.host[slot] - hint_ns : hint_ns - c.host[slot];
    if (dist < best_dist) best_dist = dist, best = slot;
  }
  float ms = 0;
  if (driver().cuEventElapsedTime(&ms, c.ev[best], ev) != CUDA_SUCCESS) return 0;
  return c.host[best] + int64_t(std::llround(double(ms) * 1e6));
}

}  // namespace cutrace
