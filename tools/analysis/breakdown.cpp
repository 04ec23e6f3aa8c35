#include "tools/analysis/breakdown.h"

#include <algorithm>
#include <iterator>
#include <limits>

namespace cutrace {
namespace {

constexpr unsigned kCompute = 1u << unsigned(GpuWork::Compute);
constexpr unsigned kComm = 1u << unsigned(GpuWork::Comm);
constexpr unsigned kMemcpy = 1u << unsigned(GpuWork::Memcpy);
constexpr unsigned kKernel = kCompute | kComm;
constexpr size_t kMasks = size_t(1) << kGpuWorkKinds;
// How far back a late record is moved by insertion before the buffer is marked for sorting.
constexpr size_t kMaxShift = 64;

bool earlier(const GpuInterval& a, const GpuInterval& b) {  // sweep order
  return a.start != b.start ? a.start < b.start : a.ready < b.ready;
}

template <class Pred>
int64_t sum_masks(const GpuBreakdown& b, Pred pred) {
  int64_t s = 0;
  for (unsigned m = 1; m < kMasks; ++m) {
    if (pred(m)) s += b.mask_ns[m];
  }
  return s;
}

}  // namespace

int64_t GpuBreakdown::elapsed_ns() const {
  int64_t s = 0;
  for (int64_t v : mask_ns) s += v;
  return s;
}
int64_t GpuBreakdown::kernel_ns() const {
  return sum_masks(*this, [](unsigned m) { return (m & kKernel) != 0; });
}
int64_t GpuBreakdown::memcpy_ns() const {
  return sum_masks(*this, [](unsigned m) { return !(m & kKernel) && (m & kMemcpy); });
}
int64_t GpuBreakdown::memset_ns() const {
  return sum_masks(*this, [](unsigned m) { return !(m & kKernel) && !(m & kMemcpy); });
}
int64_t GpuBreakdown::compute_ns() const {
  return sum_masks(*this, [](unsigned m) { return (m & kCompute) != 0; });
}
int64_t GpuBreakdown::communication_ns() const {
  return sum_masks(*this, [](unsigned m) { return !(m & kCompute) && (m & kComm); });
}
int64_t GpuBreakdown::memory_ns() const {
  return sum_masks(*this, [](unsigned m) { return !(m & kKernel); });
}
int64_t GpuBreakdown::overlap_ns() const {
  return sum_masks(*this, [](unsigned m) { return (m & kKernel) == kKernel; });
}
int64_t GpuBreakdown::comm_total_ns() const {
  return sum_masks(*this, [](unsigned m) { return (m & kComm) != 0; });
}

void GpuBreakdown::merge(const GpuBreakdown& o) {
  if (o.intervals) {
    first_ns = intervals ? std::min(first_ns, o.first_ns) : o.first_ns;
    last_ns = intervals ? std::max(last_ns, o.last_ns) : o.last_ns;
  }
  for (size_t m = 0; m < kMasks; ++m) mask_ns[m] += o.mask_ns[m];
  host_wait_ns += o.host_wait_ns;
  kernel_wait_ns += o.kernel_wait_ns;
  gaps += o.gaps;
  host_wait_gaps += o.host_wait_gaps;
  intervals += o.intervals;
  late += o.late;
  late_ns += o.late_ns;
}

DeviceTimeline::DeviceTimeline(size_t capacity) : capacity_(std::max<size_t>(capacity, 4)) {}

void DeviceTimeline::add_slow(int64_t start, int64_t end, int64_t ready, GpuWork work) {
  // Times are CLOCK_MONOTONIC ns (never negative): a negative start is a damaged record, left
  // out so that differences of times cannot overflow.
  if (start < 0) return;
  if (end < start) end = start;
  if (room_ < capacity_) {  // the first interval, or the capacity grew
    std::unique_ptr<GpuInterval[]> bigger(new GpuInterval[capacity_]);
    std::copy(buf_.get(), buf_.get() + n_, bigger.get());
    buf_ = std::move(bigger);
    room_ = capacity_;
  }
  size_t j = n_++;
  GpuInterval x{start, end, ready, work};
  buf_[j] = x;
  if (j > 0 && sorted_ && earlier(x, buf_[j - 1])) {
    size_t i = j;  // insertion, at most kMaxShift places back
    while (i > 0 && j - i < kMaxShift && earlier(x, buf_[i - 1])) {
      buf_[i] = buf_[i - 1];
      --i;
    }
    buf_[i] = x;
    if (i > 0 && earlier(x, buf_[i - 1])) sorted_ = false;
  }
  if (n_ >= capacity_) drain(capacity_ - capacity_ / 4);
}

// An idle gap [from, to), ended by an interval ready at `ready`: a host wait when that interval
// was ready only after the gap began, else a kernel wait (Breakdown's host_wait_ns/kernel_wait_ns).
__attribute__((always_inline)) inline void DeviceTimeline::idle_gap(int64_t from, int64_t to, int64_t ready) {
  ++out_.gaps;
  if (ready > from) {
    out_.host_wait_ns += to - from;
    ++out_.host_wait_gaps;
  } else {
    out_.kernel_wait_ns += to - from;
  }
}

__attribute__((always_inline)) inline void DeviceTimeline::sweep(Sweep& s, int64_t start, int64_t end, int64_t ready,
                                                                 GpuWork work) {
  if (s.run == 1 && s.next_end <= start && s.t <= start) {
    // The common case (one stream busy at a time), written out: what advance() and the code
    // below do when the one running interval ends by this one's start (-3 % of instructions).
    if (s.next_end > s.t) {
      out_.mask_ns[s.mask] += s.next_end - s.t;
      s.t = s.next_end;
    }
    if (start > s.t) {  // an idle gap, ended by this interval
      idle_gap(s.t, start, ready);
      out_.mask_ns[0] += start - s.t;
      s.t = start;
    }
    run_end_[0] = end;
    run_work_[0] = work;
    s.next_end = end;
    s.mask = 1u << unsigned(work);
    return;
  }
  if (!s.started) {
    s.started = true;
    s.t = start;
    out_.first_ns = start;
  }
  if (start < s.t) {  // the sweep already passed its start: keep what is still ahead
    ++out_.late;
    if (capacity_ < kMaxCapacity) capacity_ = std::min(kMaxCapacity, capacity_ * 4);
    out_.late_ns += std::min(end, s.t) - start;
    if (end <= s.t) return;
    start = s.t;
    advance(s, start, ready, false);
  } else {
    advance(s, start, ready, true);
  }
  if (s.run == 0 || end < s.next_end) s.next_end = end;
  if (s.run == run_end_.size()) {
    run_end_.resize(2 * s.run + 4);
    run_work_.resize(2 * s.run + 4);
  }
  run_end_[s.run] = end;
  run_work_[s.run] = work;
  ++s.run;
  s.mask |= 1u << unsigned(work);
}

// Attributes [s.t, to) to the active sets in turn, retiring intervals that end on the way. When
// nothing is active just before `to`, that stretch is an idle gap ended by an interval ready at
// `ready`.
__attribute__((always_inline)) inline void DeviceTimeline::advance(Sweep& s, int64_t to, int64_t ready, bool gap_ends) {
  while (s.run != 0 && s.next_end <= to) {
    int64_t e = s.next_end;
    if (e > s.t) {
      out_.mask_ns[s.mask] += e - s.t;
      s.t = e;
    }
    if (s.run == 1) {  // the common case: one interval running, and it ends
      s.run = 0;
      s.mask = 0;
      break;
    }
    // Retire everything that ends at e (moving the last running interval into its place); the
    // next earliest end and the active kinds are those of the others (recomputed rather than
    // counted: no read-modify-write chain through memory).
    int64_t next = std::numeric_limits<int64_t>::max();
    unsigned mask = 0;
    for (size_t i = 0; i < s.run;) {
      if (run_end_[i] <= e) {
        --s.run;
        run_end_[i] = run_end_[s.run];
        run_work_[i] = run_work_[s.run];
      } else {
        next = std::min(next, run_end_[i]);
        mask |= 1u << unsigned(run_work_[i]);
        ++i;
      }
    }
    s.next_end = next;
    s.mask = mask;
  }
  if (to > s.t) {
    if (s.mask == 0 && gap_ends) idle_gap(s.t, to, ready);
    out_.mask_ns[s.mask] += to - s.t;
    s.t = to;
  }
}

void DeviceTimeline::drain(size_t n) {
  GpuInterval* buf = buf_.get();
  if (!sorted_) {
    std::sort(buf, buf + n_, earlier);
    sorted_ = true;
  }
  n = std::min(n, n_);
  Sweep s = s_;
  for (size_t i = 0; i < n; ++i) {
    const GpuInterval& iv = buf[i];
    sweep(s, iv.start, iv.end, iv.ready, iv.work);
  }
  s_ = s;
  out_.intervals += n;
  std::copy(buf + n, buf + n_, buf);
  n_ -= n;
}

GpuBreakdown DeviceTimeline::finish() {
  drain(n_);
  if (s_.started) {
    int64_t end = s_.t;
    for (size_t i = 0; i < s_.run; ++i) end = std::max(end, run_end_[i]);
    advance(s_, end, 0, false);
    out_.last_ns = s_.t;
  }
  GpuBreakdown b = out_;
  out_ = GpuBreakdown{};
  run_end_.clear();
  run_work_.clear();
  s_ = Sweep{};
  buf_.reset();
  room_ = n_ = 0;
  sorted_ = true;
  return b;
}

}  // namespace cutrace
