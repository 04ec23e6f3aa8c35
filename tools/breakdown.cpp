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

void DeviceTimeline::add(const GpuInterval& in) {
  size_t j = buf_.size();
  buf_.push_back(in);
  GpuInterval& iv = buf_.back();
  if (iv.end < iv.start) iv.end = iv.start;
  if (j > 0 && sorted_ && before(iv, buf_[j - 1])) {
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

void DeviceTimeline::drain(size_t n) {
  if (!sorted_) {
    std::sort(buf_.begin(), buf_.end(), before);
    sorted_ = true;
  }
  n = std::min(n, buf_.size());
  for (size_t i = 0; i < n; ++i) sweep(buf_[i]);
  buf_.erase(buf_.begin(), buf_.begin() + ptrdiff_t(n));
}

void DeviceTimeline::sweep(GpuInterval iv) {
  ++out_.intervals;
  if (!started_) {
    started_ = true;
    t_ = iv.start;
    out_.first_ns = iv.start;
  }
  if (iv.start < t_) {  // the sweep already passed its start: keep what is still ahead
    ++out_.late;
    if (capacity_ < kMaxCapacity) capacity_ = std::min(kMaxCapacity, capacity_ * 4);
    out_.late_ns += std::min(iv.end, t_) - iv.start;
    if (iv.end <= t_) return;
    iv.start = t_;
    advance(iv.start, iv.ready, false);
  } else {
    advance(iv.start, iv.ready, true);
  }
  if (active_set_.empty() || iv.end < next_end_) next_end_ = iv.end;
  active_set_.push_back({iv.end, iv.work});
  if (active_[size_t(iv.work)]++ == 0) mask_ |= 1u << unsigned(iv.work);
}

void DeviceTimeline::retire(size_t i) {
  GpuWork w = active_set_[i].work;
  active_set_[i] = active_set_.back();
  active_set_.pop_back();
  if (--active_[size_t(w)] == 0) mask_ &= ~(1u << unsigned(w));
}

// Attributes [t_, to) to the active sets in turn, retiring intervals that end on the way. When
// nothing is active just before `to`, that stretch is an idle gap ended by an interval ready at
// `ready`.
void DeviceTimeline::advance(int64_t to, int64_t ready, bool gap_ends) {
  while (!active_set_.empty() && next_end_ <= to) {
    int64_t e = next_end_;
    if (e > t_) {
      out_.mask_ns[mask_] += e - t_;
      t_ = e;
    }
    // Retire everything that ends at e, and find the next earliest end.
    int64_t next = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < active_set_.size();) {
      if (active_set_[i].end <= e) {
        retire(i);
      } else {
        next = std::min(next, active_set_[i].end);
        ++i;
      }
    }
    next_end_ = next;
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

GpuBreakdown DeviceTimeline::finish() {
  drain(buf_.size());
  if (started_) {
    int64_t end = t_;
    for (const Active& a : active_set_) end = std::max(end, a.end);
    advance(end, 0, false);
    out_.last_ns = t_;
  }
  GpuBreakdown b = out_;
  out_ = GpuBreakdown{};
  active_set_.clear();
  std::fill(std::begin(active_), std::end(active_), 0);
  mask_ = 0;
  started_ = false;
  t_ = 0;
  std::vector<GpuInterval>().swap(buf_);
  sorted_ = true;
  return b;
}

}  // namespace cutrace
