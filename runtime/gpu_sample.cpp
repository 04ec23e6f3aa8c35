#include "runtime/gpu_sample.h"
#include <algorithm>

namespace cutrace {

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

GpuSampleSchedule::GpuSampleSchedule(double fraction, int64_t period_ns, int64_t origin_ns, uint64_t seed)
    : period_ns_(std::max<int64_t>(period_ns, 1)), origin_ns_(origin_ns), seed_(seed) {
  double f = std::clamp(fraction, 0.0, 1.0);
  window_ns_ = f >= 1 ? period_ns_ : std::clamp<int64_t>(int64_t(f * double(period_ns_)), 1, period_ns_);
}

int64_t GpuSampleSchedule::window_start(int64_t k) const {
  int64_t slack = period_ns_ - window_ns_;  // where the window may begin inside its period
  int64_t offset = slack > 0 ? int64_t(splitmix64(seed_ + uint64_t(k)) % uint64_t(slack + 1)) : 0;
  return origin_ns_ + k * period_ns_ + offset;
}

bool GpuSampleSchedule::on_at(int64_t now_ns) const {
  if (!sampling()) return true;
  if (now_ns < origin_ns_) return false;
  int64_t k = (now_ns - origin_ns_) / period_ns_;
  int64_t start = window_start(k);
  return now_ns >= start && now_ns < start + window_ns_;
}

}  // namespace cutrace
