#include "shim/ticks.h"
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
  t_last_ = t0_, ns_last_ = ns0_;
  ns_per_tick_ = g_use_tsc ? 0.0 : 1.0;
}

void TickClock::update() {
  sample(&t_last_, &ns_last_);
  if (!g_use_tsc) return;
  if (t_last_ > t0_ + 1000) ns_per_tick_ = double(ns_last_ - ns0_) / double(t_last_ - t0_);
}

int64_t TickClock::to_ns(uint64_t t) const {
  if (!g_use_tsc) return int64_t(t);
  return ns_last_ + int64_t(double(int64_t(t - t_last_)) * ns_per_tick_);
}

}  // namespace cutrace
