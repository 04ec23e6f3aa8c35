#include "collector/collector.h"
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <signal.h>
#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>
#include "collector/cupti_source.h"
#include "collector/gpu_sample.h"
#include "collector/gpu_clock.h"
#include "collector/names.h"
#include "collector/ops.h"
#include "collector/process_info.h"
#include "collector/nvtx_meta.h"
#include "collector/ranges.h"
#include "collector/safe_file.h"
#include "collector/samplers.h"
#include "collector/stacks.h"
#include "collector/writer.h"
#include "shim/binding.h"
#include "shim/config.h"
#include "shim/driver.h"
#include "shim/raw_pack.h"
#include "shim/record_buffer.h"
#include "shim/thread_state.h"
#include "shim/ticks.h"

namespace cutrace {

extern GpuTiming g_timing;

namespace {

constexpr int64_t kCycleNs = 1000000;        // drain and poll every 1 ms
constexpr int64_t kFlushNs = 1000000000;     // write a block at least once a second
constexpr int64_t kClockNs = 100000000;      // tick-rate and GPU anchors every 100 ms
constexpr int64_t kExitWaitNs = 10000000000; // at exit, wait up to 10 s for GPU work to finish
// A drain round takes at most kDrainChunk records from each thread (so the batch holds at most
// threads x 256 records, not whole backlogs); one drain() takes at most kDrainRounds rounds, then
// the cycle finalises operations and does its periodic work, so neither waits on the other long.
constexpr size_t kDrainChunk = 256;
constexpr int kDrainRounds = 64;
// Operations waiting for their GPU times (~230 bytes each) are normally kept 200 ms after their
// launch (OpResolver::poll's grace period, for threads that publish late). Past this many, the
// grace period shrinks and draining waits for poll: the records stay in the threads' chunks,
// within the buffer budget, instead of in the collector's unbounded memory.
constexpr size_t kMaxPendingOps = 65536;
// At exit, how long calls already being recorded get to publish their records.
constexpr int64_t kQuiesceNs = 100000000;

struct Drained {
  RawRecord r;
  ThreadState* owner = nullptr;
  std::string name;  // annotation names copied by the owner (kRawNameSlot)
  uint32_t stack = 0;  // interned call stack (kRawStackSlot), 0 = none
};

enum State : int { kIdle, kStarting, kRunning, kDisabled, kStopped };

// A ClockSync record of now. Through locals: the record is packed, and a pointer to one of its
// fields may be misaligned (UBSan: store to misaligned address).
fmt::ClockSyncRec clock_sync_now() {
  int64_t mono = 0, real = 0;
  clock_pair(&mono, &real);
  fmt::ClockSyncRec cs{};
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

class Collector {
 public:
  bool start();
  void request_sync(bool wait_gpu, bool clear_names);
  void shutdown(uint32_t end_flags);
  void forget_context(CUcontext c) {
    std::lock_guard<std::mutex> l(mu_);
    forget_ctx_.push_back(c);
  }

 private:
  static void* thread_main(void* self);
  void run();
  void cycle(int64_t now);
  void drain(bool all = false);  // all: until every published record is read (exit)
  size_t drain_round();  // one bounded round of drain(); returns the records taken
  size_t read_records(ThreadState* s, size_t limit, uint64_t horizon);
  bool scan_ahead(ThreadState* s, size_t limit, uint64_t* t0);
  bool fully_read(ThreadState* s);
  void report_losses(ThreadState* s);
  void write_loss(uint32_t tid, fmt::LossReason why, int64_t begin, int64_t end, const uint64_t* by_raw_kind);
  void quiesce(int64_t end_ns);  // exit: capture off, calls in progress published or counted
  void handle(const Drained& d);
  void add_gpu_op(const Drained& d, int64_t t0, int64_t t1, uint16_t device, uint32_t sid);
  void handle_annotation(const Drained& d, int64_t ts);
  void link_stack(const Drained& d, fmt::RecType op_type);
  void window_edge(fmt::WindowEdge edge, int64_t ts, const char* reason);
  void control(int64_t now);  // timed windows and `cutrace start|stop PID`
  void refill_pools();
  void periodic(int64_t now);
  void follow_gpu_sample(int64_t now);
  void set_gpu_sample(bool on);
  void serve_requests();
  void finish(uint32_t flags, int64_t wait_ns);
  void wait_gpu(int64_t wait_ns);
  uint16_t device_of(CUcontext ctx);
  uint8_t classify(uint64_t addr, uint8_t hint);

  TraceWriter w_;
  TickClock clock_;
  GpuClock gpu_;
  RangeTracker ranges_{w_};
  OpResolver ops_{w_, gpu_, ranges_};
  Names names_{w_};
  StackInterner stacks_{w_};
  CpuSampler cpu_;
  GpuSampler gpus_;
  std::string path_;
  pthread_t thread_{};
  std::vector<Drained> batch_;   // the first batch_n_ are this round's; entries are reused
  size_t batch_n_ = 0;
  std::vector<uint32_t> order_;  // batch_ indices in call order
  std::unordered_map<CUcontext, uint16_t> ctx_device_;
  uint64_t dropped_total_ = 0;
  uint64_t records_read_ = 0;  // records the threads published (Context records not counted)
  uint64_t stacks_lost_ = 0;  // call stacks not recorded: a thread's stack ring was full
  int64_t last_flush_ = 0, last_clock_ = 0, last_sample_ = 0, sample_period_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t req_seq_ = 0, done_seq_ = 0;
  bool req_wait_gpu_ = false, req_clear_names_ = false, stop_ = false;
  uint32_t stop_flags_ = fmt::kEndClean;
  std::vector<CUcontext> forget_ctx_;
  bool finished_ = false;
  bool window_open_ = false;
  uint32_t window_index_ = 0;
  int64_t started_ns_ = 0, window_began_ns_ = 0;
  bool delay_done_ = false;
  std::string control_path_;
  // CUTRACE_GPU_SAMPLE: the windows GPU times are taken in (absent: always).
  std::optional<GpuSampleSchedule> gpu_sample_;
  bool gpu_sample_on_ = true;
  uint64_t gpu_sample_windows_ = 0;
  int64_t last_tail_flush_ = 0;
};

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
  collector_shutdown(fmt::kEndClean);
}

void on_fatal_signal(int sig) {
  // Ask the collector to write what it has, wait for it (bounded: 10 s, within the grace period
  // schedulers give before SIGKILL; a backlog of the whole buffer budget takes seconds), then die
  // as before.
  g_fatal_signal.store(sig);
  for (int i = 0; i < 2000 && g_state.load() == kRunning && !g_signal_flushed.load(); ++i) {
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
  std::string base = trace_path(cfg.out_dir, rank);
  path_ = base;
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
  if (gpu_sample_) {
    char f[32];
    snprintf(f, sizeof f, "%g", cfg.gpu_sample);
    w_.meta("gpu_sample", f);
    w_.meta("gpu_sample_period_ns", std::to_string(cfg.gpu_sample_period_ns));
  }
  for (size_t i = 0; i < func_count(); ++i) w_.api_name(uint16_t(i), api_name(uint16_t(i)));
  write_devices(w_);
  fmt::ClockSyncRec cs = clock_sync_now();
  w_.add(cs, fmt::RecType::ClockSync);
  started_ns_ = cs.monotonic_ns;
  if (!cfg.deferred()) window_edge(fmt::WindowEdge::Begin, cs.monotonic_ns, "process");
  control_path_ = cfg.out_dir + "/.cutrace-ctl." + std::to_string(getpid());
  clock_.init();
  ops_.set_recycler(&recycle);
  sample_period_ = cfg.sample_hz > 0 ? 1000000000 / cfg.sample_hz : 0;

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
  if (sample_period_) gpus_.init(uuids);
  for (;;) {
    int64_t now = mono_ns();
    cycle(now);
    if (int sig = g_fatal_signal.load()) {
      finish(fmt::kEndSignal, 200000000);
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

// GPU clock anchors (an event recorded on the collector's private stream) only inside capture
// windows: outside them the shim adds no work to the GPU. A thread closing a window waits while
// g_gpu_anchoring is set, so an anchor decided before the close is recorded before it returns
// (profiler_api_window_and_nothing_outside saw one after cuProfilerStop when a run was slow enough
// for a 100 ms anchor to fall after it, and, under TSan, a context's first anchor taken when the
// collector drained the window's first launch after the window had closed), and, under TSan, one
// decided just before the window closed and recorded just after.
template <class F>
void while_capturing(F&& f) {
  g_gpu_anchoring.store(true, std::memory_order_seq_cst);
  if (g_capture_on.load(std::memory_order_seq_cst)) f();
  g_gpu_anchoring.store(false, std::memory_order_release);
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
    gpus_.sample(w_, now);
    last_sample_ = now;
  }
  if (now - last_flush_ >= kFlushNs) {
    fmt::ClockSyncRec cs = clock_sync_now();
    w_.add(cs, fmt::RecType::ClockSync);
    w_.flush();
    last_flush_ = now;
  }
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
  // Calls still in progress (a thread blocked in a synchronisation, or the one a signal stopped).
  for (ThreadState* s = registry_head(); s; s = s->next.load(std::memory_order_acquire)) {
    uint8_t k = s->busy.load(std::memory_order_acquire);
    if (!k || k >= kRawKinds) continue;
    uint64_t by[kRawKinds] = {};
    by[k] = 1;
    write_loss(s->tid, fmt::LossReason::Exit, end_ns, end_ns, by);
  }
}

void Collector::finish(uint32_t flags, int64_t wait_ns) {
  if (finished_) return;
  finished_ = true;
  int64_t end_ns = g_capture_end_ns.load();
  if (!end_ns) g_capture_end_ns.store(end_ns = mono_ns());
  quiesce(end_ns);
  w_.meta("capture_end_ns", std::to_string(end_ns));
  if (flags & fmt::kEndSignal) {
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
  }
  ops_.abandon(nullptr);
  ranges_.finish(end_ns);
  if (window_open_) window_edge(fmt::WindowEdge::End, mono_ns(), flags & fmt::kEndSignal ? "signal" : "exit");
  struct timespec cpu {};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)  // what profiling cost this process's CPUs
    w_.meta("collector_cpu_ns", std::to_string(int64_t(cpu.tv_sec) * 1000000000 + cpu.tv_nsec).c_str());
  if (int status = g_exit_status.load(); status >= 0 && !(flags & fmt::kEndSignal))
    w_.meta("exit_status", std::to_string(status));
  if (g_timing == GpuTiming::Cupti) {
    CuptiLosses lost = cupti_losses();
    if (lost.dropped) w_.meta("cupti_dropped_records", std::to_string(lost.dropped));
    if (lost.incomplete) w_.meta("cupti_incomplete_records", std::to_string(lost.incomplete));
  }
  if (gpu_sample_) {
    w_.meta("gpu_sample_windows", std::to_string(gpu_sample_windows_));
    log_info("GPU-timing sample: %llu windows", (unsigned long long)gpu_sample_windows_);
  }
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
  bool closed = w_.close(dropped_total_, flags | (w_.failed() ? uint32_t(fmt::kEndWriteError) : 0u)) && !w_.failed();
  // Capture waited for a window that never opened (a launcher such as torchrun's parent, which
  // touches CUDA but runs no step; a job that ended before --delay): nothing was recorded, and a
  // file would only be one more "rank" beside the real ones. `cutrace record` says when no file
  // at all was written.
  if (config().deferred() && window_index_ == 0) {
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
void Collector::window_edge(fmt::WindowEdge edge, int64_t ts, const char* reason) {
  bool begin = edge == fmt::WindowEdge::Begin;
  if (begin == window_open_) return;  // already in that state (e.g. start twice)
  fmt::WindowRec win{};
  win.ts = ts, win.index = begin ? window_index_ : window_index_ - 1, win.reason_id = w_.intern(reason);
  win.edge = uint8_t(edge);
  w_.add(win, fmt::RecType::Window);
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
    window_edge(on ? fmt::WindowEdge::Begin : fmt::WindowEdge::End, mono_ns(), reason);
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
  if (c.rfind("start", 0) == 0) set(true, "signal");
  else if (c.rfind("stop", 0) == 0) set(false, "signal");
}

// ---- draining ---------------------------------------------------------------------------
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

// Maps the shim's record kinds to the trace's LossKind.
uint8_t loss_kind(uint8_t raw) {
  switch (RawKind(raw)) {
    case RawKind::Kernel: return fmt::kLossKernel;
    case RawKind::Memcpy: return fmt::kLossMemcpy;
    case RawKind::Memset: return fmt::kLossMemset;
    case RawKind::Sync:
    case RawKind::StreamWait: return fmt::kLossSync;
    case RawKind::Memory: return fmt::kLossMemory;
    case RawKind::EventRecord: return fmt::kLossApi;
    case RawKind::RangePush:
    case RawKind::RangeStart: return fmt::kLossRangeBegin;
    case RawKind::RangePop:
    case RawKind::RangeEnd: return fmt::kLossRangeEnd;
    case RawKind::Mark: return fmt::kLossMark;
    default: return fmt::kLossOther;
  }
}

void Collector::write_loss(uint32_t tid, fmt::LossReason why, int64_t begin, int64_t end,
                           const uint64_t* by_raw_kind) {
  fmt::LossRec l{};
  l.begin_ns = begin, l.end_ns = end, l.tid = tid, l.reason = uint8_t(why);
  uint64_t total = 0;
  for (int k = 0; k < kRawKinds; ++k) {
    l.count[loss_kind(uint8_t(k))] += by_raw_kind[k];
    total += by_raw_kind[k];
  }
  if (!total) return;
  w_.add(l, fmt::RecType::Loss);
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
  write_loss(s->tid, fmt::LossReason::Budget, std::min(b, e), e, delta);
}

// Whether `s` has at least `limit` unread records; `t0` receives the ticks of the limit-th.
bool Collector::scan_ahead(ThreadState* s, size_t limit, uint64_t* t0) {
  if (!s->rd) s->rd = s->first_chunk.load(std::memory_order_acquire), s->rpos = 0;
  const Chunk* c = s->rd;
  uint32_t pos = s->rpos;
  size_t n = 0;
  while (c) {
    uint32_t end = c->committed.load(std::memory_order_acquire);
    while (pos < end) {
      const uint8_t* p = c->data + pos;
      pos += packed_size(p);
      if (++n == limit) {
        std::memcpy(t0, p + sizeof(PackedHead), sizeof *t0);
        return true;
      }
    }
    uint32_t next = c->next.load(std::memory_order_acquire);
    if (!next || pos < c->committed.load(std::memory_order_acquire)) return false;
    c = chunk_pool().at(next - 1);
    pos = 0;
  }
  return false;
}

// Reads up to `limit` records of `s` whose call began by `horizon` (ticks) into the batch, giving
// drained chunks back to the pool.
size_t Collector::read_records(ThreadState* s, size_t limit, uint64_t horizon) {
  ChunkPool& pool = chunk_pool();
  if (!s->rd) {
    s->rd = s->first_chunk.load(std::memory_order_acquire);
    s->rpos = 0;
    if (!s->rd) return 0;
  }
  size_t taken = 0;
  uint32_t end = s->rd->committed.load(std::memory_order_acquire);
  while (taken < limit) {
    if (s->rpos < end) {
      const uint8_t* p = s->rd->data + s->rpos;
      uint64_t t0;
      std::memcpy(&t0, p + sizeof(PackedHead), sizeof t0);
      if (int64_t(t0 - horizon) > 0 && t0 != 0) break;  // Context records (t0 0) go with the next
      s->rpos += packed_size(p);
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
      d.owner = s;
      if ((d.r.flags & kRawStackSlot) && s->stacks) {
        if (const StackSlot* st = s->stacks->peek()) {
          d.stack = stacks_.intern(st->pc, st->depth, [](uint64_t pc) { return in_shim(pc); });
          s->stacks->pop();
        }
      }
      ++s->pending_refs;
      ++taken;
      continue;
    }
    if (s->rpos < (end = s->rd->committed.load(std::memory_order_acquire))) continue;
    uint32_t next = s->rd->next.load(std::memory_order_acquire);
    if (!next) break;
    if (s->rpos < (end = s->rd->committed.load(std::memory_order_acquire))) continue;  // published before the link
    Chunk* done = s->rd;
    s->rd = pool.at(next - 1);
    s->rpos = 0;
    end = s->rd->committed.load(std::memory_order_acquire);
    pool.give(done);
  }
  records_read_ += taken;
  return taken;
}

// Nothing published is left unread (the owner has exited: nothing more will be).
bool Collector::fully_read(ThreadState* s) {
  if (!s->rd) s->rd = s->first_chunk.load(std::memory_order_acquire), s->rpos = 0;
  return !s->rd || (s->rd->next.load(std::memory_order_acquire) == 0 &&
                    s->rpos >= s->rd->committed.load(std::memory_order_acquire));
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

uint16_t Collector::device_of(CUcontext ctx) {
  if (!ctx) return 0;
  auto it = ctx_device_.find(ctx);
  if (it != ctx_device_.end()) return it->second;
  CUdevice dev = 0;
  if (use_context(ctx)) driver().cuCtxGetDevice(&dev);
  ctx_device_[ctx] = uint16_t(dev);
  return uint16_t(dev);
}

uint8_t Collector::classify(uint64_t addr, uint8_t hint) {
  using fmt::MemKind;
  if (hint != uint8_t(MemKind::Unknown)) return hint;
  const Driver& d = driver();
  unsigned type = 0;
  if (!d.cuPointerGetAttribute ||
      d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(addr)) != CUDA_SUCCESS)
    return uint8_t(MemKind::Pageable);
  if (type == CU_MEMORYTYPE_HOST) return uint8_t(MemKind::Pinned);
  int managed = 0;
  d.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, CUdeviceptr(addr));
  return uint8_t(managed ? MemKind::Managed : MemKind::Device);
}

fmt::CopyKind copy_kind(uint8_t src, uint8_t dst) {
  auto host = [](uint8_t k) { return k == uint8_t(fmt::MemKind::Pageable) || k == uint8_t(fmt::MemKind::Pinned); };
  if (host(src) && host(dst)) return fmt::CopyKind::HtoH;
  if (host(src)) return fmt::CopyKind::HtoD;
  if (host(dst)) return fmt::CopyKind::DtoH;
  return fmt::CopyKind::DtoD;
}

void fill_common(fmt::OpCommon& c, const RawRecord& r, uint32_t tid, int64_t t0, int64_t t1, uint16_t device,
                 uint32_t sid) {
  c.corr = r.corr, c.cpu_begin = t0, c.cpu_end = t1, c.tid = tid, c.stream = sid, c.device = device;
  c.api = r.api, c.result = r.result, c.gpu_start = c.gpu_end = 0;
  c.flags = uint16_t((r.result ? fmt::kOpError : 0) | ((r.flags & kRawCaptured) ? fmt::kOpCaptured : 0) |
                     ((r.flags & kRawAsync) ? fmt::kOpAsync : 0) |
                     ((r.flags & kRawPerThread) ? fmt::kOpPerThreadStream : 0) |
                     ((r.flags & kRawNotSampled) ? fmt::kOpNotSampled : 0));
}

void Collector::add_gpu_op(const Drained& d, int64_t t0, int64_t t1, uint16_t device, uint32_t sid) {
  const RawRecord& r = d.r;
  PendingOp op;
  op.ev_start = r.ev_start, op.ev_end = r.ev_end, op.ctx = r.ctx, op.owner = d.owner;
  op.blocking = (r.flags & kRawBlocking) != 0;
  op.cupti = (r.flags & kRawCupti) && r.result == CUDA_SUCCESS && !(r.flags & kRawCaptured);
  op.timed = (r.ev_end || op.cupti) && r.result == CUDA_SUCCESS && !(r.flags & kRawCaptured);
  op.gctx = op.timed && !op.cupti ? gpu_.context(r.ctx) : nullptr;
  // A new context's first anchor at once while its window is open (its operations wait for one).
  if (op.gctx && op.gctx->count == 0) while_capturing([&] { gpu_.anchor_new(); });
  op.cupti_corr = r.cupti_corr;
  if (r.kind == RawKind::Kernel) {
    fmt::KernelRec& k = op.rec.kernel;
    k = fmt::KernelRec{};
    k.h = {uint16_t(fmt::RecType::Kernel), uint16_t(sizeof k)};
    fill_common(k.op, r, d.owner->tid, t0, t1, device, sid);
    k.kind = r.sub;
    const Names::Func& f = r.sub == uint8_t(fmt::KernelKind::Graph) ? names_.graph(r.kernel.func, &k.graph_id)
                                                                   : names_.function(r.kernel.func, device);
    k.name_id = f.name_id, k.regs = f.regs, k.static_smem = f.static_smem;
    std::copy(r.kernel.grid, r.kernel.grid + 3, k.grid);
    std::copy(r.kernel.block, r.kernel.block + 3, k.block);
    k.dyn_smem = r.kernel.shmem;
    op.type = fmt::RecType::Kernel;
  } else if (r.kind == RawKind::Memcpy) {
    fmt::MemcpyRec& c = op.rec.copy;
    c = fmt::MemcpyRec{};
    c.h = {uint16_t(fmt::RecType::Memcpy), uint16_t(sizeof c)};
    fill_common(c.op, r, d.owner->tid, t0, t1, device, sid);
    c.bytes = r.copy.bytes;
    c.src_kind = classify(r.copy.src, r.copy.src_kind);
    c.dst_kind = classify(r.copy.dst, r.copy.dst_kind);
    c.copy_kind = r.copy.copy_kind ? r.copy.copy_kind : uint8_t(copy_kind(c.src_kind, c.dst_kind));
    c.src_device = c.dst_device = device;
    op.type = fmt::RecType::Memcpy;
  } else {
    fmt::MemsetRec& s = op.rec.set;
    s = fmt::MemsetRec{};
    s.h = {uint16_t(fmt::RecType::Memset), uint16_t(sizeof s)};
    fill_common(s.op, r, d.owner->tid, t0, t1, device, sid);
    s.bytes = r.set.bytes, s.value = r.set.value, s.element_size = r.set.elem;
    op.type = fmt::RecType::Memset;
  }
  ranges_.attach(d.owner->tid, &op.ranges);
  ops_.add(std::move(op));
}

void Collector::handle_annotation(const Drained& d, int64_t ts) {
  const RawRecord& r = d.r;
  uint32_t tid = d.owner->tid;
  auto name_id = [&] {
    if (r.flags & kRawNameSlot) return w_.intern(d.name);
    return r.nvtx.name ? w_.intern(r.nvtx.name) : 0u;
  };
  RangeTracker::Attrs a{0, 0, r.nvtx.category, r.nvtx.color, r.nvtx.source};
  if (r.kind == RawKind::RangePush || r.kind == RawKind::RangeStart || r.kind == RawKind::Mark) {
    a.name_id = name_id();
    a.domain_id = r.nvtx.domain ? w_.intern(static_cast<const char*>(r.nvtx.domain)) : 0;
  }
  switch (r.kind) {
    case RawKind::RangePush: ranges_.push(tid, ts, a, uint32_t(r.nvtx.id)); break;
    case RawKind::RangePop:
      ranges_.pop(tid, r.nvtx.domain ? w_.intern(static_cast<const char*>(r.nvtx.domain)) : 0, ts, uint32_t(r.nvtx.id));
      break;
    case RawKind::RangeStart: ranges_.start(r.nvtx.id, tid, ts, a); break;
    case RawKind::RangeEnd: ranges_.end(r.nvtx.id, tid, ts); break;
    case RawKind::Mark: {
      fmt::MarkRec m{};
      m.ts = ts, m.tid = tid, m.name_id = a.name_id, m.domain_id = a.domain_id, m.category = a.category;
      m.color = a.color, m.source = a.source;
      w_.add(m, fmt::RecType::Mark);
      break;
    }
    case RawKind::ThreadName: {
      fmt::ThreadRec t{};
      t.tid = uint32_t(r.nvtx.id), t.name_id = name_id();
      w_.add(t, fmt::RecType::Thread);
      break;
    }
    case RawKind::CategoryName: {  // Meta "nvtx_category/<id>/<domain>" (docs/FORMAT.md)
      const char* dom = r.nvtx.domain ? static_cast<const char*>(r.nvtx.domain) : "";
      const char* text = r.flags & kRawNameSlot ? d.name.c_str() : r.nvtx.name ? r.nvtx.name : "";
      w_.meta(category_meta_key(uint32_t(r.nvtx.id), dom), text);
      break;
    }
    default: break;
  }
}

void Collector::link_stack(const Drained& d, fmt::RecType op_type) {
  if (!d.stack) return;
  fmt::OpStackRec o{};
  o.corr = d.r.corr, o.stack = d.stack, o.op_type = uint16_t(op_type);
  w_.add(o, fmt::RecType::OpStack);
}

void Collector::handle(const Drained& d) {
  const RawRecord& r = d.r;
  int64_t t0 = clock_.to_ns(r.t0), t1 = clock_.to_ns(r.t1);
  uint16_t device = device_of(r.ctx);
  uint32_t tid = d.owner->tid;
  bool pt = (r.flags & kRawPerThread) != 0;
  auto sid = [&] { return ops_.stream_id(r.stream, r.ctx, tid, pt, device); };
  switch (r.kind) {
    case RawKind::Kernel:
    case RawKind::Memcpy:
    case RawKind::Memset:
      link_stack(d, r.kind == RawKind::Kernel   ? fmt::RecType::Kernel
                    : r.kind == RawKind::Memcpy ? fmt::RecType::Memcpy
                                                : fmt::RecType::Memset);
      add_gpu_op(d, t0, t1, device, sid());
      return;  // the op holds the owner reference until it is written
    case RawKind::Sync:
    case RawKind::StreamWait: {
      fmt::SyncRec s{};
      s.cpu_begin = t0, s.cpu_end = t1, s.event = reinterpret_cast<uint64_t>(r.ev.event), s.tid = tid;
      bool has_stream = r.kind == RawKind::StreamWait || r.sub == uint8_t(fmt::SyncKind::Stream) ||
                        r.sub == uint8_t(fmt::SyncKind::StreamQuery);
      s.stream = has_stream ? sid() : 0;
      s.device = device, s.api = r.api, s.result = r.result, s.corr = r.corr;
      s.kind = r.kind == RawKind::StreamWait ? uint8_t(fmt::SyncKind::StreamWait) : r.sub;
      if (r.kind == RawKind::StreamWait && r.result == CUDA_SUCCESS) ops_.stream_waits(s.stream, r.ev.event);
      link_stack(d, fmt::RecType::Sync);
      w_.add(s, fmt::RecType::Sync);
      break;
    }
    case RawKind::EventRecord: {
      fmt::ApiRec a{};
      a.cpu_begin = t0, a.cpu_end = t1, a.corr = r.corr, a.arg = reinterpret_cast<uint64_t>(r.ev.event);
      a.tid = tid, a.stream = sid(), a.api = r.api, a.device = device, a.result = r.result;
      if (r.result == CUDA_SUCCESS) ops_.event_recorded(r.ev.event, a.stream);
      w_.add(a, fmt::RecType::Api);
      break;
    }
    case RawKind::Memory: {
      fmt::MemoryRec m{};
      m.cpu_begin = t0, m.cpu_end = t1, m.address = r.mem.address, m.bytes = r.mem.bytes, m.tid = tid;
      m.stream = r.stream ? sid() : 0;
      m.device = device, m.api = r.api, m.result = r.result, m.op = r.sub, m.mem_kind = r.mem.mem_kind;
      w_.add(m, fmt::RecType::Memory);
      break;
    }
    case RawKind::RangePush:
    case RawKind::RangePop:
    case RawKind::RangeStart:
    case RawKind::RangeEnd:
    case RawKind::Mark:
    case RawKind::ThreadName:
    case RawKind::CategoryName:
      handle_annotation(d, t0);
      break;
    case RawKind::Window:
      window_edge(fmt::WindowEdge(r.sub), t0, r.nvtx.name ? r.nvtx.name : "api");
      break;
    case RawKind::Context: break;  // consumed by read_records
  }
  --d.owner->pending_refs;
}

}  // namespace

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
  if (in_collector_process()) collector_shutdown(fmt::kEndClean);
}

void collector_after_failed_exec() {
  if (!in_collector_process()) return;
  int expected = kStopped;
  if (!g_state.compare_exchange_strong(expected, kIdle)) return;
  g_col = nullptr;  // the stopped collector (and its closed file) is left as it is
  g_capture_on.store(config().enabled && !config().deferred(), std::memory_order_relaxed);
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
