#include "collector/cupti_source.h"
#include <cupti.h>
#include <dlfcn.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
#include "runtime/config.h"
#include "runtime/driver.h"
#include "runtime/ticks.h"
#include "trace/format.h"

namespace cutrace {

namespace {

struct Api {
  CUptiResult (*get_version)(uint32_t*);
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*disable)(CUpti_ActivityKind);
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
  CUptiResult (*flush_all)(uint32_t);
  CUptiResult (*next_record)(uint8_t*, size_t, CUpti_Activity**);
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
  CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
  CUptiResult (*dropped)(CUcontext, uint32_t, size_t*);
  CUptiResult (*finalize)();
};

// The driver calls whose CUPTI correlation id we note (launches, graph launches, copies, memsets).
const CUpti_CallbackId kDriverCbids[] = {
#include "collector/cupti_cbids.inc"
};

// CUPTI's correlation id of the calling thread's current driver call, set by our callback.
__thread uint32_t t_cupti_corr __attribute__((tls_model("initial-exec"))) = 0;
Api g_api;

struct Span {
  int64_t start = INT64_MAX, end = 0;
};

// Filled by CUPTI's buffer callback (its own thread or ours during a flush): not a hot path.
std::mutex g_mu;
std::unordered_map<uint32_t, Span>* g_spans;  // CUPTI correlation id -> GPU span
// The operations of graph replays (records with a graph id), by the graph launch's correlation id.
std::unordered_map<uint32_t, std::vector<CuptiGraphNode>>* g_graph_nodes;
int64_t g_last_flush = 0;

// A span is final once a flush that began after its work ended has been delivered (graph
// launches bring several records under one id). Under g_mu.
bool is_final(const Span& s) { return s.end < g_last_flush; }
uint64_t g_n_gpu = 0, g_n_taken = 0;  // diagnostics (CUTRACE_VERBOSE); g_n_gpu: cupti_records()
uint64_t g_n_dropped = 0;             // records CUPTI dropped (written to the trace's meta)
uint64_t g_n_incomplete = 0;          // records without timestamps (ignored; in the trace's meta)
// Set during the forced flush before CUPTI detaches after the last window: what it still holds is
// work launched after the window (the window's own has its records), not wanted, not counted.
bool g_flush_unwanted = false;
uint64_t g_n_orphans = 0;  // spans no operation took, forgotten (diagnostics)

constexpr size_t kBufferBytes = 2 << 20;  // CUPTI asks for more when one fills

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

// False for a record without timestamps (nor is it then a graph node of the span).
bool add_span(uint32_t cupti_corr, uint64_t start, uint64_t end) {
  // CUPTI leaves both timestamps 0 when it could not collect them (a forced flush hands over
  // records of work still in flight, which is why periodic flushes are not forced). Such a
  // record must not become an operation's span: it is counted, and the operation waits on.
  if (start == 0 || end < start) {
    if (!g_flush_unwanted) ++g_n_incomplete;
    return false;
  }
  Span& s = (*g_spans)[cupti_corr];
  if (int64_t(start) < s.start) s.start = int64_t(start);
  if (int64_t(end) > s.end) s.end = int64_t(end);
  ++g_n_gpu;
  return true;
}

trace::MemKind mem_kind(uint32_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return trace::MemKind::Pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return trace::MemKind::Pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return trace::MemKind::Device;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return trace::MemKind::Managed;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return trace::MemKind::Array;
    default: return trace::MemKind::Unknown;
  }
}

trace::CopyKind copy_kind(uint32_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return trace::CopyKind::HtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return trace::CopyKind::DtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return trace::CopyKind::DtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return trace::CopyKind::HtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return trace::CopyKind::PtoP;
    default: return trace::CopyKind::Unknown;
  }
}

// A record of a graph replay's operation (graphId != 0) with its timestamps, under g_mu.
void add_graph_node(uint32_t corr, CuptiGraphNode&& n) { (*g_graph_nodes)[corr].push_back(std::move(n)); }

void add_graph_kernel(const CUpti_ActivityKernel10& k) {
  CuptiGraphNode g;
  g.type = CuptiGraphNode::Kernel;
  g.start = int64_t(k.start), g.end = int64_t(k.end);
  g.name = k.name ? k.name : "";
  g.grid[0] = uint32_t(k.gridX), g.grid[1] = uint32_t(k.gridY), g.grid[2] = uint32_t(k.gridZ);
  g.block[0] = uint32_t(k.blockX), g.block[1] = uint32_t(k.blockY), g.block[2] = uint32_t(k.blockZ);
  g.dyn_smem = uint32_t(k.dynamicSharedMemory), g.static_smem = uint32_t(k.staticSharedMemory);
  g.regs = k.registersPerThread;
  add_graph_node(k.correlationId, std::move(g));
}

void add_graph_memcpy(const CUpti_ActivityMemcpy6& m) {
  CuptiGraphNode g;
  g.type = CuptiGraphNode::Memcpy;
  g.start = int64_t(m.start), g.end = int64_t(m.end);
  g.bytes = m.bytes;
  g.copy_kind = uint8_t(copy_kind(m.copyKind));
  g.src_kind = uint8_t(mem_kind(m.srcKind)), g.dst_kind = uint8_t(mem_kind(m.dstKind));
  add_graph_node(m.correlationId, std::move(g));
}

void add_graph_memset(const CUpti_ActivityMemset4& m) {
  CuptiGraphNode g;
  g.type = CuptiGraphNode::Memset;
  g.start = int64_t(m.start), g.end = int64_t(m.end);
  g.bytes = m.bytes, g.value = m.value;
  g.dst_kind = uint8_t(mem_kind(m.memoryKind));
  add_graph_node(m.correlationId, std::move(g));
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> l(g_mu);
    size_t dropped = 0;
    if (g_api.dropped(ctx, stream_id, &dropped) == CUPTI_SUCCESS) g_n_dropped += dropped;
    CUpti_Activity* rec = nullptr;
    while (g_api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
      switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
          auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
          if (add_span(k->correlationId, k->start, k->end) && k->graphId != 0) add_graph_kernel(*k);
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(rec);
          if (add_span(m->correlationId, m->start, m->end) && m->graphId != 0) add_graph_memcpy(*m);
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(rec);
          if (add_span(m->correlationId, m->start, m->end) && m->graphId != 0) add_graph_memset(*m);
          break;
        }
        default: break;
      }
    }
  }
  free(buffer);
}

uint64_t CUPTIAPI timestamp() { return uint64_t(mono_ns()); }

CUpti_SubscriberHandle g_sub = nullptr;
bool g_loaded = false;  // cupti_start succeeded: CUPTI times this process's windows
const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                     CUPTI_ACTIVITY_KIND_MEMSET};

// Window state (edges only, never per call): g_window_mu orders an edge on an app thread with the
// collector's deferred switch-off.
std::mutex g_window_mu;
bool g_window_open = false, g_collecting = false;
bool g_sample_open = true;  // the GPU-timing sample's window (always open without sampling)
int64_t g_window_closed_ns = 0;

uint64_t g_switches = 0;  // collection switched on or off (diagnostics, CUTRACE_VERBOSE)
int64_t g_switch_ns = 0;  // time spent switching

// The driver callbacks, once on, stay on until the last window: only the activity kinds are
// switched per window. Turning callbacks off while an app thread is inside a traced driver call
// leaves that thread without callbacks for good (its kernels then come under stale correlation
// ids), and no thread can be kept out of the driver meanwhile (BENCHMARKS.md, CUPTI).
bool g_callbacks_on = false;
// The window that closed was the last one (cupti_window(false, true)): CUPTI detaches with the
// collection. A thread stranded by that no longer matters: nothing of it is timed again.
bool g_last_closed = false;

// The driver callbacks of every id in kDriverCbids on or off; true if CUPTI took each.
bool switch_callbacks(bool on) {
  bool ok = true;
  for (CUpti_CallbackId cbid : kDriverCbids)
    ok = g_api.enable_callback(on ? 1 : 0, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid) == CUPTI_SUCCESS && ok;
  return ok;
}

void CUPTIAPI on_driver_call(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data);

// CUPTI set up for this process: subscriber, timestamp and buffer callbacks. cupti_start() sets it
// up to check that it works, then detaches it (cuptiFinalize); the first window sets it up again.
// Once its activity kinds have been on, CUPTI adds to every later kernel launch even with them off
// (about 1 us on the H200, BENCHMARKS.md): the detach after the start-up check keeps that cost out
// of the time before the first window. It is not repeated after each window, since cuptiFinalize
// while another thread is inside a driver call strands that thread as switching the callbacks off
// does; after the last window it is (set_collecting): nothing is timed again.
bool attach() {
  Api& a = g_api;
  bool ok = a.register_timestamp(&timestamp) == CUPTI_SUCCESS &&
            a.register_callbacks(&buffer_requested, &buffer_completed) == CUPTI_SUCCESS &&
            a.subscribe(&g_sub, &on_driver_call, nullptr) == CUPTI_SUCCESS;
  if (!ok && g_sub) a.unsubscribe(g_sub);  // as found: another profiler may hold CUPTI
  if (!ok) g_sub = nullptr;
  return ok;
}

// CUPTI detached (cuptiFinalize): at start-up, and after the last window (set_collecting).
void detach() {
  g_api.unsubscribe(g_sub);
  g_api.finalize();
  g_sub = nullptr;
  g_callbacks_on = false;
}

bool set_collecting(bool on) {
  int64_t t0 = mono_ns();
  bool ok = true;
  if (on && !g_sub && !attach()) {
    ++g_switches, g_switch_ns += mono_ns() - t0;
    return false;
  }
  for (CUpti_ActivityKind k : kKinds) ok = (on ? g_api.enable(k) : g_api.disable(k)) == CUPTI_SUCCESS && ok;
  if (on && !g_callbacks_on) {
    ok = switch_callbacks(true) && ok;
    g_callbacks_on = ok;
  }
  if (on && g_last_closed) {
    // A window after the last (e.g. `cutrace start PID` after an NVTX window): CUPTI is set up
    // again, and a thread that was inside a driver call when it detached gets no callback.
    g_last_closed = false;
    log_warn(
        "CUPTI: a capture window opened after the last one; GPU times of threads that were inside a driver "
        "call when CUPTI detached may be missing (counted in the trace's gpu_times_missing)");
  }
  if (!on && g_last_closed && g_sub) {
    // Nothing is timed again: CUPTI detaches, so that the rest of the run does not pay its cost
    // (a thread it strands no longer matters). The window's records are in (cupti_idle waited);
    // what it still holds is work launched after the window.
    {
      std::lock_guard<std::mutex> l(g_mu);
      g_flush_unwanted = true;
    }
    g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    {
      std::lock_guard<std::mutex> l(g_mu);
      g_flush_unwanted = false;
    }
    detach();
    log_info("CUPTI: detached after the last capture window");
  }
  g_collecting = on && ok;
  ++g_switches, g_switch_ns += mono_ns() - t0;
  return ok;
}

void CUPTIAPI on_driver_call(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite == CUPTI_API_ENTER) t_cupti_corr = info->correlationId;
}

void* open_cupti() {
  std::vector<std::string> paths;
  if (const char* p = getenv("CUTRACE_CUPTI")) paths.push_back(p);
  paths.push_back("libcupti.so.13");
  paths.push_back("libcupti.so.12");
  paths.push_back("libcupti.so");
  const char* home = getenv("CUDA_HOME");
  for (std::string h : {std::string(home ? home : ""), std::string("/usr/local/cuda")}) {
    if (h.empty()) continue;
    paths.push_back(h + "/lib64/libcupti.so");
    paths.push_back(h + "/extras/CUPTI/lib64/libcupti.so");
  }
  for (const std::string& p : paths)
    if (void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

template <class F>
bool load(void* h, F& f, const char* name) {
  f = reinterpret_cast<F>(real_dlsym(h, name));
  return f != nullptr;
}

}  // namespace

bool cupti_start(bool quiet, bool exact) {
  auto say = quiet ? &log_info : &log_warn;
  // Event pairs put the events' own GPU work and the kernel's launch latency into its time (about
  // 3-4 us per kernel on the H200): exact mode says so whenever it has to use them.
  const char* fallback =
      exact ? "using start and end events (GPU times a few us too long per operation)" : "using completion events";
  void* h = open_cupti();
  Api& a = g_api;
  bool ok = h && load(h, a.get_version, "cuptiGetVersion") &&
            load(h, a.register_callbacks, "cuptiActivityRegisterCallbacks") &&
            load(h, a.register_timestamp, "cuptiActivityRegisterTimestampCallback") &&
            load(h, a.enable, "cuptiActivityEnable") && load(h, a.disable, "cuptiActivityDisable") &&
            load(h, a.unsubscribe, "cuptiUnsubscribe") && load(h, a.flush_all, "cuptiActivityFlushAll") &&
            load(h, a.next_record, "cuptiActivityGetNextRecord") && load(h, a.subscribe, "cuptiSubscribe") &&
            load(h, a.enable_callback, "cuptiEnableCallback") &&
            load(h, a.dropped, "cuptiActivityGetNumDroppedRecords") && load(h, a.finalize, "cuptiFinalize");
  if (!ok) {
    say("CUPTI (libcupti) not found (set CUTRACE_CUPTI=/path/libcupti.so): %s", fallback);
    return false;
  }
  uint32_t version = 0;
  a.get_version(&version);
  if (version / 10000 != CUPTI_API_VERSION / 10000) {
    say("CUPTI API version %u does not match the one cutrace was built for (%d): %s", version, CUPTI_API_VERSION,
        fallback);
    return false;
  }
  g_spans = new std::unordered_map<uint32_t, Span>();
  g_graph_nodes = new std::unordered_map<uint32_t, std::vector<CuptiGraphNode>>();
  // Try everything once now (another profiler may hold CUPTI), then detach until the first window
  // (attach()): no CUDA work of the job is in flight yet (this runs before its first traced call
  // goes on), so nothing is stranded.
  std::lock_guard<std::mutex> l(g_window_mu);
  ok = attach();
  for (CUpti_ActivityKind k : kKinds) ok = ok && a.enable(k) == CUPTI_SUCCESS;
  for (CUpti_ActivityKind k : kKinds) a.disable(k);
  if (!ok) {  // leave CUPTI as we found it: no activity kinds on, no subscriber
    if (g_sub) a.unsubscribe(g_sub);
    g_sub = nullptr;
    say("CUPTI activity tracing could not be enabled (another profiler attached?): %s", fallback);
    return false;
  }
  detach();
  g_loaded = true;
  return true;
}

// Under g_window_mu: collection on now that both windows are open.
void collect_now() {
  if (g_collecting || set_collecting(true)) return;
  static bool warned = false;
  if (!warned) log_warn("CUPTI collection could not be turned on for a window: its GPU times are missing");
  warned = true;
}

void cupti_window(bool open, bool last) {
  std::lock_guard<std::mutex> l(g_window_mu);
  if (!g_loaded) return;
  g_window_open = open;
  if (open && g_sample_open) collect_now();
  if (!open) g_window_closed_ns = mono_ns(), g_last_closed = last;
  // The last window closed with collection already off (its sample window was shut): nothing for
  // cupti_idle to switch off, so the callbacks go now.
  if (!open && last && !g_collecting && g_callbacks_on) set_collecting(false);
}

void cupti_sample(bool on) {
  std::lock_guard<std::mutex> l(g_window_mu);
  if (!on) g_gpu_sample_on.store(false, std::memory_order_relaxed);  // no new CUPTI ops from here
  if (g_loaded) {
    g_sample_open = on;
    if (on && g_window_open) collect_now();
    if (!on) g_window_closed_ns = mono_ns();
  }
  if (on) g_gpu_sample_on.store(true, std::memory_order_relaxed);  // collection is on first
}

// Under g_window_mu: collecting although a window (capture or sample) is closed.
bool closing_locked() { return g_loaded && g_collecting && !(g_window_open && g_sample_open); }

bool cupti_closing() {
  std::lock_guard<std::mutex> l(g_window_mu);
  return closing_locked();
}

void cupti_idle(bool settled, int64_t now) {
  // 5 ms: an operation whose thread read the sample flag just before it flipped is published
  // (and drained, and counted by `settled`) within a collector cycle or two.
  std::lock_guard<std::mutex> l(g_window_mu);
  if (closing_locked() && ((settled && now - g_window_closed_ns > 5000000) || now - g_window_closed_ns > 5000000000LL))
    set_collecting(false);
}

void cupti_flush(bool forced) {
  int64_t before = mono_ns();
  // The default flush hands over only buffers whose records are all complete (need not be full);
  // a forced one also hands over records of work still in flight, with their timestamps 0 and
  // lost for good. Forced only at the end, after the wait for the GPU. Before the
  // first window CUPTI is detached and left so (any call of it would set it up again).
  // Under the window lock: never beside the detach after the last window (cuptiFinalize).
  {
    std::lock_guard<std::mutex> w(g_window_mu);
    if (g_sub) g_api.flush_all(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  }
  std::lock_guard<std::mutex> l(g_mu);
  g_last_flush = before;
  // Spans no operation will take (work CUPTI timed between a window's end and the switch-off,
  // which the shim did not ask times for): forgotten once they are well past resolve()'s 10 s.
  constexpr int64_t kPruneEveryNs = 10000000000, kOrphanAgeNs = 30000000000;
  static int64_t last_prune = before;
  if (before - last_prune < kPruneEveryNs) return;
  last_prune = before;
  for (auto it = g_spans->begin(); it != g_spans->end();) {
    if (it->second.end >= before - kOrphanAgeNs) {
      ++it;
      continue;
    }
    ++g_n_orphans;
    g_graph_nodes->erase(it->first);
    it = g_spans->erase(it);
  }
}

void cupti_stop() {
  cupti_flush(/*forced=*/true);
  std::lock_guard<std::mutex> l(g_mu);
  log_info(
      "CUPTI: %llu GPU records, %llu spans used, %zu left, %llu forgotten, %llu dropped by CUPTI, "
      "%llu without timestamps, last flush %lld",
      (unsigned long long)g_n_gpu, (unsigned long long)g_n_taken, g_spans->size(), (unsigned long long)g_n_orphans,
      (unsigned long long)g_n_dropped, (unsigned long long)g_n_incomplete, (long long)g_last_flush);
  if (!g_spans->empty()) log_info("CUPTI: a pending span ends at %lld", (long long)g_spans->begin()->second.end);
  log_info("CUPTI: collection switched on or off %llu times, %.3f ms spent switching", (unsigned long long)g_switches,
           double(g_switch_ns) / 1e6);
}

uint32_t cupti_last_correlation() { return t_cupti_corr; }
void cupti_clear_correlation() { t_cupti_corr = 0; }

bool cupti_final(uint32_t corr) {
  std::lock_guard<std::mutex> l(g_mu);
  auto it = g_spans->find(corr);
  return it != g_spans->end() && is_final(it->second);
}

uint64_t cupti_records() {
  std::lock_guard<std::mutex> l(g_mu);
  return g_n_gpu + g_n_incomplete;
}

CuptiLosses cupti_losses() {
  std::lock_guard<std::mutex> l(g_mu);
  return {g_n_dropped, g_n_incomplete};
}

bool cupti_take(uint32_t corr, int64_t* start, int64_t* end, std::vector<CuptiGraphNode>* graph) {
  std::lock_guard<std::mutex> l(g_mu);
  auto it = g_spans->find(corr);
  if (it == g_spans->end() || !is_final(it->second)) return false;
  *start = it->second.start, *end = it->second.end;
  g_spans->erase(it);
  auto g = g_graph_nodes->find(corr);
  if (g != g_graph_nodes->end()) {
    if (graph) {
      *graph = std::move(g->second);
      std::stable_sort(graph->begin(), graph->end(),
                       [](const CuptiGraphNode& a, const CuptiGraphNode& b) { return a.start < b.start; });
    }
    g_graph_nodes->erase(g);
  }
  ++g_n_taken;
  return true;
}

}  // namespace cutrace
