// Statistics kept by the summary (tools/analysis/summary_model.h): exact counts and sums,
// log-bucket histograms for percentiles, and the per-kind aggregates built from them. Every
// type merges exactly, so per-file totals add up to the same figures as one pass over all files.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cutrace {

// Saturating arithmetic for times read from a file: a damaged one may hold any value, and a sum
// or a difference of two must not overflow (fuzz_summary: signed integer overflow).
// (Written as a branch that is never taken on real traces, not a select: fewer instructions.)
inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_expect(!__builtin_add_overflow(a, b, &r), 1)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}
inline int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_expect(!__builtin_sub_overflow(a, b, &r), 1)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

// A GPU operation's time counts only when both ends are non-zero and end >= start.
inline bool gpu_timed(int64_t gpu_start, int64_t gpu_end) {
  return gpu_start != 0 && gpu_end != 0 && gpu_end >= gpu_start;
}

// Counts of non-negative values in logarithmic buckets (HDR-style): values below 64 exactly, then
// 64 equal buckets per power of two up to 2^44 ns (4.9 hours; larger values land in the last
// bucket). A value is reported as the middle of its bucket, within 0.79% of any value in it;
// callers clamp to the exact min/max. The first kInline values are kept exactly (small sets
// have exact percentiles); the 9.75 KiB of buckets are allocated with the next one.
class LogHistogram {
 public:
  static constexpr int kSubBits = 6;  // 64 buckets per power of two
  static constexpr int kMaxExp = 44;  // values below 2^44
  static constexpr int kBuckets = (kMaxExp - kSubBits + 1) << kSubBits;
  static constexpr size_t kInline = 8;

  [[gnu::always_inline]] void add(int64_t v) {  // v < 0 counts as 0
    if (counts_.empty()) {
      if (n_ < kInline) {
        small_[n_++] = v < 0 ? 0 : v;
        return;
      }
      start();
    }
    ++counts_[size_t(bucket(v))];
    ++n_;
  }
  void merge(const LogHistogram& o);
  uint64_t count() const { return n_; }
  bool exact() const { return counts_.empty(); }
  // The k-th smallest value (1 <= k <= count()): exact while exact(), else its bucket's value.
  int64_t at_rank(uint64_t k) const;

  // fn(value, count) for each non-empty bucket (or each exact value), smallest first.
  template <class Fn>
  void for_each(Fn fn) const {
    if (counts_.empty()) {
      size_t m = std::min<size_t>(n_, kInline);
      std::array<int64_t, kInline> v = small_;
      std::sort(v.begin(), v.begin() + ptrdiff_t(m));
      for (size_t i = 0; i < m; ++i) fn(v[i], uint64_t(1));
      return;
    }
    for (int b = 0; b < kBuckets; ++b) {
      if (counts_[size_t(b)]) fn(bucket_value(b), uint64_t(counts_[size_t(b)]));
    }
  }

  [[gnu::always_inline]] static int bucket(int64_t v) {
    if (v < (1 << kSubBits)) return v < 0 ? 0 : int(v);
    if (v >= (int64_t(1) << kMaxExp)) return kBuckets - 1;
    int shift = 63 - __builtin_clzll(uint64_t(v)) - kSubBits;  // >= 0
    // v >> shift is in [64, 128): 64 + the sub-bucket, so no mask is needed. Equal to
    // ((e - kSubBits + 1) << kSubBits) + ((v >> shift) & 63), e = shift + kSubBits (unit test).
    return (shift << kSubBits) + int(v >> shift);
  }
  static int64_t bucket_low(int b);    // smallest integer of bucket b
  static int64_t bucket_value(int b);  // its representative value

 private:
  void start();                   // moves the exact values into buckets
  std::vector<uint32_t> counts_;  // kBuckets, once more than kInline values were added
  uint64_t n_ = 0;
  std::array<int64_t, kInline> small_{};
};

// Count, sum, min, max, exact sum of squares, and a histogram of int64 values (negative values
// in a second, mirrored histogram). The standard deviation is computed from the exact integer
// sums (no rounding before the final division), so it is as stable as Welford's method and
// merges exactly.
struct Dist {
  uint64_t n = 0;
  int64_t sum = 0;
  int64_t min = 0;  // 0 when n == 0
  int64_t max = 0;
  // Sum of squares, exact: below 2^128 for any real trace (2^40 values of 2^44 ns); only a
  // damaged file's values near 2^63 can wrap it, which is defined for unsigned (a meaningless
  // stddev, never undefined behaviour).
  unsigned __int128 sumsq = 0;
  LogHistogram pos, neg;

  [[gnu::always_inline]] void add(int64_t v) {
    if (__builtin_expect(n == 0, 0)) {  // (one test of n, not one per bound)
      min = max = v;
    } else {
      min = std::min(min, v);
      max = std::max(max, v);
    }
    ++n;
    sum = sat_add(sum, v);
    sumsq += static_cast<unsigned __int128>(__int128(v) * v);
    if (v >= 0) pos.add(v);
    else neg.add(v == INT64_MIN ? INT64_MAX : -v);
  }
  void merge(const Dist& o);
  int64_t mean() const { return n ? sum / int64_t(n) : 0; }
  int64_t percentile(double p) const;  // nearest rank, p in [0, 1]; 0 when empty
  int64_t median() const { return percentile(0.5); }
  int64_t stddev() const;  // sample standard deviation (n - 1), rounded; 0 when n < 2
};

struct TimeStat {
  uint64_t count = 0;    // operations
  uint64_t untimed = 0;  // operations without a GPU time
  uint64_t pending = 0;  // ... of them, flagged PendingExit (not complete when the process ended)
  Dist gpu;              // GPU times of the timed operations

  [[gnu::always_inline]] void add(int64_t gpu_start, int64_t gpu_end) {
    ++count;
    if (gpu_start == 0 || gpu_end == 0 || gpu_end < gpu_start) ++untimed;
    else gpu.add(sat_sub(gpu_end, gpu_start));
  }
  void merge(const TimeStat& o);
  uint64_t timed() const { return count - untimed; }
  int64_t total_ns() const { return gpu.sum; }
  int64_t mean_ns() const { return gpu.mean(); }
  int64_t min_ns() const { return gpu.min; }
  int64_t max_ns() const { return gpu.max; }
};

struct CopyStat {  // memcpy of one kind, or memset
  TimeStat time;
  uint64_t bytes = 0;
  uint64_t timed_bytes = 0;  // bytes of timed operations: bandwidth = timed_bytes / total_ns
  void merge(const CopyStat& o);
};

struct CpuTimeStat {  // CPU time of host calls: cpu_end - cpu_begin, never negative
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t max_ns = 0;
  void add(int64_t cpu_begin, int64_t cpu_end) {
    int64_t d = cpu_end > cpu_begin ? sat_sub(cpu_end, cpu_begin) : 0;
    ++count;
    total_ns = sat_add(total_ns, d);
    if (d > max_ns) max_ns = d;
  }
  void merge(const CpuTimeStat& o) {
    count += o.count;
    total_ns = sat_add(total_ns, o.total_ns);
    max_ns = std::max(max_ns, o.max_ns);
  }
  int64_t mean_ns() const { return count ? total_ns / int64_t(count) : 0; }
};
using SyncStat = CpuTimeStat;  // blocked CPU time of synchronisation calls

struct RangeStat {
  uint64_t count = 0;  // closed ranges: the statistics below are theirs
  uint64_t open = 0;   // ranges not ended when the trace ended: counted apart, in no statistic
  Dist cpu;            // cpu_end - cpu_begin, never negative
  Dist gpu;            // GPU projections (gpu.n of the ranges have one)
  uint64_t gpu_ops = 0;

  void add(int64_t cpu_begin, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end, uint32_t ops);
  void merge(const RangeStat& o);
  uint64_t gpu_count() const { return gpu.n; }
  int64_t cpu_total_ns() const { return cpu.sum; }
  int64_t cpu_mean_ns() const { return cpu.mean(); }
  int64_t gpu_total_ns() const { return gpu.sum; }
  int64_t gpu_mean_ns() const { return gpu.mean(); }
};

struct HistBin {  // [lo_ns, hi_ns): count values
  int64_t lo_ns = 0;
  int64_t hi_ns = 0;
  uint64_t count = 0;
};

// Step durations. Exact values are kept for up to kMaxExactSteps steps over all files (the
// histogram and percentiles are then exact); beyond that the log histograms answer.
struct StepStats {
  static constexpr size_t kMaxExactSteps = size_t(1) << 20;
  Dist cpu, gpu;
  std::vector<int64_t> cpu_values, gpu_values;  // exact, while complete
  bool exact = true;
  void add(int64_t cpu_ns, bool has_gpu, int64_t gpu_ns);
  void merge(const StepStats& o);
  int64_t cpu_percentile(double p) const;
  int64_t gpu_percentile(double p) const;
  // 10-20 equal bins from min to max (1 bin when all values are equal; none when empty).
  std::vector<HistBin> bins(bool gpu) const;
};

}  // namespace cutrace
