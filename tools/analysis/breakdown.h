// What one GPU did over time, from its operations' GPU intervals: how long it was busy with each
// kind of work (kernels, NCCL communication kernels, copies, sets), how long it was idle and why,
// and how long communication overlapped computation. docs/SUMMARY.md ("GPU activity and temporal
// breakdown") gives the definitions; test/unit/summary_test.cpp checks them on hand-built
// timelines.
//
// The timeline is swept in order of start time, keeping the intervals that are running in a
// small set, so each instant is attributed to the set of work kinds active at it. Trace records
// are not in time order (each is written when its GPU time is known, and streams interleave), so
// intervals wait in a reorder buffer of bounded size kept sorted by insertion (records come nearly
// in order: a stream's operations always do; in the H200 traces an operation is at most 40 places
// from its place in start order). When the buffer is full its earlier three quarters are swept.
// An interval that arrives after the sweep has passed its start (it lagged more than capacity/4
// operations behind) is "late": the part before the sweep position is dropped and counted in
// late_ns, so every figure stays an exact function of the intervals that were on time, and the
// buffer grows 4x (up to kMaxCapacity) so that a trace that needs more room gets it. The buffer
// starts at 4,096 intervals (128 KiB: it stays in cache) and is at most 32 MiB.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace cutrace {

enum class GpuWork : uint8_t { Compute = 0, Comm = 1, Memcpy = 2, Memset = 3 };
inline constexpr size_t kGpuWorkKinds = 4;

struct GpuInterval {
  int64_t start = 0;  // GPU start, ns
  int64_t end = 0;    // GPU end, ns (>= start)
  int64_t ready = 0;  // when the host had submitted it: the launch call's return (cpu_end) for
                      // kernels and async copies/sets, the call's entry for blocking copies/sets
  GpuWork work = GpuWork::Compute;
};

struct GpuBreakdown {
  int64_t first_ns = 0;  // first start (0 when no interval)
  int64_t last_ns = 0;   // last end
  // Time spent in each combination of active work kinds, indexed by the bit set
  // (1 << GpuWork); [0] is idle. Sums to elapsed_ns().
  int64_t mask_ns[1 << kGpuWorkKinds] = {};
  int64_t host_wait_ns = 0;    // idle gaps ended by an interval whose ready > the gap's start
  int64_t kernel_wait_ns = 0;  // the other idle gaps
  uint64_t gaps = 0;           // idle gaps (both kinds)
  uint64_t host_wait_gaps = 0;
  uint64_t intervals = 0;
  uint64_t late = 0;    // intervals that arrived after the sweep passed their start
  int64_t late_ns = 0;  // their time before the sweep position, not counted anywhere

  int64_t elapsed_ns() const;  // sum of mask_ns: last_ns - first_ns for one device
  int64_t idle_ns() const { return mask_ns[0]; }
  int64_t busy_ns() const { return elapsed_ns() - idle_ns(); }
  // Exclusive shares (sum to busy_ns), by priority kernel > memcpy > memset:
  int64_t kernel_ns() const;  // any kernel (compute or communication) running
  int64_t memcpy_ns() const;  // a copy and no kernel
  int64_t memset_ns() const;  // only sets
  // HTA-style exclusive shares (sum to busy_ns), by priority compute > communication > memory:
  int64_t compute_ns() const;         // a non-communication kernel running
  int64_t communication_ns() const;   // a communication kernel and no compute kernel
  int64_t memory_ns() const;          // copies/sets only
  int64_t overlap_ns() const;         // compute and communication kernels at once
  int64_t comm_total_ns() const;      // any communication kernel running (overlapped or not)
  void merge(const GpuBreakdown& o);  // sums; first/last: the earliest and latest
};

class DeviceTimeline {
 public:
  static constexpr size_t kDefaultCapacity = size_t(1) << 12;
  static constexpr size_t kMaxCapacity = size_t(1) << 20;
  explicit DeviceTimeline(size_t capacity = kDefaultCapacity);
  // end < start is treated as end == start.
  [[gnu::always_inline]] void add(int64_t start, int64_t end, int64_t ready, GpuWork work) {
    // Inline, the common case: an interval that goes at the end of the buffer (no later start
    // buffered) and leaves room. Out of line, the call and the vector's bookkeeping cost 3 % more
    // of `cutrace summary`'s instructions (bench/RESULTS-format.md section 6).
    if (start >= 0 && n_ + 1 < room_ && (n_ == 0 || !sorted_ || !before(start, ready, buf_[n_ - 1]))) {
      buf_[n_++] = GpuInterval{start, end < start ? start : end, ready, work};
      return;
    }
    add_slow(start, end, ready, work);
  }
  void add(const GpuInterval& iv) { add(iv.start, iv.end, iv.ready, iv.work); }
  // Sweeps what is left and returns the totals; the timeline is empty afterwards.
  GpuBreakdown finish();

 private:
  static bool before(int64_t start, int64_t ready, const GpuInterval& b) {  // sweep order
    return start != b.start ? start < b.start : ready < b.ready;
  }
  void add_slow(int64_t start, int64_t end, int64_t ready, GpuWork work);
  // The sweep's position. drain() holds it in a local for its loop: as members, these were
  // reloaded after every store into the running set (~25 instructions an interval).
  struct Sweep {
    int64_t t = 0;         // swept up to here
    int64_t next_end = 0;  // earliest end of the running intervals (valid when run > 0)
    size_t run = 0;        // running intervals: run_end_[0, run), run_work_[0, run)
    unsigned mask = 0;     // bit set (1 << GpuWork) of their kinds
    bool started = false;
  };
  void drain(size_t n);  // sweeps the first n buffered intervals (sorting the buffer if needed)
  void sweep(Sweep& s, int64_t start, int64_t end, int64_t ready, GpuWork work);
  void advance(Sweep& s, int64_t to, int64_t ready, bool gap_ends);
  void idle_gap(int64_t from, int64_t to, int64_t ready);

  size_t capacity_;
  // The reorder buffer: n_ intervals in room_ slots (capacity_ slots once an interval came;
  // reallocated when capacity_ grows).
  std::unique_ptr<GpuInterval[]> buf_;
  size_t room_ = 0;
  size_t n_ = 0;
  bool sorted_ = true;
  // Running intervals: few (about one per busy stream), so plain arrays scanned for the
  // earliest end beat a heap. (Scalar arrays: no store-forwarding stalls on the hot path.)
  // Their first s_.run entries are used.
  std::vector<int64_t> run_end_;
  std::vector<GpuWork> run_work_;
  Sweep s_;
  GpuBreakdown out_;
};

}  // namespace cutrace
