// When GPU times are taken under CUTRACE_GPU_SAMPLE=FRACTION[/PERIOD_MS]: one window of
// FRACTION x PERIOD in each PERIOD, at a pseudo-random offset inside it, so that a job whose step
// time divides the period is not always sampled at the same phase of its step. The collector
// follows this schedule (shim's g_gpu_sample_on; CUPTI collection on only inside windows).
// Every call is recorded either way; only the GPU times are sampled.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace cutrace {

// CUTRACE_GPU_SAMPLE / `cutrace record --gpu-sample`: FRACTION[/PERIOD_MS], 0 < FRACTION <= 1 (or
// a percentage, "20%"), 10 <= PERIOD_MS <= 3600000 (default 200). False if malformed.
inline bool parse_gpu_sample(const char* v, double* fraction, int64_t* period_ns) {
  char* end = nullptr;
  double f = strtod(v, &end);
  if (end == v) return false;
  if (*end == '%') f /= 100, ++end;
  long period_ms = 200;
  if (*end == '/') {
    char* e2 = nullptr;
    period_ms = strtol(end + 1, &e2, 10);
    if (e2 == end + 1) return false;
    if (!strcmp(e2, "ms")) e2 += 2;
    end = e2;
  }
  if (*end != 0 || !(f > 0 && f <= 1) || period_ms < 10 || period_ms > 3600000) return false;
  *fraction = f;
  *period_ns = int64_t(period_ms) * 1000000;
  return true;
}

class GpuSampleSchedule {
 public:
  // `origin_ns`: where period 0 begins; `seed`: picks the offsets (the same seed, the same windows).
  GpuSampleSchedule(double fraction, int64_t period_ns, int64_t origin_ns, uint64_t seed);
  bool sampling() const { return window_ns_ < period_ns_; }  // false: always on
  bool on_at(int64_t now_ns) const;
  // The window of period k (k >= 0): [start, start + window_ns()).
  int64_t window_start(int64_t k) const;
  int64_t window_ns() const { return window_ns_; }
  int64_t period_ns() const { return period_ns_; }

 private:
  int64_t period_ns_, window_ns_, origin_ns_;
  uint64_t seed_;
};

}  // namespace cutrace
