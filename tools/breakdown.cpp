#include "tools/breakdown.h"

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

bool before(const GpuInterval& a, const GpuInterval& b) {
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

void DeviceTimeline::add(int64_t start, int64_t end, int64_t ready, GpuWork work) {
  // Times are CLOCK_MONOTONIC ns (never negative): a negative start is a damaged record, left
  // out so that differences of times cannot overflow.
  if (start < 0) return;
  if (end < start) end = start;
  size_t j = buf_.size();
  buf_.emplace_back();
  GpuInterval& iv = buf_.back();
  iv.start = start;
  iv.end = end;
  iv.ready = ready;
  iv.work = work;
  if (j > 0 && sorted_ && (start < buf_[j - 1].start || (start == buf_[j - 1].start && ready < buf_[j - 1].ready))) {
    GpuInterval x = iv;
    size_t i = j;  // insertion, at most kMaxShift places back
    while (i > 0 && j - i < kMaxShift && before(x, buf_[i - 1])) {
      buf_[i] = buf_[i - 1];
      --i;
    }
    buf_[i] = x;
    if (i > 0 && before(x, buf_[i - 1])) sorted_ = false;
  }
  if (buf_.size() >= capacity_) drain(capacity_ - capacity_ / 4);
}

__attribute__((always_inline)) inline void DeviceTimeline::sweep(int64_t start, int64_t end, int64_t ready, GpuWork work) {
  ++out_.intervals;
  if (!started_) {
    started_ = true;
    t_ = start;
    out_.first_ns = start;
  }
  if (start < t_) {  // the sweep already passed its start: keep what is still ahead
    ++out_.late;
    if (capacity_ < kMaxCapacity) capacity_ = std::min(kMaxCapacity, capacity_ * 4);
    out_.late_ns += std::min(end, t_) - start;
    if (end <= t_) return;
    start = t_;
    advance(start, ready, false);
  } else {
    advance(start, ready, true);
  }
  if (run_end_.empty() || end < next_end_) next_end_ = end;
  run_end_.push_back(end);
  run_work_.push_back(work);
  mask_ |= 1u << unsigned(work);
}

void DeviceTimeline::retire(size_t i) {
  run_end_[i] = run_end_.back();
  run_work_[i] = run_work_.back();
  run_end_.pop_back();
  run_work_.pop_back();
}

// Attributes [t_, to) to the active sets in turn, retiring intervals that end on the way. When
// nothing is active just before `to`, that stretch is an idle gap ended by an interval ready at
// `ready`.
__attribute__((always_inline)) inline void DeviceTimeline::advance(int64_t to, int64_t ready, bool gap_ends) {
  while (!run_end_.empty() && next_end_ <= to) {
    int64_t e = next_end_;
    if (e > t_) {
      out_.mask_ns[mask_] += e - t_;
      t_ = e;
    }
    if (run_end_.size() == 1) {  // the common case: one interval running, and it ends
      run_end_.clear();
      run_work_.clear();
      mask_ = 0;
      break;
    }
    // Retire everything that ends at e; the next earliest end and the active kinds are those of
    // the others (recomputed rather than counted: no read-modify-write chain through memory).
    int64_t next = std::numeric_limits<int64_t>::max();
    unsigned mask = 0;
    for (size_t i = 0; i < run_end_.size();) {
      if (run_end_[i] <= e) {
        retire(i);
      } else {
        next = std::min(next, run_end_[i]);
        mask |= 1u << unsigned(run_work_[i]);
        ++i;
      }
    }
    next_end_ = next;
    mask_ = mask;
  }
  if (to > t_) {
    if (mask_ == 0 && gap_ends) {
      ++out_.gaps;
      if (ready > t_) {
        out_.host_wait_ns += to - t_;
        ++out_.host_wait_gaps;
      } else {
        out_.kernel_wait_ns += to - t_;
      }
    }
    out_.mask_ns[mask_] += to - t_;
    t_ = to;
  }
}

void DeviceTimeline::drain(size_t n) {
  if (!sorted_) {
    std::sort(buf_.begin(), buf_.end(), before);
    sorted_ = true;
  }
  n = std::min(n, buf_.size());
  for (size_t i = 0; i < n; ++i) {
    const GpuInterval& iv = buf_[i];
    sweep(iv.start, iv.end, iv.ready, iv.work);
  }
  buf_.erase(buf_.begin(), buf_.begin() + ptrdiff_t(n));
}

GpuBreakdown DeviceTimeline::finish() {
  drain(buf_.size());
  if (started_) {
    int64_t end = t_;
    for (int64_t e : run_end_) end = std::max(end, e);
    advance(end, 0, false);
    out_.last_ns = t_;
  }
  GpuBreakdown b = out_;
  out_ = GpuBreakdown{};
  run_end_.clear();
  run_work_.clear();
  mask_ = 0;
  started_ = false;
  t_ = 0;
  std::vector<GpuInterval>().swap(buf_);
  sorted_ = true;
  return b;
}

}  // namespace cutrace
