#include "shim/capture.h"
#include <atomic>
#include <thread>
#include "collector/collector.h"
#include "collector/cupti_source.h"
#include "runtime/config.h"
#include "runtime/thread_state.h"
#include "runtime/ticks.h"
#include "trace/format.h"
#include "trace/name_pattern.h"

namespace cutrace {

extern GpuTiming g_timing;  // shim/init.cpp; final once the collector has started

namespace {

// Publishes a window edge through the calling thread's chunks so that it sorts with its records.
void publish_edge(trace::WindowEdge edge, const char* reason) {
  if (t_in_shim) return;
  ThreadState* ts = thread_state();  // starts the collector if needed
  if (!ts) return;
  uint8_t* p = ts->reserve(24);
  if (!p) {  // budget in use: the collector still sees the flag change (written then)
    ts->count_lost(RawKind::Window);
    return;
  }
  RawRecord r;
  r.kind = RawKind::Window;
  r.sub = uint8_t(edge);
  r.flags = 0, r.api = 0;
  r.nvtx.name = reason;  // a string literal
  r.t0 = ticks();
  ts->commit(pack_note(r, nullptr, 0, p));
}

// NVTX trigger state: ranges matching the pattern seen so far, and the domain and level of the
// push that opened the window (on the thread that opened it).
std::atomic<long> g_matches{0};
__thread int t_window_depth __attribute__((tls_model("initial-exec"))) = -1;
__thread const void* t_window_domain __attribute__((tls_model("initial-exec"))) = nullptr;

// Is the k-th matching range (0-based) one to capture? A-B, and with a period N also A+N..B+N, ...
bool wanted_range(const Config& c, long k) {
  if (k < c.steps_first) return false;
  if (c.steps_last < 0) return true;
  long off = c.steps_every > 0 ? (k - c.steps_first) % c.steps_every : k - c.steps_first;
  return off <= c.steps_last - c.steps_first;
}

}  // namespace

void capture_begin_from_app(const char* reason) {
  if (!config().enabled || g_capture_on.load(std::memory_order_relaxed)) return;
  if (!collector_ensure_started()) return;
  if (g_timing == GpuTiming::Cupti) cupti_window(true);  // before the first op of the window
  g_capture_on.store(true, std::memory_order_relaxed);
  publish_edge(trace::WindowEdge::Begin, reason);
}

void capture_end_from_app(const char* reason, bool last) {
  if (!g_capture_on.load(std::memory_order_relaxed)) return;
  publish_edge(trace::WindowEdge::End, reason);
  g_capture_on.store(false, std::memory_order_seq_cst);
  while (g_gpu_anchoring.load(std::memory_order_seq_cst)) std::this_thread::yield();  // runtime/config.h
  if (g_timing == GpuTiming::Cupti) cupti_window(false, last);
}

bool capture_by_api() {
  const Config& c = config();
  if (c.capture != CaptureRange::Process) return true;  // another range: the calls open windows
  if (c.capture_chosen) return false;
  if (!c.enabled || g_windows_by_api.exchange(true, std::memory_order_acq_rel)) return true;
  if (collector_running()) capture_end_from_app("smprof");    // what ran before is its own window
  else g_capture_on.store(false, std::memory_order_seq_cst);  // nothing recorded yet
  return true;
}

void capture_nvtx_push(const char* name, const void* domain, int depth) {
  const Config& c = config();
  if (c.capture != CaptureRange::Nvtx || !name || !trace::name_pattern_match(c.nvtx_glob, name)) return;
  long k = g_matches.fetch_add(1, std::memory_order_relaxed);
  if (wanted_range(c, k) && !g_capture_on.load(std::memory_order_relaxed)) {
    t_window_depth = depth, t_window_domain = domain;
    capture_begin_from_app("nvtx");
  }
}

void capture_nvtx_pop(const void* domain, int depth) {
  const Config& c = config();
  if (c.capture != CaptureRange::Nvtx || depth < 0 || t_window_depth != depth || t_window_domain != domain) return;
  long seen = g_matches.load(std::memory_order_relaxed);
  if (!wanted_range(c, seen)) {  // the last wanted range of a block just ended
    t_window_depth = -1;
    capture_end_from_app("nvtx", /*last=*/c.steps_every == 0);
  }
}

}  // namespace cutrace
