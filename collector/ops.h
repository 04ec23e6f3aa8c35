// GPU operations waiting for their completion events, one FIFO per stream (a stream completes
// its work in order). Default timing mode records only an end event: the start is inferred as
// the latest of the previous operation's end on the same stream, the end of the operation the
// stream waits for (cuEventRecord + cuStreamWaitEvent across streams), and the host time the
// work was submitted, and is flagged as inferred.
#pragma once
#include <cuda.h>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#include "collector/cupti_source.h"
#include "collector/gpu_clock.h"
#include "collector/ranges.h"
#include "trace/format.h"
#include "trace/writer.h"

namespace cutrace {

struct ThreadState;

union OpRecord {
  trace::KernelRec kernel;
  trace::MemcpyRec copy;
  trace::MemsetRec set;
};

struct PendingOp {
  OpRecord rec;  // complete but for gpu_start/gpu_end/flags
  trace::RecType type;
  CUevent ev_start = nullptr, ev_end = nullptr;
  CUcontext ctx = nullptr;
  GpuClock::Ctx* gctx = nullptr;
  ThreadState* owner = nullptr;
  uint64_t seq = 0;
  uint64_t dep_seq = 0;   // op this one waits for (cross-stream), 0 = none
  int64_t dep_end = 0;    // its end, when already known
  bool blocking = false;  // the host call returned after the work (sync memcpy)
  bool timed = false;     // GPU times are expected (events recorded, or CUPTI)
  // The op submitted before it on its stream was outside the GPU-timing sample: its end is
  // unknown, so this op's start cannot be inferred (default timing mode).
  bool after_not_sampled = false;
  bool cupti = false;  // ... from CUPTI, by CUPTI's correlation id
  uint32_t cupti_corr = 0;
  int64_t end_ns = 0;                              // resolved by poll()
  int64_t start_ns = 0;                            // measured start (exact mode), resolved by poll()
  std::vector<OpenRange*> ranges;                  // annotations open when it was launched (GPU projection)
  std::vector<CuptiGraphNode> graph_nodes;         // a graph launch's replay, from CUPTI
  uint32_t stack = 0;                              // call stack of the launch (StackRec id), 0 = none
  uint64_t coll_seq = 0;                           // an NCCL kernel: its number in launch order (from 1)
  trace::OpCommon& op() { return rec.kernel.op; }  // OpCommon sits at the same offset in all three
  const trace::OpCommon& op() const { return rec.kernel.op; }
};

class OpResolver {
 public:
  OpResolver(TraceWriter& w, GpuClock& clock, RangeTracker& ranges) : w_(w), clock_(clock), ranges_(ranges) {}

  // Stream id for a record's stream (emits a Stream record on first sight).
  uint32_t stream_id(CUstream handle, CUcontext ctx, uint32_t tid, bool per_thread, uint16_t device);
  void add(PendingOp&& op);
  void event_recorded(CUevent app_event, uint32_t stream_id);
  void stream_waits(uint32_t stream_id, CUevent app_event);
  // Writes every operation whose GPU times are known and that was submitted more than a grace
  // period ago (a thread preempted between its driver call and publishing the record can
  // still bring an earlier operation of the same stream); `all` skips the grace period.
  // `grace_ns` shortens the grace period (the collector under a backlog). Returns how many
  // operations are still pending.
  size_t poll(bool all = false, int64_t grace_ns = 200000000);
  // Writes what is left (shutdown after the wait, or a context going away): without GPU times,
  // but for CUPTI operations whose records are here. `at_exit`: the process ends, and those that
  // expected GPU times are flagged PendingExit (their work was not seen complete).
  void abandon(CUcontext ctx_or_null, bool at_exit = false);
  uint64_t pending_at_exit() const { return pending_exit_; }
  size_t pending() const { return pending_; }
  // Every stream's newest CUPTI operation has its final span (or was written): the CUPTI
  // records of all the work asked for have arrived (a stream runs its work in order).
  bool cupti_settled();
  // Operations that expected GPU times and were written without them (CUPTI reported none, or
  // they were abandoned at exit): the trace's gpu_times_missing.
  uint64_t missing() const { return missing_; }
  // Called once per finished op: its events go back to the owner's pool (or are destroyed)
  // and the owner loses one reference.
  // A CUPTI operation written without GPU time because its record did not come (resolve's 10 s),
  // while nothing written after it on its stream had a GPU time: whether its work completed is
  // unknown (a hung kernel's record never comes; a dropped record looks the same).
  struct Unconfirmed {
    OpRecord rec;
    trace::RecType type = trace::RecType::Kernel;
    uint64_t seq = 0, coll_seq = 0;
    uint32_t stack = 0;
  };
  // The hang watchdog's view (collector/hang.cpp): each stream's queue of operations not yet
  // written, oldest first, the latest GPU end written on it, and its Unconfirmed operations
  // (oldest first, at most kUnconfirmedKept).
  template <class F>
  void each_stream(F&& f) const {
    for (const Stream* s : streams_) f(s->id, s->q, s->last_end, s->unconfirmed);
  }
  struct DoneCollective {
    uint64_t seq = 0, corr = 0;
    int64_t start = 0, end = 0;
    uint32_t name_id = 0, stream = 0, tid = 0;
    uint16_t device = 0;
  };
  static constexpr size_t kDoneCollectivesKept = 8;
  static constexpr size_t kUnconfirmedKept = 16;
  const std::deque<DoneCollective>& done_collectives() const { return done_coll_; }  // newest last
  uint64_t collectives_done() const { return coll_done_; }
  using Recycler = void (*)(ThreadState* owner, CUcontext ctx, CUevent a, CUevent b);
  void set_recycler(Recycler fn) { recycle_ = fn; }

 private:
  struct Stream {
    uint32_t id = 0;
    CUcontext ctx = nullptr;
    std::deque<PendingOp> q;
    int64_t last_end = 0;
    uint64_t last_seq = 0;  // newest op added
    uint64_t wait_seq = 0;  // pending cross-stream dependency for the next op
    int64_t wait_end = 0;
    bool last_not_sampled = false;         // the newest op added was outside the GPU-timing sample
    uint32_t last_cupti_corr = 0;          // CUPTI correlation id of the newest CUPTI op, until settled
    int64_t last_cupti_end = 0;            // ... and the return of its call (newest: the latest return)
    std::vector<Unconfirmed> unconfirmed;  // the first such since the last op written with a GPU time
  };
  struct Key {
    uint64_t handle, ctx, tid;
    bool operator==(const Key& o) const { return handle == o.handle && ctx == o.ctx && tid == o.tid; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return k.handle * 0x9E3779B97F4A7C15ull ^ k.ctx * 31 ^ k.tid; }
  };
  struct Mark {
    uint64_t seq;
    int64_t end;  // known end, or 0 while the op is pending
  };

  bool resolve(PendingOp& op);  // false while its GPU work (or the op it waits for) is not done
  bool cupti_overtaken(const Stream& s, size_t k) const;
  void finalize(Stream& s, PendingOp& op);
  void write(Stream& s, PendingOp& op, int64_t start, int64_t end, uint16_t flags);
  void release_events(PendingOp& op);
  void write_graph_nodes(PendingOp& op);

  TraceWriter& w_;
  GpuClock& clock_;
  RangeTracker& ranges_;
  std::unordered_map<Key, Stream*, KeyHash> by_key_;
  std::vector<Stream*> streams_;                                  // index = id - 1
  std::unordered_map<CUevent, Mark> marks_;                       // app event -> op it follows
  std::unordered_set<uint64_t> wanted_;                           // pending ops that some event marks
  std::unordered_map<uint64_t, int64_t> ends_;                    // ends of finalized marked ops
  std::unordered_map<std::string, uint32_t> graph_kernel_names_;  // CUPTI's kernel name -> demangled name's id
  uint64_t next_seq_ = 1;
  size_t pending_ = 0;
  uint64_t missing_ = 0;
  uint64_t pending_exit_ = 0;
  std::deque<DoneCollective> done_coll_;  // the last kDoneCollectivesKept collectives written complete
  uint64_t coll_done_ = 0;
  Recycler recycle_ = nullptr;
};

}  // namespace cutrace
