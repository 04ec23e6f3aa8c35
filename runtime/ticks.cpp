#include "runtime/ticks.h"
#include <cstdio>
#include <cstring>

namespace cutrace {

bool g_use_tsc = false;

// The TSC is usable when it runs at a constant rate through sleep states.
static bool tsc_invariant() {
#if defined(__x86_64__)
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) != 0) continue;
    constant = strstr(line, " constant_tsc") != nullptr;
    nonstop = strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  fclose(f);
  return constant && nonstop;
#else
  return false;
#endif
}

void choose_tick_source() { g_use_tsc = tsc_invariant(); }

// One (ticks, ns) pair taken as close together as possible: the best of a few tries.
static void sample(uint64_t* t, int64_t* ns) {
  int64_t best = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t a = ticks();
    int64_t n = mono_ns();
    uint64_t b = ticks();
    if (int64_t(b - a) < best) best = int64_t(b - a), *t = a + (b - a) / 2, *ns = n;
  }
}

void TickClock::init() {
  sample(&t0_, &ns0_);
  cur_ = {t0_, ns0_, g_use_tsc ? 0.0 : 1.0};
  prev_ = cur_;
}

void TickClock::update() {
  if (!g_use_tsc) return;
  uint64_t t;
  int64_t ns;
  sample(&t, &ns);
  if (t <= t0_ + 1000 || int64_t(t - cur_.t) <= 0) return;
  double rate = double(ns - ns0_) / double(t - t0_);  // over the whole run so far
  int64_t at = to_ns(t);                              // where the current mapping puts t
  int64_t err = ns - at;
  Segment next{t, at, rate};
  if (!rated_ || err > 1000000 || err < -1000000) {
    next.ns = ns;  // no rate yet, or off by more than 1 ms (a suspended machine): jump
  } else {
    // Catch up over one interval like the last, by at most 500 ppm of the rate.
    double slew = double(err) / double(t - cur_.t);
    double cap = 5e-4 * rate;
    next.ns_per_tick = rate + (slew > cap ? cap : slew < -cap ? -cap : slew);
  }
  // Before the first rate the segment had none: ticks from then map through the new one too.
  prev_ = rated_ ? cur_ : next;
  cur_ = next;
  rated_ = true;
}

int64_t TickClock::to_ns(uint64_t t) const {
  if (!g_use_tsc) return int64_t(t);
  const Segment& s = int64_t(t - cur_.t) >= 0 ? cur_ : prev_;
  return s.ns + int64_t(double(int64_t(t - s.t)) * s.ns_per_tick);
}

}  // namespace cutrace
