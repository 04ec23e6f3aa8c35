// The collector's tick-to-ns mapping: ticks taken before the first rate was known still map to
// distinct times, and later ticks never map to earlier ns across anchor updates.
#include <doctest/doctest.h>
#include <time.h>
#include <vector>
#include "runtime/ticks.h"

using namespace cutrace;

namespace cutrace {
void choose_tick_source();
}

TEST_CASE("tick clock: monotonic across updates, ticks before the first rate not collapsed") {
  choose_tick_source();
  TickClock clock;
  clock.init();
  std::vector<uint64_t> ticks_seen;
  struct timespec ms = {0, 1000000};
  for (int i = 0; i < 5; ++i) {
    ticks_seen.push_back(ticks());
    nanosleep(&ms, nullptr);
  }
  for (int round = 0; round < 20; ++round) {
    clock.update();
    for (int i = 0; i < 3; ++i) {
      ticks_seen.push_back(ticks());
      nanosleep(&ms, nullptr);
    }
  }
  clock.update();
  int64_t prev = clock.to_ns(ticks_seen[0]);
  for (size_t i = 1; i < ticks_seen.size(); ++i) {
    int64_t ns = clock.to_ns(ticks_seen[i]);
    CHECK(ns > prev);  // 1 ms apart: strictly later
    prev = ns;
  }
  // Mapped times are close to the monotonic clock: within 1 ms of a fresh reading.
  int64_t now_mapped = clock.to_ns(ticks()), now = mono_ns();
  CHECK(now_mapped - now < 1000000);
  CHECK(now - now_mapped < 1000000);
}
