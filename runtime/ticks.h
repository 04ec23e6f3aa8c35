// Raw ticks for the hot path; the collector converts them to CLOCK_MONOTONIC ns from anchors.
#pragma once
#include <cstdint>
#include <ctime>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace cutrace {

extern bool g_use_tsc;  // chosen once at load: invariant TSC present

inline int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline int64_t real_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// CLOCK_MONOTONIC and CLOCK_REALTIME at the same instant: the realtime read sandwiched between
// two monotonic reads, best of a few tries (the narrowest sandwich).
inline void clock_pair(int64_t* mono, int64_t* real) {
  int64_t best = INT64_MAX;
  for (int i = 0; i < 4; ++i) {
    int64_t a = mono_ns(), r = real_ns(), b = mono_ns();
    if (b - a < best) best = b - a, *mono = a + (b - a) / 2, *real = r;
  }
}

inline uint64_t ticks() {
#if defined(__x86_64__)
  if (__builtin_expect(g_use_tsc, 1)) return __rdtsc();
#endif
  return uint64_t(mono_ns());
}

// Maps ticks to ns. Updated by the collector only (single thread). Piecewise linear and
// continuous: each update starts a segment where the last one's mapping stands and slews toward
// the measured clock over the next interval, so that later ticks never map to earlier ns (a jump
// to each new anchor once put a call before the end of the one before it on its thread).
class TickClock {
 public:
  void init();    // first anchor
  void update();  // new anchor; refines the rate from the first one
  int64_t to_ns(uint64_t t) const;

 private:
  struct Segment {
    uint64_t t = 0;
    int64_t ns = 0;
    double ns_per_tick = 1.0;
  };
  uint64_t t0_ = 0;
  int64_t ns0_ = 0;
  Segment cur_, prev_;  // ticks before cur_.t map through prev_
  bool rated_ = false;  // a rate was measured (the first update)
};

}  // namespace cutrace
