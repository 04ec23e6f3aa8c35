// The collector's internals, shared by its sources: collector.cpp (start, the cycle, capture
// windows, exit), drain.cpp (reading the threads' chunks in time order), records.cpp (raw records
// into trace records). Only the collector thread runs these, but for the few public requests.
#pragma once
#include <pthread.h>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#include "collector/cpu_counters.h"
#include "collector/gpu_clock.h"
#include "collector/names.h"
#include "collector/ops.h"
#include "collector/ranges.h"
#include "collector/samplers.h"
#include "collector/stacks.h"
#include "runtime/config.h"
#include "runtime/gpu_sample.h"
#include "runtime/raw.h"
#include "runtime/thread_state.h"
#include "runtime/ticks.h"
#include "trace/live_status.h"
#include "trace/writer.h"

namespace cutrace {

extern GpuTiming g_timing;

inline constexpr int64_t kCycleNs = 1000000;          // drain and poll every 1 ms
inline constexpr int64_t kFlushNs = 1000000000;       // write a block at least once a second
inline constexpr int64_t kClockNs = 100000000;        // tick-rate and GPU anchors every 100 ms
inline constexpr int64_t kHangCheckNs = 100000000;    // the hang watchdog looks every 100 ms
inline constexpr int64_t kFlightFlushNs = 100000000;  // flight mode: a ring block every 100 ms
inline constexpr int64_t kExitWaitNs = 10000000000;   // at exit, wait up to 10 s for GPU work to finish
// A drain round takes at most kDrainChunk records from each thread (so the batch holds at most
// threads x 256 records, not whole backlogs); one drain() takes at most kDrainRounds rounds, then
// the cycle finalises operations and does its periodic work, so neither waits on the other long.
inline constexpr size_t kDrainChunk = 256;
inline constexpr int kDrainRounds = 64;
// Operations waiting for their GPU times (~230 bytes each) are normally kept 200 ms after their
// launch (OpResolver::poll's grace period, for threads that publish late). Past this many, the
// grace period shrinks and draining waits for poll: the records stay in the threads' chunks,
// within the buffer budget, instead of in the collector's unbounded memory.
inline constexpr size_t kMaxPendingOps = 65536;
// At exit, how long calls already being recorded get to publish their records.
inline constexpr int64_t kQuiesceNs = 100000000;

struct Drained {
  RawRecord r;
  ThreadState* owner = nullptr;
  std::string name;    // annotation names copied by the owner (kRawNameSlot)
  uint32_t stack = 0;  // interned call stack (kRawStackSlot), 0 = none
};

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
  size_t drain_round();          // one bounded round of drain(); returns the records taken
  size_t read_records(ThreadState* s, size_t limit, uint64_t horizon);
  void report_losses(ThreadState* s);
  void write_loss(uint32_t tid, trace::LossReason why, int64_t begin, int64_t end, const uint64_t* by_raw_kind);
  void quiesce(int64_t end_ns);  // exit: capture off, calls in progress published or counted
  bool open_sync(ThreadState* s, int64_t end_ns);
  void handle(const Drained& d);
  void add_gpu_op(const Drained& d, int64_t t0, int64_t t1, uint16_t device, uint32_t sid);
  void handle_annotation(const Drained& d, int64_t ts);
  void link_stack(const Drained& d, trace::RecType op_type);
  void window_edge(trace::WindowEdge edge, int64_t ts, const char* reason);
  void control(int64_t now);  // timed windows and `cutrace start|stop PID`
  void refill_pools();
  void periodic(int64_t now);
  void publish_status(int64_t realtime_ns);
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
  CpuCounters counters_;
  GpuSampler gpus_;
  std::string path_;
  pthread_t thread_{};
  std::vector<Drained> batch_;  // the first batch_n_ are this round's; entries are reused
  size_t batch_n_ = 0;
  std::vector<uint32_t> order_;  // batch_ indices in call order
  std::unordered_map<CUcontext, uint16_t> ctx_device_;
  uint64_t dropped_total_ = 0;
  uint64_t records_read_ = 0;  // records the threads published (Context records not counted)
  uint64_t syncs_open_ = 0;    // open Sync records written at exit
  uint64_t stacks_lost_ = 0;   // call stacks not recorded: a thread's stack ring was full
  int64_t last_flush_ = 0, last_clock_ = 0, last_sample_ = 0, sample_period_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t req_seq_ = 0, done_seq_ = 0;
  bool req_wait_gpu_ = false, req_clear_names_ = false, stop_ = false;
  uint32_t stop_flags_ = trace::kEndClean;
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
  LiveStatus live_;  // what publish_status writes

  // The hang watchdog (collector/hang.cpp): from the op resolver's queues and the threads'
  // published sync state, on this thread only; nothing on the application's threads.
  void watch_hangs(int64_t now);
  void report_hang(int64_t now, int64_t since);
  bool hang_over();                         // every reported item completed
  void hang_text(const std::string& text);  // stderr and the report file
  uint64_t collectives_launched_ = 0;       // NCCL kernels added (their coll_seq)
  int64_t hang_timeout_ns_ = 0;             // 0 = no watchdog
  int64_t last_hang_check_ = 0;
  uint32_t hangs_ = 0;                                       // reports written
  bool hang_open_ = false;                                   // the last report's work is not all complete
  int64_t hang_since_ = 0;                                   // its oldest item's start
  std::vector<std::pair<uint32_t, uint64_t>> hang_ops_;      // its stuck ops: (stream id, seq)
  std::vector<std::pair<uint32_t, uint64_t>> hang_threads_;  // its blocked threads: (index, sync_t0)
  std::string hang_path_;                                    // DIR/hang.<host>.rank<N>.txt

  // The flight recorder (--capture-range flight:SECONDS, collector/flight.cpp): the writer keeps
  // the last SECONDS in memory; these write them to the file on a trigger.
  void flight_start();                           // before the thread starts: SIGUSR2
  void flight_poll(int64_t now);                 // every cycle: the 100 ms blocks, SIGUSR2
  void flight_snapshot(const char* trigger);     // drain, then the writer's snapshot
  void flight_at_end(int sig, int exit_status);  // a fatal signal or a non-zero exit status
  int64_t last_flight_flush_ = 0;
};

}  // namespace cutrace
