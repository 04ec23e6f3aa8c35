#include "tools/analysis/stats.h"

#include <algorithm>
#include <cmath>

namespace cutrace {

// ---- LogHistogram, Dist ----------------------------------------------------------------------

int64_t LogHistogram::bucket_low(int b) {
  if (b < (1 << kSubBits)) return b;
  int e = (b >> kSubBits) + kSubBits - 1;
  int64_t sub = b & ((1 << kSubBits) - 1);
  return ((int64_t(1) << kSubBits) + sub) << (e - kSubBits);
}

int64_t LogHistogram::bucket_value(int b) {
  int64_t lo = bucket_low(b);
  if (b < (1 << kSubBits) || b + 1 >= kBuckets) return lo;
  int64_t hi = bucket_low(b + 1) - 1;
  return lo + (hi - lo + 1) / 2;
}

void LogHistogram::start() {
  counts_.assign(size_t(kBuckets), 0);
  for (size_t i = 0; i < n_; ++i) ++counts_[size_t(bucket(small_[i]))];
}

void LogHistogram::merge(const LogHistogram& o) {
  if (o.n_ == 0) return;
  if (o.counts_.empty()) {
    for (size_t i = 0; i < o.n_; ++i) add(o.small_[i]);
    return;
  }
  if (n_ == 0) {
    *this = o;
    return;
  }
  if (counts_.empty()) start();
  for (size_t b = 0; b < counts_.size(); ++b) counts_[b] += o.counts_[b];
  n_ += o.n_;
}

int64_t LogHistogram::at_rank(uint64_t k) const {
  if (n_ == 0) return 0;
  k = std::clamp<uint64_t>(k, 1, n_);
  if (counts_.empty()) {
    size_t m = std::min<size_t>(n_, kInline);
    k = std::min<uint64_t>(k, m);
    std::array<int64_t, kInline> v = small_;
    std::nth_element(v.begin(), v.begin() + ptrdiff_t(k - 1), v.begin() + ptrdiff_t(m));
    return v[k - 1];
  }
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[size_t(b)];
    if (seen >= k) return bucket_value(b);
  }
  return bucket_value(kBuckets - 1);
}

void Dist::merge(const Dist& o) {
  if (o.n == 0) return;
  min = n == 0 ? o.min : std::min(min, o.min);
  max = n == 0 ? o.max : std::max(max, o.max);
  n += o.n;
  sum = sat_add(sum, o.sum);
  sumsq += o.sumsq;
  pos.merge(o.pos);
  neg.merge(o.neg);
}

int64_t Dist::percentile(double p) const {
  if (n == 0) return 0;
  uint64_t k = uint64_t(std::ceil(std::clamp(p, 0.0, 1.0) * double(n)));
  k = std::clamp<uint64_t>(k, 1, n);
  if (k == 1) return min;  // the extremes are known exactly
  if (k == n) return max;
  int64_t v = k <= neg.count() ? -neg.at_rank(neg.count() - k + 1) : pos.at_rank(k - neg.count());
  return std::clamp(v, min, max);
}

int64_t Dist::stddev() const {
  if (n < 2) return 0;
  // n * variance, exact but for < 1
  unsigned __int128 mean_sq = static_cast<unsigned __int128>(__int128(sum) * sum) / n;
  if (sumsq <= mean_sq) return 0;
  unsigned __int128 m2 = sumsq - mean_sq;
  return int64_t(std::llround(std::sqrt(double(m2) / double(n - 1))));
}

// ---- stats -----------------------------------------------------------------------------------

void TimeStat::merge(const TimeStat& o) {
  count += o.count;
  untimed += o.untimed;
  pending += o.pending;
  gpu.merge(o.gpu);
}

void CopyStat::merge(const CopyStat& o) {
  time.merge(o.time);
  bytes += o.bytes;
  timed_bytes += o.timed_bytes;
}

void RangeStat::add(int64_t cpu_begin, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end, uint32_t ops) {
  ++count;
  cpu.add(cpu_end > cpu_begin ? sat_sub(cpu_end, cpu_begin) : 0);
  if (gpu_timed(gpu_start, gpu_end)) gpu.add(sat_sub(gpu_end, gpu_start));
  gpu_ops += ops;
}

void RangeStat::merge(const RangeStat& o) {
  count += o.count;
  open += o.open;
  cpu.merge(o.cpu);
  gpu.merge(o.gpu);
  gpu_ops += o.gpu_ops;
}

void StepStats::add(int64_t cpu_ns, bool has_gpu, int64_t gpu_ns) {
  cpu.add(cpu_ns);
  if (has_gpu) gpu.add(gpu_ns);
  if (!exact) return;
  if (cpu_values.size() >= kMaxExactSteps) {
    exact = false;
    std::vector<int64_t>().swap(cpu_values);
    std::vector<int64_t>().swap(gpu_values);
    return;
  }
  cpu_values.push_back(cpu_ns);
  if (has_gpu) gpu_values.push_back(gpu_ns);
}

void StepStats::merge(const StepStats& o) {
  cpu.merge(o.cpu);
  gpu.merge(o.gpu);
  if (exact && o.exact && cpu_values.size() + o.cpu_values.size() <= kMaxExactSteps) {
    cpu_values.insert(cpu_values.end(), o.cpu_values.begin(), o.cpu_values.end());
    gpu_values.insert(gpu_values.end(), o.gpu_values.begin(), o.gpu_values.end());
  } else {
    exact = false;
    std::vector<int64_t>().swap(cpu_values);
    std::vector<int64_t>().swap(gpu_values);
  }
}

namespace {
int64_t exact_percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  uint64_t k = uint64_t(std::ceil(std::clamp(p, 0.0, 1.0) * double(v.size())));
  k = std::clamp<uint64_t>(k, 1, v.size());
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(k - 1), v.end());
  return v[k - 1];
}
}  // namespace

int64_t StepStats::cpu_percentile(double p) const {
  return exact ? exact_percentile(cpu_values, p) : cpu.percentile(p);
}
int64_t StepStats::gpu_percentile(double p) const {
  return exact ? exact_percentile(gpu_values, p) : gpu.percentile(p);
}

std::vector<HistBin> StepStats::bins(bool use_gpu) const {
  const Dist& d = use_gpu ? gpu : cpu;
  std::vector<HistBin> out;
  if (d.n == 0) return out;
  int64_t range = sat_sub(d.max, d.min);  // damaged durations may be negative
  size_t nbins = range == 0 ? 1 : std::clamp<size_t>(size_t(std::ceil(std::sqrt(double(d.n)))), 10, 20);
  int64_t width = range / int64_t(nbins) + 1;  // nbins * width > range: max falls in the last bin
  for (size_t i = 0; i < nbins; ++i) {
    int64_t lo = sat_add(d.min, int64_t(i) * width);
    out.push_back({lo, sat_add(lo, width), 0});
  }
  auto put = [&](int64_t v, uint64_t n) {
    v = std::clamp(v, d.min, d.max);
    out[std::min(size_t(sat_sub(v, d.min) / width), nbins - 1)].count += n;
  };
  if (exact) {
    for (int64_t v : use_gpu ? gpu_values : cpu_values) put(v, 1);
  } else {
    d.pos.for_each(put);  // step durations are never negative
  }
  return out;
}

}  // namespace cutrace
