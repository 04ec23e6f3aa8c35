// GPU times from CUPTI's activity API (CUTRACE_GPU_TIMING=cupti): the kernels', copies' and
// memsets' real start and end, as CUPTI measures them, instead of pooled events. A CUPTI
// driver-API callback notes CUPTI's correlation id of each traced GPU call on the calling
// thread; the wrapper stores it in its record, and CUPTI's activity records join on it. A graph
// launch's span is its first node's start to its last node's end.
// libcupti is loaded at run time; without it the collector falls back to end events (with a
// warning when cupti was asked for by name, a verbose-only note in the default auto mode), or to
// start and end events in exact mode (always with a warning).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cutrace {

// App thread, before the first traced call goes on. `exact`: the fallback is start and end events.
bool cupti_start(bool quiet, bool exact = false);
// Capture windows: CUPTI collects (activity kinds on) only while a window is open, so that outside
// windows the job pays little of CUPTI's per-launch cost. The driver callbacks go on with the
// first window and stay on (cupti_source.cpp, set_collecting: switching them off under a thread
// inside a driver call broke that thread on the H200) until the last window, when one is known
// (`last`: NVTX steps without --capture-repeat, a process window cut by --duration): no later
// window needs CUPTI, so it detaches with the collection (cuptiFinalize: it leaves a cost on every
// launch once it has collected). Before the first window it is detached too (cupti_start). A window edge calls
// cupti_window() before (open) or after (close) flipping capture on the thread that flips it; the
// collector turns collection off later, once the window's work has its CUPTI records
// (cupti_idle: `settled`, no thread is inside a CUPTI-timed call and every stream's newest CUPTI
// operation has its final span, or a few seconds passed). Meanwhile cupti_closing() is true and the collector flushes
// CUPTI often.
void cupti_window(bool open, bool last = false);
// GPU-timing sample windows (CUTRACE_GPU_SAMPLE), from the collector: like capture windows (CUPTI
// collects while both are open), and the shim's g_gpu_sample_on is flipped here, in order with
// the switch-on (on: after it; off: before the deferred switch-off).
void cupti_sample(bool on);
void cupti_idle(bool settled, int64_t now);
bool cupti_closing();
void cupti_flush(bool forced = false);  // collector: hands CUPTI's completed records over
void cupti_stop();                      // collector at exit: flush everything
// One kernel, copy or memset of a CUDA graph replay, as CUPTI reports it (under the graph
// launch's correlation id).
struct CuptiGraphNode {
  enum Type : uint8_t { Kernel, Memcpy, Memset } type = Kernel;
  int64_t start = 0, end = 0;
  std::string name;  // kernels: as CUPTI gives it (mangled)
  uint32_t grid[3] = {}, block[3] = {};
  uint32_t dyn_smem = 0, static_smem = 0;
  uint16_t regs = 0;
  uint64_t bytes = 0;                                 // copies and sets
  uint8_t copy_kind = 0, src_kind = 0, dst_kind = 0;  // trace::CopyKind, trace::MemKind (sets: dst_kind)
  uint32_t value = 0;                                 // sets
};
// GPU span of the work of the call with CUPTI correlation id `corr`, once it is final. `graph`:
// the operations of a graph launch's replay go there, in the order they started (else forgotten).
bool cupti_take(uint32_t corr, int64_t* start, int64_t* end, std::vector<CuptiGraphNode>* graph = nullptr);
// Activity records CUPTI has delivered so far (the collector's exit wait stops once none come).
uint64_t cupti_records();
// Whether the span of `corr` has arrived and is final (what cupti_take would take), leaving it.
bool cupti_final(uint32_t corr);
struct CuptiLosses {
  uint64_t dropped;     // records CUPTI reported as dropped (its buffers full), over all buffers
  uint64_t incomplete;  // records it delivered without timestamps (ignored: their ops get none)
};
CuptiLosses cupti_losses();

// Hot path (cupti mode): CUPTI's correlation id of this thread's latest traced driver call.
uint32_t cupti_last_correlation();
// Hot path: forgets it before a traced call, so that a call CUPTI does not report (no callback)
// leaves 0 instead of the previous call's id (two operations waiting for one record).
void cupti_clear_correlation();

}  // namespace cutrace
