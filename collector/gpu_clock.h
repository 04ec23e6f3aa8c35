// Maps CUDA event timestamps to the host's CLOCK_MONOTONIC ns. Per context: a private stream on
// which the collector records anchor events every 100 ms, noting the host time of each; an
// event's host time is anchor_host + elapsed(anchor, event), taken from the anchor nearest in
// time so the float milliseconds cuEventElapsedTime returns stay precise (< 20 ns at 100 ms).
#pragma once
#include <cuda.h>
#include <cstdint>
#include <vector>

namespace cutrace {

class GpuClock {
 public:
  struct Ctx {
    CUcontext ctx = nullptr;
    int device = 0;
    CUstream stream = nullptr;
    static constexpr int kAnchors = 16;
    CUevent ev[kAnchors] = {};
    CUevent spare = nullptr;  // anchor() records its retries here, then swaps the best into ev[]
    int64_t host[kAnchors] = {};
    int count = 0;  // anchors taken so far (ring index = count % kAnchors)
    int64_t last_anchor_ns = 0;
  };

  // Context state (created on first use: stream, device). nullptr on failure. Its first anchor
  // comes from anchor_new() or tick(), which the collector calls only inside capture windows (an
  // anchor is GPU work), or at exit: until then its times cannot be mapped (count == 0).
  Ctx* context(CUcontext ctx);
  void forget(CUcontext ctx);
  void tick(int64_t now_ns);  // new anchors every 100 ms (a context without one: at once)
  void anchor_new();          // first anchors of contexts that have none (count == 0)
  // Host ns of a completed event, or 0 if it cannot be measured.
  int64_t to_host(Ctx& c, CUevent ev, int64_t hint_ns);
  const std::vector<Ctx*>& contexts() const { return ctxs_; }

 private:
  bool anchor(Ctx& c);
  std::vector<Ctx*> ctxs_;
};

// Makes ctx current on the calling (collector) thread if it is not already.
bool use_context(CUcontext ctx);

}  // namespace cutrace
