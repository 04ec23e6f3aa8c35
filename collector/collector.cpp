#include "collector/collector.h"
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>
#include "collector/collector_impl.h"
#include "collector/cupti_source.h"
#include "collector/gpu_clock.h"
#include "collector/names.h"
#include "collector/nvtx_meta.h"
#include "collector/ops.h"
#include "collector/process_info.h"
#include "collector/ranges.h"
#include "collector/samplers.h"
#include "collector/stacks.h"
#include "runtime/api_names.h"
#include "runtime/config.h"
#include "runtime/driver.h"
#include "runtime/gpu_sample.h"
#include "runtime/py_layout.h"
#include "runtime/raw_pack.h"
#include "runtime/record_buffer.h"
#include "runtime/thread_state.h"
#include "runtime/ticks.h"
#include "trace/live_status.h"
#include "trace/safe_file.h"
#include "trace/writer.h"

namespace cutrace {

namespace {
enum State : int { kIdle, kStarting, kRunning, kDisabled, kStopped };

// A ClockSync record of now. Through locals: the record is packed, and a pointer to one of its
// fields may be misaligned (UBSan: store to misaligned address).
trace::ClockSyncRec clock_sync_now() {
  int64_t mono = 0, real = 0;
  clock_pair(&mono, &real);
  trace::ClockSyncRec cs{};
  cs.monotonic_ns = mono;
  cs.realtime_ns = real;
  return cs;
}
std::atomic<int> g_state{kIdle};
// The process whose collector g_col is: a vfork() child shares our memory (and runs no atfork
// handler), so an exec there must leave the parent's collector alone.
std::atomic<int> g_owner_pid{0};
std::atomic<int> g_fatal_signal{0};
// The status this process exits with (0..255) once exit() runs (return from main included),
// as on_exit() hands it over; -1 before, or when the process ends another way.
std::atomic<int> g_exit_status{-1};
std::atomic<bool> g_signal_flushed{false};
// When capture ended for good (exit, fatal signal): read just before capture goes off, so that a
// call that returned before it was seen with capture on (recorded or counted).
std::atomic<int64_t> g_capture_end_ns{0};

Collector* g_col = nullptr;

void recycle(ThreadState* owner, CUcontext ctx, CUevent a, CUevent b) {
  for (CUevent e : {a, b}) {
    if (!e) continue;
    bool kept = false;
    if (owner && !owner->retired.load(std::memory_order_acquire))
      for (EventPool& p : owner->pools)
        if (p.ctx.load(std::memory_order_acquire) == ctx) {
          kept = p.free.push(e);
          break;
        }
    if (!kept) driver().cuEventDestroy(e);
  }
  if (owner) --owner->pending_refs;
}

// ---- start / stop -----------------------------------------------------------------------
void at_exit(int status, void*) {
  g_exit_status.store(status & 0xff);
  collector_shutdown(trace::kEndClean);
}

void on_fatal_signal(int sig) {
  // Ask the collector to write what it has, wait for it (bounded: 10 s, within the grace period
  // schedulers give before SIGKILL; a backlog of the whole buffer budget takes seconds), then die
  // as before.
  // By the clock, not a count of sleeps: another signal cuts a sleep short (clock_gettime and
  // nanosleep are async-signal-safe).
  g_fatal_signal.store(sig);
  const int64_t deadline = mono_ns() + 10000000000;
  while (g_state.load() == kRunning && !g_signal_flushed.load() && mono_ns() < deadline) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, nullptr);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_signal_flush() {
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGABRT}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

bool Collector::start() {
  const Config& cfg = config();
  std::string err;
  if (!make_output_dir(cfg.out_dir, &err)) {
    log_warn("%s; capture disabled, the program continues", err.c_str());
    return false;
  }
  if (!chunk_pool().ready() && !chunk_pool().init(cfg.buffer_mb << 20)) {
    log_warn("cannot reserve %zu MB of address space for the capture buffer; capture disabled, the program continues",
             cfg.buffer_mb);
    return false;
  }
  chunk_pool().prefault();
  RankInfo rank = detect_rank();
  live_.pid = getpid(), live_.rank = rank.rank < 0 ? 0 : rank.rank, live_.host = host_name();
  std::string base = trace_path(cfg.out_dir, rank);
  path_ = base;
  if (cfg.flight_s > 0) w_.set_flight(int64_t(cfg.flight_s * 1e9), cfg.buffer_mb << 20);
  for (int i = 1; !w_.open(path_, &err); ++i) {
    if (i > 20 || errno != EEXIST) {
      log_warn("cannot create trace file %s: %s; capture disabled, the program continues", path_.c_str(), err.c_str());
      return false;
    }
    // host.rank0.pid7.1.cutrace: still a *.cutrace file for the tools that list a directory.
    path_ = base.substr(0, base.size() - std::strlen(".cutrace")) + "." + std::to_string(i) + ".cutrace";
  }
  if (cfg.timing == GpuTiming::Cupti && !cupti_start(cfg.timing_auto, cfg.timing_exact))
    g_timing = cfg.timing_exact ? GpuTiming::Events : GpuTiming::End;
  if (cfg.gpu_sample < 1 && g_timing != GpuTiming::None) {
    int64_t now = mono_ns();
    gpu_sample_.emplace(cfg.gpu_sample, cfg.gpu_sample_period_ns, now, uint64_t(getpid()) ^ uint64_t(now));
    set_gpu_sample(gpu_sample_->on_at(now));  // before the first operation is recorded
  }
  if (g_timing == GpuTiming::Cupti && g_capture_on.load(std::memory_order_relaxed)) cupti_window(true);
  const char* timing = g_timing == GpuTiming::Events  ? "events"
                       : g_timing == GpuTiming::None  ? "none"
                       : g_timing == GpuTiming::Cupti ? "cupti"
                                                      : "end";
  write_process_meta(w_, rank, timing);
  w_.meta("backtrace", g_backtrace == Backtrace::None ? "none" : g_backtrace == Backtrace::All ? "all" : "sync");
  if (g_pyrt.layout) {  // a supported CPython was found at load
    char v[48];
    snprintf(v, sizeof v, "%s 3.%d",
             g_py_stacks == PyStacks::Launch ? "launch"
             : g_py_stacks == PyStacks::Sync ? "sync"
                                             : "none",
             g_pyrt.layout->minor);
    w_.meta("python_stacks", v);
  }
  if (gpu_sample_) {
    char f[32];
    snprintf(f, sizeof f, "%g", cfg.gpu_sample);
    w_.meta("gpu_sample", f);
    w_.meta("gpu_sample_period_ns", std::to_string(cfg.gpu_sample_period_ns));
  }
  for (size_t i = 0; i < func_count(); ++i) w_.api_name(uint16_t(i), api_name(uint16_t(i)));
  write_devices(w_);
  trace::ClockSyncRec cs = clock_sync_now();
  w_.add(cs, trace::RecType::ClockSync);
  started_ns_ = cs.monotonic_ns;
  live_.started_ns = cs.realtime_ns, live_.trace = path_;
  if (!capture_deferred()) window_edge(trace::WindowEdge::Begin, cs.monotonic_ns, "process");
  control_path_ = cfg.out_dir + "/.cutrace-ctl." + std::to_string(getpid());
  clock_.init();
  ops_.set_recycler(&recycle);
  sample_period_ = cfg.sample_hz > 0 ? 1000000000 / cfg.sample_hz : 0;
  hang_timeout_ns_ = int64_t(cfg.hang_timeout_s * 1e9);
  if (hang_timeout_ns_ > 0) {
    hang_path_ = cfg.out_dir + "/hang." + live_.host + ".rank" + std::to_string(live_.rank) + ".txt";
    char t[32];
    snprintf(t, sizeof t, "%g", cfg.hang_timeout_s);
    w_.meta("hang_timeout_s", t);
  }

  if (w_.flight()) flight_start();  // writes metas: before the collector thread shares the writer
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the collector thread never takes the app's signals
  int rc = pthread_create(&thread_, nullptr, &Collector::thread_main, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    log_warn("cannot start the collector thread; capture disabled");
    return false;
  }
  on_exit(at_exit, nullptr);  // glibc: like atexit, with the exit status
  install_signal_flush();
  log_info("recording to %s", path_.c_str());
  return true;
}

void* Collector::thread_main(void* self) {
  t_in_shim = true;  // wrappers called from here pass straight through
  static_cast<Collector*>(self)->run();
  return nullptr;
}

void Collector::run() {
  const Driver& d = driver();
  if (d.cuThreadExchangeStreamCaptureMode) {
    // Our event queries must never invalidate an application's graph capture.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    d.cuThreadExchangeStreamCaptureMode(&mode);
  }
  struct timespec two_ms = {0, 2000000};
  nanosleep(&two_ms, nullptr);  // a first interval for the tick rate
  clock_.update();
  std::vector<std::vector<uint8_t>> uuids;
  int n = 0;
  if (d.cuDeviceGetCount && d.cuDeviceGetCount(&n) == CUDA_SUCCESS && d.cuDeviceGetUuid)
    for (int i = 0; i < n; ++i) {
      CUuuid u{};
      d.cuDeviceGetUuid(&u, i);
      uuids.emplace_back(u.bytes, u.bytes + 16);
    }
  if (sample_period_) {
    gpus_.init(uuids);
    counters_.open(w_, config().cpu_counters, sample_period_);
  }
  for (;;) {
    int64_t now = mono_ns();
    cycle(now);
    if (int sig = g_fatal_signal.load()) {
      finish(trace::kEndSignal, 200000000);
      g_signal_flushed.store(true);
      (void)sig;
      return;
    }
    std::unique_lock<std::mutex> l(mu_);
    if (stop_) break;
    if (req_seq_ == done_seq_) cv_.wait_for(l, std::chrono::nanoseconds(kCycleNs));
  }
  finish(stop_flags_, kExitWaitNs);
}

void Collector::cycle(int64_t now) {
  follow_gpu_sample(now);
  // A window closed: collection goes off once its work has its records (cupti_idle checks the
  // window state again). Threads inside a CUPTI-timed call are asked before the drain.
  const bool closing = g_timing == GpuTiming::Cupti && cupti_closing();
  const bool in_cupti_call = closing && registry_in_cupti_call();
  drain();
  ops_.poll();
  if (closing) {
    // Flushed every 5 ms meanwhile (not every 100 ms), so that CUPTI's per-launch cost ends soon
    // after the window.
    bool settled = !in_cupti_call && ops_.cupti_settled();
    if (!settled && now - last_tail_flush_ >= 5000000) cupti_flush(), last_tail_flush_ = now;
    cupti_idle(settled, now);
  }
  refill_pools();
  chunk_pool().prefault();
  periodic(now);
  serve_requests();
}

// ---- GPU-timing sample (CUTRACE_GPU_SAMPLE) ----------------------------------------------
void Collector::set_gpu_sample(bool on) {
  if (g_timing == GpuTiming::Cupti) cupti_sample(on);
  else g_gpu_sample_on.store(on, std::memory_order_relaxed);
  gpu_sample_on_ = on;
  if (on) ++gpu_sample_windows_;
}

void Collector::follow_gpu_sample(int64_t now) {
  if (gpu_sample_ && gpu_sample_->on_at(now) != gpu_sample_on_) set_gpu_sample(!gpu_sample_on_);
}

void Collector::periodic(int64_t now) {
  if (now - last_clock_ >= kClockNs) {
    control(now);
    clock_.update();
    while_capturing([&] { gpu_.tick(now); });  // anchors: inside windows only
    if (g_timing == GpuTiming::Cupti) cupti_flush();
    last_clock_ = now;
  }
  // Samplers run inside capture windows only: outside them the job is left alone.
  if (sample_period_ && now - last_sample_ >= sample_period_ && g_capture_on.load(std::memory_order_relaxed)) {
    cpu_.sample(w_, now);
    counters_.sample(w_, now);
    gpus_.sample(w_, now);
    last_sample_ = now;
  }
  if (now - last_flush_ >= kFlushNs) {
    trace::ClockSyncRec cs = clock_sync_now();
    w_.add(cs, trace::RecType::ClockSync);
    w_.flush();
    last_flush_ = now;
    publish_status(cs.realtime_ns);
  }
  if (w_.flight()) flight_poll(now);
  if (hang_timeout_ns_ > 0 && now - last_hang_check_ >= kHangCheckNs) {
    watch_hangs(now);
    last_hang_check_ = now;
  }
}

// DIR/.cutrace-status.<pid> (trace/live_status.h), once a second with the flush.
void Collector::publish_status(int64_t realtime_ns) {
  live_.updated_ns = realtime_ns;
  live_.records = w_.records(), live_.bytes = w_.bytes_written(), live_.dropped = dropped_total_;
  live_.ops_in_flight = ops_.pending();
  live_.capturing = g_capture_on.load(std::memory_order_relaxed);
  write_live_status(config().out_dir, live_);
}

void Collector::serve_requests() {
  std::vector<CUcontext> forget;
  uint64_t seq;
  bool wait, clear;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (req_seq_ == done_seq_ && forget_ctx_.empty()) return;
    seq = req_seq_, wait = req_wait_gpu_, clear = req_clear_names_;
    req_wait_gpu_ = req_clear_names_ = false;
    forget.swap(forget_ctx_);
  }
  drain();
  if (wait) wait_gpu(kExitWaitNs);
  if (clear) names_.clear();
  for (CUcontext c : forget) {
    ops_.abandon(c);
    gpu_.forget(c);
    ctx_device_.erase(c);
  }
  w_.flush();
  std::lock_guard<std::mutex> l(mu_);
  done_seq_ = seq;
  cv_.notify_all();
}

// Until every pending operation has its GPU times, or wait_ns passed. With CUPTI, also until no
// record has come for 3 s: an operation CUPTI made no record for (dropped) is not waited for.
void Collector::wait_gpu(int64_t wait_ns) {
  constexpr int64_t kCuptiQuietNs = 3000000000;
  int64_t start = mono_ns(), deadline = start + wait_ns, last_record = start;
  uint64_t records = g_timing == GpuTiming::Cupti ? cupti_records() : 0;
  for (int i = 0; ops_.poll(/*all=*/true) > 0; ++i) {
    int64_t now = mono_ns();
    if (now >= deadline) break;
    if (g_timing == GpuTiming::Cupti && i % 200 == 0) {
      cupti_flush();
      uint64_t n = cupti_records();
      if (n != records) records = n, last_record = now;
      else if (now - last_record > kCuptiQuietNs) break;
    }
    struct timespec ts = {0, 50000};
    nanosleep(&ts, nullptr);
  }
}

// Makes every thread's earlier stores visible to this one (see enter_record in shim/op.h).
namespace {
void heavy_barrier() {
  static const int mode = [] {
    if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) return 1;
    long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    return q > 0 && (q & MEMBARRIER_CMD_GLOBAL) ? 2 : 0;
  }();
  if (mode == 1 && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
  if (mode == 2 && syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0) return;
  // No membarrier (an old kernel, a seccomp filter): a store buffer drains in microseconds.
  struct timespec ts = {0, 10000000};
  nanosleep(&ts, nullptr);
}
}  // namespace

void Collector::quiesce(int64_t end_ns) {
  g_capture_on.store(false, std::memory_order_seq_cst);
  heavy_barrier();
  int64_t deadline = mono_ns() + kQuiesceNs;
  for (;;) {
    bool busy = false;
    for (ThreadState* s = registry_head(); s && !busy; s = s->next.load(std::memory_order_acquire))
      busy = s->busy.load(std::memory_order_acquire) != 0;
    if (!busy || mono_ns() >= deadline) break;
    struct timespec ts = {0, 200000};
    nanosleep(&ts, nullptr);
  }
  drain(/*all=*/true);
  heavy_barrier();  // the sync wrappers' stores (sync_t0, ...) of threads still busy
  // Calls still in progress: a thread blocked in a synchronisation (an open Sync record), or the
  // one a signal stopped (a Loss).
  for (ThreadState* s = registry_head(); s; s = s->next.load(std::memory_order_acquire)) {
    uint8_t k = s->busy.load(std::memory_order_acquire);
    if (!k || k >= kRawKinds) continue;
    if (RawKind(k) == RawKind::Sync && open_sync(s, end_ns)) continue;
    uint64_t by[kRawKinds] = {};
    by[k] = 1;
    write_loss(s->tid, trace::LossReason::Exit, end_ns, end_ns, by);
  }
}

// The synchronisation `s` is blocked in, from what its wrapper published before calling the
// driver; false when that is a finished call's (the thread is busy with another call). No driver
// call: this may run after a fatal signal.
bool Collector::open_sync(ThreadState* s, int64_t end_ns) {
  uint64_t t0 = s->sync_t0.load(std::memory_order_relaxed);
  if (!t0 || (s->seq && int64_t(t0 - s->last_t0) <= 0)) return false;
  uint32_t what = s->sync_what.load(std::memory_order_relaxed);
  uint64_t handle = s->sync_handle.load(std::memory_order_relaxed);
  auto kind = trace::SyncKind(what & 0xff);
  trace::SyncRec r{};
  r.cpu_begin = std::min(clock_.to_ns(t0), end_ns), r.cpu_end = end_ns, r.tid = s->tid;
  r.api = uint16_t(what >> 16), r.kind = uint8_t(uint8_t(kind) | trace::kSyncOpen);
  r.corr = (uint64_t(s->index) << 40) | (s->seq + 1);
  auto dev = ctx_device_.find(s->rd_ctx);
  r.device = dev != ctx_device_.end() ? dev->second : 0;
  if (kind == trace::SyncKind::Event) r.event = handle;
  else if (kind == trace::SyncKind::Stream)
    r.stream = ops_.stream_id(reinterpret_cast<CUstream>(handle), s->rd_ctx, s->tid, (what >> 8) & 1, r.device);
  w_.add(r, trace::RecType::Sync);
  ++syncs_open_;
  return true;
}

void Collector::finish(uint32_t flags, int64_t wait_ns) {
  if (finished_) return;
  finished_ = true;
  if (!(flags & trace::kEndSignal)) {  // after a fatal signal: only what the trace needs
    int64_t mono = 0, real = 0;
    clock_pair(&mono, &real);
    live_.finishing = true;
    publish_status(real);
  }
  int64_t end_ns = g_capture_end_ns.load();
  if (!end_ns) g_capture_end_ns.store(end_ns = mono_ns());
  quiesce(end_ns);
  w_.meta("capture_end_ns", std::to_string(end_ns));
  if (flags & trace::kEndSignal) {
    // The thread the signal stopped may hold a driver or CUPTI lock: no call into either from
    // here on. Operations still waiting for GPU times are written without them (counted in
    // gpu_times_missing), their events left to the dying process.
    ops_.set_recycler([](ThreadState* owner, CUcontext, CUevent, CUevent) {
      if (owner) --owner->pending_refs;
    });
  } else {
    // A context first seen after its window closed: its anchor now, once the job's work is done.
    gpu_.anchor_new();
    wait_gpu(wait_ns);
    if (g_timing == GpuTiming::Cupti) cupti_stop();
    drain(/*all=*/true);  // records published meanwhile (pops of recorded pushes), loss counts
    wait_gpu(wait_ns / 10);
    if (hang_open_) watch_hangs(mono_ns());  // the reported work may have completed since the last look
  }
  ops_.abandon(nullptr, /*at_exit=*/true);
  ranges_.finish(end_ns);
  if (window_open_) window_edge(trace::WindowEdge::End, mono_ns(), flags & trace::kEndSignal ? "signal" : "exit");
  struct timespec cpu {};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)  // what profiling cost this process's CPUs
    w_.meta("collector_cpu_ns", std::to_string(int64_t(cpu.tv_sec) * 1000000000 + cpu.tv_nsec).c_str());
  if (int status = g_exit_status.load(); status >= 0 && !(flags & trace::kEndSignal))
    w_.meta("exit_status", std::to_string(status));
  if (int sig = g_fatal_signal.load(); sig > 0 && (flags & trace::kEndSignal)) w_.meta("signal", std::to_string(sig));
  if (g_timing == GpuTiming::Cupti) {
    CuptiLosses lost = cupti_losses();
    if (lost.dropped) w_.meta("cupti_dropped_records", std::to_string(lost.dropped));
    if (lost.incomplete) w_.meta("cupti_incomplete_records", std::to_string(lost.incomplete));
  }
  if (gpu_sample_) {
    w_.meta("gpu_sample_windows", std::to_string(gpu_sample_windows_));
    log_info("GPU-timing sample: %llu windows", (unsigned long long)gpu_sample_windows_);
  }
  if (uint64_t n = ops_.pending_at_exit()) {
    w_.meta("pending_at_exit", std::to_string(n));
    log_info("%llu GPU operations still pending at exit (flagged pending_exit)", (unsigned long long)n);
  }
  if (syncs_open_) w_.meta("syncs_open_at_exit", std::to_string(syncs_open_));
  if (hangs_) w_.meta("hangs_reported", std::to_string(hangs_));
  if (uint64_t n = ops_.missing()) {
    w_.meta("gpu_times_missing", std::to_string(n));
    log_info("%llu GPU operations written without GPU times (see gpu_times_missing in FORMAT.md)",
             (unsigned long long)n);
  }
  ChunkPool& pool = chunk_pool();
  w_.meta("buffer_budget_bytes", std::to_string(pool.capacity_bytes()));
  w_.meta("buffer_peak_bytes", std::to_string(size_t(pool.peak_in_use()) * kChunkBytes));
  w_.meta("records_captured", std::to_string(records_read_));
  if (dropped_total_) {
    uint64_t issued = records_read_ + dropped_total_;
    // `cutrace record` prints the same per rank (CUTRACE_SESSION is set by it).
    if (!getenv("CUTRACE_SESSION"))
      log_warn("%llu of %llu records dropped (%.1f%%): buffer budget %zu MB reached; raise CUTRACE_BUFFER_MB",
               (unsigned long long)dropped_total_, (unsigned long long)issued,
               100.0 * double(dropped_total_) / double(issued), pool.capacity_bytes() >> 20);
  }
  if (stacks_lost_) {
    w_.meta("stacks_lost", std::to_string(stacks_lost_));
    log_info("%llu call stacks not recorded (stack ring full)", (unsigned long long)stacks_lost_);
  }
  if (w_.flight()) flight_at_end((flags & trace::kEndSignal) ? g_fatal_signal.load() : 0, g_exit_status.load());
  bool closed = w_.close(dropped_total_, flags | (w_.failed() ? uint32_t(trace::kEndWriteError) : 0u)) && !w_.failed();
  unlink(live_status_path(config().out_dir, live_.pid).c_str());  // the trace is complete: no live status
  // Capture waited for a window that never opened (a launcher such as torchrun's parent, which
  // touches CUDA but runs no step; a job that ended before --delay): nothing was recorded, and a
  // file would only be one more "rank" beside the real ones. `cutrace record` says when no file
  // at all was written.
  if (capture_deferred() && window_index_ == 0) {
    unlink(path_.c_str());
    log_info("no capture window opened in this process: no trace file written");
  } else if (!closed) {
    log_warn("trace %s is incomplete: %s", path_.c_str(), w_.error().c_str());
  } else {
    log_info("wrote %s (%llu records)", path_.c_str(), (unsigned long long)w_.records());
  }
}

void Collector::request_sync(bool wait_gpu, bool clear_names) {
  std::unique_lock<std::mutex> l(mu_);
  if (stop_ || finished_) return;
  uint64_t mine = ++req_seq_;
  req_wait_gpu_ |= wait_gpu;
  req_clear_names_ |= clear_names;
  cv_.notify_all();
  cv_.wait_for(l, std::chrono::seconds(30), [&] { return done_seq_ >= mine || stop_; });
}

void Collector::shutdown(uint32_t end_flags) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    stop_ = true;
    stop_flags_ = end_flags;
    cv_.notify_all();
  }
  pthread_join(thread_, nullptr);
}

// ---- capture windows --------------------------------------------------------------------
void Collector::window_edge(trace::WindowEdge edge, int64_t ts, const char* reason) {
  bool begin = edge == trace::WindowEdge::Begin;
  if (begin == window_open_) return;  // already in that state (e.g. start twice)
  trace::WindowRec win{};
  win.ts = ts, win.index = begin ? window_index_ : window_index_ - 1, win.reason_id = w_.intern(reason);
  win.edge = uint8_t(edge);
  if (!w_.flight()) w_.add(win, trace::RecType::Window);  // flight: the snapshots are the windows
  window_open_ = begin;
  if (begin) ++window_index_, window_began_ns_ = ts;
}

void Collector::control(int64_t now) {
  const Config& cfg = config();
  auto set = [&](bool on, const char* reason, bool last = false) {
    if (on == g_capture_on.load(std::memory_order_relaxed)) return;
    if (!on) drain();  // what was recorded before the edge goes before it
    if (on && g_timing == GpuTiming::Cupti) cupti_window(true);
    g_capture_on.store(on, std::memory_order_relaxed);
    if (!on && g_timing == GpuTiming::Cupti) cupti_window(false, last);
    window_edge(on ? trace::WindowEdge::Begin : trace::WindowEdge::End, mono_ns(), reason);
  };
  if (cfg.delay_s > 0 && !delay_done_ && now - started_ns_ >= int64_t(cfg.delay_s * 1e9)) {
    delay_done_ = true;
    set(true, "delay");
  }
  // In process mode (with or without --delay) nothing reopens a window that --duration closed,
  // unless `cutrace start PID` does.
  if (cfg.duration_s > 0 && window_open_ && now - window_began_ns_ >= int64_t(cfg.duration_s * 1e9))
    set(false, "duration", /*last=*/cfg.capture == CaptureRange::Process);
  // `cutrace start|stop PID` writes "start" or "stop" into this file.
  // Only a regular file of this user, opened so that a FIFO or a symlink put there cannot block.
  char cmd[16] = {};
  int fd = open_regular(control_path_.c_str(), kSafeNoFollow | kSafeOwnUser);
  if (fd < 0) return;
  ssize_t n = read(fd, cmd, sizeof cmd - 1);
  close(fd);
  unlink(control_path_.c_str());
  std::string c(cmd, size_t(n > 0 ? n : 0));
  if (c.rfind("snapshot", 0) == 0) {
    if (w_.flight()) flight_snapshot("snapshot");
    else log_warn("cutrace snapshot: this process does not run the flight recorder (--capture-range flight:SECONDS)");
  } else if (c.rfind("start", 0) == 0) set(true, "signal");
  else if (c.rfind("stop", 0) == 0) set(false, "signal");
}

// ---- public entry points ----------------------------------------------------------------
bool collector_ensure_started() {
  static __thread bool t_starting = false;  // start() itself may come back here (dlsym, CUPTI)
  int s = g_state.load(std::memory_order_acquire);
  if (s == kRunning) return true;
  if (t_starting || (s != kIdle && s != kStarting)) return false;
  int expected = kIdle;
  if (g_state.compare_exchange_strong(expected, kStarting)) {
    auto* c = new Collector();  // lives until exit: never freed (wrappers may run during exit)
    t_starting = true;
    bool ok = c->start();
    t_starting = false;
    if (ok) g_col = c, g_owner_pid.store(int(getpid()), std::memory_order_relaxed);
    else g_capture_on.store(false, std::memory_order_relaxed);
    g_state.store(ok ? kRunning : kDisabled, std::memory_order_release);
    return ok;
  }
  while ((s = g_state.load(std::memory_order_acquire)) == kStarting) sched_yield();
  return s == kRunning;
}

bool collector_running() { return g_state.load(std::memory_order_acquire) == kRunning; }

void collector_sync(bool wait_gpu) {
  if (g_state.load(std::memory_order_acquire) == kRunning && g_col) g_col->request_sync(wait_gpu, !wait_gpu);
}

void collector_forget_context(CUcontext ctx) {
  if (g_state.load(std::memory_order_acquire) == kRunning && g_col) {
    g_col->forget_context(ctx);
    g_col->request_sync(false, false);
  }
}

void collector_shutdown(uint32_t end_flags) {
  int expected = kRunning;
  if (!g_state.compare_exchange_strong(expected, kStopped)) return;
  g_capture_end_ns.store(mono_ns());
  g_capture_on.store(false, std::memory_order_seq_cst);
  g_col->shutdown(end_flags);
}

// An exec from a vfork() child (Python's subprocess, for one) runs on the parent's memory: the
// parent's collector must not be shut down (or restarted after a failed exec) from there.
static bool in_collector_process() { return g_owner_pid.load(std::memory_order_relaxed) == int(getpid()); }

void collector_before_exec() {
  if (in_collector_process()) collector_shutdown(trace::kEndClean);
}

void collector_after_failed_exec() {
  if (!in_collector_process()) return;
  int expected = kStopped;
  if (!g_state.compare_exchange_strong(expected, kIdle)) return;
  g_col = nullptr;  // the stopped collector (and its closed file) is left as it is
  g_capture_on.store(config().enabled && !capture_deferred(), std::memory_order_relaxed);
}

void collector_after_fork_child() {
  g_col = nullptr;  // the parent's collector (and its file) belong to the parent
  g_owner_pid.store(0, std::memory_order_relaxed);
  g_state.store(kIdle, std::memory_order_relaxed);
  g_fatal_signal.store(0);
  g_exit_status.store(-1);
  g_signal_flushed.store(false);
  registry_reset_after_fork();
  chunk_pool().abandon();  // the parent's threads' chunks: mapped, never used here
  g_capture_on.store(config().enabled, std::memory_order_relaxed);
}

}  // namespace cutrace
