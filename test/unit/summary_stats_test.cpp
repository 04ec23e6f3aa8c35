// The summary's statistics types (time and range statistics, log histograms, signed
// distributions) against exact values, and the name glob.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tools/analysis/summary_model.h"

using namespace cutrace;

TEST_CASE("range statistics merge like a single stream") {
  RangeStat a, b, all;
  a.add(0, 30, 5, 25, 2);
  all.add(0, 30, 5, 25, 2);
  b.add(100, 110, 0, 50, 1);  // GPU start unknown: no projection
  all.add(100, 110, 0, 50, 1);
  b.add(200, 205, 210, 260, 3);
  all.add(200, 205, 210, 260, 3);
  a.merge(b);
  CHECK(a.count == 3);
  CHECK(a.cpu_total_ns() == all.cpu_total_ns());
  CHECK(a.cpu.min == 5);
  CHECK(a.cpu.max == 30);
  CHECK(a.cpu.median() == all.cpu.median());
  CHECK(a.cpu.stddev() == all.cpu.stddev());
  CHECK(a.gpu_count() == 2);
  CHECK(a.gpu_total_ns() == 70);
  CHECK(a.gpu_mean_ns() == 35);
  CHECK(a.gpu_ops == 6);
  RangeStat empty;
  empty.merge(RangeStat{});
  CHECK(empty.cpu_mean_ns() == 0);
  CHECK(empty.gpu_mean_ns() == 0);
  CHECK(empty.cpu.median() == 0);
}

TEST_CASE("time statistics merge like a single stream") {
  TimeStat a, b, all;
  for (int64_t d : {30, 10}) {
    a.add(100, 100 + d);
    all.add(100, 100 + d);
  }
  b.add(0, 50);    // no start: untimed
  b.add(100, 90);  // end before start: untimed
  b.add(100, 105);
  all.add(0, 50);
  all.add(100, 90);
  all.add(100, 105);
  a.merge(b);
  CHECK(a.count == all.count);
  CHECK(a.untimed == 2);
  CHECK(a.total_ns() == all.total_ns());
  CHECK(a.min_ns() == 5);
  CHECK(a.max_ns() == 30);
  CHECK(a.gpu.median() == 10);
  CHECK(a.gpu.stddev() == all.gpu.stddev());
  CHECK(a.gpu.stddev() == 13);  // {30, 10, 5}: 13.2
  TimeStat empty;
  empty.merge(TimeStat{});
  CHECK(empty.min_ns() == 0);
  CHECK(empty.mean_ns() == 0);
}

// ---- histogram -------------------------------------------------------------------------------

TEST_CASE("log histogram buckets") {
  CHECK(LogHistogram::bucket(-5) == 0);
  CHECK(LogHistogram::bucket(0) == 0);
  for (int64_t v = 0; v < 128; ++v) {  // small values have buckets of their own
    CHECK(LogHistogram::bucket(v) == v);
    CHECK(LogHistogram::bucket_value(int(v)) == v);
  }
  int prev = 0;
  for (int64_t v = 1; v < 2000000; v += 1 + v / 1000) {  // monotonic, and matches the bounds
    int b = LogHistogram::bucket(v);
    CHECK(b >= prev);
    CHECK(LogHistogram::bucket_low(b) <= v);
    CHECK(v < LogHistogram::bucket_low(b + 1));
    prev = b;
  }
  for (int b = 1; b + 1 < LogHistogram::kBuckets; ++b) {  // each value within 0.79% of its bucket's
    int64_t lo = LogHistogram::bucket_low(b), hi = LogHistogram::bucket_low(b + 1) - 1;
    REQUIRE(hi >= lo);
    int64_t rep = LogHistogram::bucket_value(b);
    CHECK(LogHistogram::bucket(lo) == b);
    CHECK(LogHistogram::bucket(hi) == b);
    CHECK(double(rep - lo) <= 0.0079 * double(lo));
    CHECK(double(hi - rep) <= 0.0079 * double(hi));
  }
  // bucket() skips the sub-bucket mask (v >> shift already carries the 64): same buckets as the
  // formula with it.
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    int64_t v = int64_t(rng() >> (20 + rng() % 38));  // every magnitude from 2^6 to 2^44
    if (v < 64 || v >= (int64_t(1) << 44)) continue;
    int e = 63 - __builtin_clzll(uint64_t(v));
    REQUIRE(LogHistogram::bucket(v) == ((e - 5) << 6) + int((v >> (e - 6)) & 63));
  }
  CHECK(LogHistogram::bucket_low(LogHistogram::kBuckets - 1) < (int64_t(1) << 44));
  CHECK(LogHistogram::bucket(int64_t(1) << 44) == LogHistogram::kBuckets - 1);
  CHECK(LogHistogram::bucket(std::numeric_limits<int64_t>::max()) == LogHistogram::kBuckets - 1);
}

TEST_CASE("histogram percentiles are within 1% of the exact ones") {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> kernel_like(9.0, 1.5);  // median ~8 us, long tail
  for (int trial = 0; trial < 4; ++trial) {
    Dist d, left, right;
    std::vector<int64_t> values;
    size_t n = trial == 0 ? 3 : size_t(1000) << (2 * trial);
    for (size_t i = 0; i < n; ++i) {
      int64_t v = int64_t(kernel_like(rng)) + 1;
      values.push_back(v);
      d.add(v);
      (i % 3 ? left : right).add(v);
    }
    left.merge(right);
    std::sort(values.begin(), values.end());
    for (double p : {0.01, 0.1, 0.5, 0.9, 0.99, 1.0}) {
      size_t k = std::max<size_t>(1, size_t(std::ceil(p * double(n))));
      double exact = double(values[k - 1]);
      CHECK(std::fabs(double(d.percentile(p)) - exact) <= 0.01 * exact);
      CHECK(left.percentile(p) == d.percentile(p));
    }
    CHECK(d.percentile(0) == values.front());
    CHECK(d.percentile(1) == values.back());
    double mean = 0, m2 = 0;
    for (int64_t v : values) mean += double(v);
    mean /= double(n);
    for (int64_t v : values) m2 += (double(v) - mean) * (double(v) - mean);
    double sd = std::sqrt(m2 / double(n - 1));
    CHECK(std::fabs(double(d.stddev()) - sd) <= 0.5 + 1e-9 * sd);
    CHECK(left.stddev() == d.stddev());
    CHECK(left.sum == d.sum);
  }
}

TEST_CASE("signed distributions: negative values and stddev stability") {
  Dist d;
  for (int64_t v : {-300, -100, 50, 200, 400}) d.add(v);
  CHECK(d.neg.count() == 2);
  CHECK(d.min == -300);
  CHECK(d.max == 400);
  CHECK(d.percentile(0.2) == -300);
  CHECK(d.percentile(0.4) == -100);
  CHECK(d.median() == 50);
  CHECK(d.percentile(1) == 400);
  CHECK(d.mean() == 50);
  // A large offset does not lose the spread (exact integer sums): values 10^12 + {0, 2}.
  Dist big;
  for (int i = 0; i < 1000; ++i) big.add(1000000000000 + (i % 2) * 2);
  CHECK(big.stddev() == 1);
  Dist one;
  one.add(12345);
  CHECK(one.median() == 12345);  // one value is kept exactly
  CHECK(one.stddev() == 0);
}

TEST_CASE("glob patterns") {
  CHECK(trace::name_pattern_match("step_[0-9]*|ProfilerStep#[0-9]*", "step_12"));
  CHECK(trace::name_pattern_match("step_[0-9]*|ProfilerStep#[0-9]*", "ProfilerStep#3"));
  CHECK_FALSE(trace::name_pattern_match("step_[0-9]*|ProfilerStep#[0-9]*", "step_fwd"));
  CHECK_FALSE(trace::name_pattern_match("step_[0-9]*|ProfilerStep#[0-9]*", "step"));
  CHECK(trace::name_pattern_match("*train?step*", "my_train_step_4"));
  CHECK(trace::name_pattern_match("[!a-c]x", "dx"));
  CHECK_FALSE(trace::name_pattern_match("[!a-c]x", "bx"));
  CHECK(trace::name_pattern_match("", ""));
  CHECK_FALSE(trace::name_pattern_match("a", ""));
}

// ---- temporal breakdown ----------------------------------------------------------------------
