// Stragglers from collectives (tools/analysis/straggler.h) on synthetic jobs (job_fixture.h): the rank the
// others wait for is named with the exact time they waited, or "no straggler".
#include <string>

#include <doctest/doctest.h>

#include "test/unit/job_fixture.h"
#include "test/unit/temp_dir.h"
#include "tools/analysis/straggler.h"

using namespace cutrace;
using cutrace_test::SimJob;
using cutrace_test::TempDir;

namespace {

StragglerReport analyse(const SimJob& j) {
  TempDir d;
  std::vector<RankProfile> ps;
  Alignment a = align_traces(j.write_all(d.path), AlignOptions{}, &ps);
  return find_stragglers(ps, a);
}

}  // namespace

TEST_CASE("straggler: a rank with 20x the Backward CPU work is named with the time the others waited") {
  SimJob j = cutrace_test::two_hosts_windows_apart();
  j.ranks[1].backward_ns = 1'730'000;  // rank 0: 91 us
  StragglerReport s = analyse(j);
  REQUIRE(s.analysed);
  CHECK(s.instances == 34);  // the steps both windows hold
  REQUIRE(s.straggler == 1);
  const RankLoad& r = s.ranks[1];
  CHECK(r.last == 34);
  CHECK(r.waited_for_ns == 34 * 1'639'000);  // rank 0 arrived 1.73 ms - 91 us earlier, each time
  CHECK(s.ranks[0].last == 0);
  CHECK(s.ranks[0].waited_for_ns == 0);
  CHECK(r.range == "Backward");
  CHECK(r.range_ns == 1'730'000);
  CHECK(r.range_others_ns == 91'000);
  CHECK(r.host_per_step_ns == 2'065'000);  // 335 us + Backward, outside the synchronisation
  CHECK(s.ranks[0].host_per_step_ns == 426'000);
  CHECK(r.compute_per_step_ns == 300'000);
  CHECK(s.verdict ==
        "rank 1 (node-b) is the straggler: the other ranks waited 55.7 ms for it, at 34 of 34 collectives (1.64 ms a "
        "rank each time); host time 2.06 ms a step (others 426 us), compute 300 us a step (others 300 us); Backward "
        "1.73 ms a "
        "step (others 91.0 us)");
  nlohmann::ordered_json js = straggler_json(s);
  CHECK(js["straggler_rank"] == 1);
  CHECK(js["ranks"][1]["waited_for_ns"] == 34 * 1'639'000);
  CHECK(js["ranks"][1]["range"]["name"] == "Backward");
}

TEST_CASE("straggler: even ranks have no straggler") {
  SimJob j = cutrace_test::two_hosts_windows_apart();
  StragglerReport s = analyse(j);
  REQUIRE(s.analysed);
  CHECK(s.straggler == -1);
  CHECK(s.verdict == "no straggler: at 34 collectives the ranks waited 0 ns on average for the last to arrive");
}

TEST_CASE("straggler: ranks that take turns being slow have no straggler") {
  SimJob j = cutrace_test::two_hosts_windows_apart();
  for (int k = 0; k < 60; ++k) j.ranks[size_t(k % 2)].slow_steps.insert(k);
  for (auto& r : j.ranks) r.slow_backward_ns = 1'000'000;
  StragglerReport s = analyse(j);
  REQUIRE(s.analysed);
  CHECK(s.ranks[0].last == 17);
  CHECK(s.ranks[1].last == 17);
  CHECK(s.straggler == -1);
}

TEST_CASE("straggler: ranks whose collectives do not match are not analysed, and say why") {
  SimJob j = cutrace_test::two_hosts_windows_apart();
  j.ranks[1].noisy_ends = true;
  StragglerReport s = analyse(j);
  CHECK_FALSE(s.analysed);
  CHECK(s.verdict == "no straggler analysis: no collective matched across ranks (see the clock alignment's warnings)");
}
