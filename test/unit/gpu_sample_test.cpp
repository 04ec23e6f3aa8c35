// CUTRACE_GPU_SAMPLE's schedule: one window of fraction x period inside each period, at offsets
// that differ from period to period (a periodic job is sampled at all phases of its step).
#include "runtime/gpu_sample.h"
#include <doctest/doctest.h>
#include <set>

using cutrace::GpuSampleSchedule;

namespace {
constexpr int64_t kMs = 1000000;

// Time inside windows over [origin, origin + periods x period), walked in 10 us steps.
int64_t time_on(const GpuSampleSchedule& s, int64_t origin, int periods) {
  int64_t on = 0, step = 10000;
  for (int64_t t = origin; t < origin + periods * s.period_ns(); t += step) on += s.on_at(t) ? step : 0;
  return on;
}
}  // namespace

TEST_CASE("gpu_sample_window_takes_its_fraction_of_every_period") {
  const int64_t origin = 5000 * kMs;
  GpuSampleSchedule s(0.2, 100 * kMs, origin, 42);
  CHECK(s.sampling());
  CHECK(s.window_ns() == 20 * kMs);
  for (int64_t k = 0; k < 200; ++k) {
    int64_t start = s.window_start(k);
    CHECK(start >= origin + k * 100 * kMs);
    CHECK(start + s.window_ns() <= origin + (k + 1) * 100 * kMs);
    CHECK(s.on_at(start));
    CHECK(s.on_at(start + s.window_ns() - 1));
    CHECK_FALSE(s.on_at(start + s.window_ns()));
    if (start > origin + k * 100 * kMs) CHECK_FALSE(s.on_at(start - 1));
  }
  CHECK(time_on(s, origin, 50) == 50 * 20 * kMs);
  CHECK_FALSE(s.on_at(origin - 1));
}

TEST_CASE("gpu_sample_windows_move_from_period_to_period") {
  GpuSampleSchedule s(0.1, 1000 * kMs, 0, 7);
  std::set<int64_t> offsets;
  int early = 0;  // windows in the first half of their period
  for (int64_t k = 0; k < 100; ++k) {
    int64_t off = s.window_start(k) - k * 1000 * kMs;
    offsets.insert(off);
    early += off < 450 * kMs;
  }
  CHECK(offsets.size() > 90);
  CHECK(early > 30);
  CHECK(early < 70);
  // The same seed gives the same windows; another seed, others.
  GpuSampleSchedule same(0.1, 1000 * kMs, 0, 7), other(0.1, 1000 * kMs, 0, 8);
  CHECK(same.window_start(17) == s.window_start(17));
  CHECK(other.window_start(17) != s.window_start(17));
}

TEST_CASE("gpu_sample_of_one_is_always_on") {
  GpuSampleSchedule s(1.0, 1000 * kMs, 0, 1);
  CHECK_FALSE(s.sampling());
  CHECK(s.on_at(0));
  CHECK(s.on_at(123456789));
  CHECK(s.on_at(-5));
}

TEST_CASE("gpu_sample_spec_parsed_or_refused") {
  double f = 0;
  int64_t p = 0;
  CHECK(cutrace::parse_gpu_sample("0.2", &f, &p));
  CHECK(f == doctest::Approx(0.2));
  CHECK(p == 200 * kMs);
  CHECK(cutrace::parse_gpu_sample("25%/1000", &f, &p));
  CHECK(f == doctest::Approx(0.25));
  CHECK(p == 1000 * kMs);
  CHECK(cutrace::parse_gpu_sample("1/50ms", &f, &p));
  CHECK(f == 1);
  CHECK(p == 50 * kMs);
  for (const char* bad : {"", "0", "-0.1", "1.5", "half", "0.2/", "0.2/5", "0.2/x", "0.2/100s", "0.2 "})
    CHECK_MESSAGE(!cutrace::parse_gpu_sample(bad, &f, &p), bad);
}
