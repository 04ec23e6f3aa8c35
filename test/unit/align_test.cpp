// Clock alignment of a job's ranks (tools/analysis/align.h) on synthetic jobs (job_fixture.h) whose true
// corrections are known exactly.
#include <algorithm>
#include <string>

#include <doctest/doctest.h>

#include "test/unit/job_fixture.h"
#include "test/unit/temp_dir.h"
#include "tools/analysis/align.h"
#include "trace/reader.h"

using namespace cutrace;
using cutrace_test::SimJob;
using cutrace_test::TempDir;

namespace {

// Where step_<k>'s range begins on rank i's aligned clock.
int64_t aligned_step_begin(const SimJob& j, const Alignment& a, size_t i, int k) {
  return j.step_begin(k) - j.ranks[i].mono_base + a.ranks[i].offset_ns;
}

}  // namespace

TEST_CASE("align: windows opened at different steps match by step names, with the true counts") {
  TempDir d;
  SimJob j = cutrace_test::two_hosts_windows_apart();
  Alignment a = align_traces(j.write_all(d.path));
  REQUIRE(a.errors.empty());
  REQUIRE(a.ranks.size() == 2);
  CHECK(a.method == "realtime+nccl");
  CHECK(a.reference == 0);
  CHECK(a.ranks[0].collectives == 60);
  CHECK(a.ranks[1].collectives == 34);
  CHECK(a.ranks[1].matched == 34);
  CHECK(a.matched == 34);  // the 34 of rank 0's 60 that rank 1 ran too
  CHECK(a.ranks[1].matched_by == "steps");
  CHECK(a.ranks[1].refined_ns == -3'000'000);  // exactly its wall clock's error
  CHECK(a.ranks[1].residual_max_ns == 0);
  CHECK(a.warnings.empty());
  CHECK(aligned_step_begin(j, a, 0, 30) == aligned_step_begin(j, a, 1, 30));
}

TEST_CASE("align: collectives that repeat within the clock bound and no step names stay on wall clocks, said so") {
  TempDir d;
  SimJob j = cutrace_test::two_hosts_windows_apart();
  for (auto& r : j.ranks) r.step_names = false;
  Alignment a = align_traces(j.write_all(d.path));
  CHECK(a.method == "realtime");
  CHECK(a.ranks[1].status == "wall clock");
  CHECK(a.ranks[1].refined_ns == 0);
  CHECK(a.ranks[1].offset_ns == a.ranks[1].wall_offset_ns);
  CHECK(a.ranks[1].uncertainty_ns == 50'000'000);
  CHECK(a.matched == 0);
  REQUIRE(a.warnings.size() == 1);
  CHECK(a.warnings[0].find("rank 1 (node-b): collectives repeat every 11.7 ms") == 0);
  CHECK(a.warnings[0].find("ambiguous; aligned on wall clocks only, uncertainty +-50.0 ms") != std::string::npos);
}

TEST_CASE("align: steps of unequal length and no step names match by time within the bound") {
  TempDir d;
  SimJob j = cutrace_test::two_hosts_windows_apart();
  j.jitter = true;
  for (auto& r : j.ranks) r.step_names = false;
  Alignment a = align_traces(j.write_all(d.path));
  INFO((a.warnings.empty() ? std::string() : a.warnings[0]));
  CHECK(a.method == "realtime+nccl");
  CHECK(a.ranks[1].matched_by == "times");
  CHECK(a.ranks[1].matched == 34);
  CHECK(a.matched == 34);
  CHECK(a.ranks[1].refined_ns == -3'000'000);
  CHECK(a.warnings.empty());
}

TEST_CASE("align: a correction beyond the clock tolerance is not applied unless the tolerance allows it") {
  TempDir d;
  SimJob j = cutrace_test::two_hosts_windows_apart();
  j.ranks[1].realtime_err = 2'500'000'000;  // host b's wall clock 2.5 s ahead
  std::vector<std::string> files = j.write_all(d.path);
  Alignment a = align_traces(files);
  CHECK(a.method == "realtime");
  CHECK(a.ranks[1].offset_ns == a.ranks[1].wall_offset_ns);
  REQUIRE(a.warnings.size() == 1);
  CHECK(a.warnings[0] ==
        "rank 1 (node-b): its 34 collectives matched by step names put its clock -2.50 s off its wall clock, more than "
        "the +-50.0 ms the clocks allow (--clock-tolerance); aligned on wall clocks only, uncertainty +-50.0 ms");
  CHECK(a.ranks[1].matched == 34);  // the identity holds: the instances stay matched
  CHECK(a.matched == 34);

  AlignOptions wide;
  wide.cross_host_tolerance_ns = 3'000'000'000;
  Alignment b = align_traces(files, wide);
  CHECK(b.method == "realtime+nccl");
  CHECK(b.ranks[1].refined_ns == -2'500'000'000);
  CHECK(b.warnings.empty());
  CHECK(aligned_step_begin(j, b, 0, 30) == aligned_step_begin(j, b, 1, 30));
}

TEST_CASE("align: a rank without NCCL is aligned on its wall clock with a warning") {
  TempDir d;
  SimJob j = cutrace_test::two_hosts_windows_apart();
  j.ranks[1].nccl = false;
  Alignment a = align_traces(j.write_all(d.path));
  CHECK(a.method == "realtime");
  CHECK(a.ranks[1].status == "wall clock");
  REQUIRE(a.warnings.size() == 1);
  CHECK(a.warnings[0] == "rank 1 (node-b): no NCCL collectives; aligned on wall clocks only, uncertainty +-50.0 ms");

  j.ranks[0].nccl = false;
  TempDir d2;
  Alignment none = align_traces(j.write_all(d2.path));
  CHECK(none.reference == -1);
  REQUIRE(none.warnings.size() == 1);
  CHECK(none.warnings[0] == "no NCCL collectives in any trace: ranks aligned on their wall clocks only");
  CHECK(none.ranks[1].uncertainty_ns == 50'000'000);
}

TEST_CASE("align: step names that pair different collectives are overruled by their times") {
  TempDir d;
  SimJob j = cutrace_test::two_hosts_windows_apart();
  j.jitter = true;
  j.ranks[1].step_name_offset = -1;  // rank 1 calls rank 0's step k "step_<k-1>"
  Alignment a = align_traces(j.write_all(d.path));
  CHECK(a.ranks[1].matched_by == "times");
  CHECK(a.ranks[1].refined_ns == -3'000'000);
  CHECK(a.ranks[1].matched == 34);
  CHECK(a.warnings.empty());
}

TEST_CASE("align: collectives whose ends do not agree are reported, not used") {
  TempDir d;
  SimJob j = cutrace_test::two_hosts_windows_apart();
  j.ranks[1].noisy_ends = true;
  Alignment a = align_traces(j.write_all(d.path));
  CHECK(a.method == "realtime");
  CHECK(a.ranks[1].status == "wall clock");
  CHECK(a.ranks[1].offset_ns == a.ranks[1].wall_offset_ns);
  CHECK(a.matched == 0);
  REQUIRE(a.warnings.size() == 1);
  INFO(a.warnings[0]);
  CHECK(a.warnings[0].find("rank 1 (node-b): collectives do not match: of 34 matched by step names, ") == 0);
  CHECK(a.warnings[0].find("; by time: collectives do not match: at best ") != std::string::npos);
  CHECK(a.warnings[0].find("; aligned on wall clocks only, uncertainty +-50.0 ms") != std::string::npos);
}

TEST_CASE("align: lost collective records leave the others matched") {
  TempDir d;
  SimJob j = cutrace_test::two_hosts_windows_apart();
  j.ranks[1].lost_steps = {30, 31, 40};
  j.ranks[0].lost_steps = {45};
  Alignment a = align_traces(j.write_all(d.path));
  CHECK(a.ranks[0].collectives == 59);
  CHECK(a.ranks[1].collectives == 31);
  CHECK(a.ranks[1].matched == 30);  // step 45 is on rank 1 only
  CHECK(a.matched == 30);
  CHECK(a.ranks[1].refined_ns == -3'000'000);
}

TEST_CASE("align: ranks of one host share a clock: a tight bound") {
  TempDir d;
  SimJob j = cutrace_test::two_hosts_windows_apart();
  j.ranks[1].host = "node-a";
  j.ranks[1].mono_base = j.ranks[0].mono_base;
  j.ranks[1].realtime_err = 20'000;  // reading noise: 20 us
  Alignment a = align_traces(j.write_all(d.path));
  CHECK(a.ranks[1].refined_ns == -20'000);
  CHECK(a.ranks[1].residual_max_ns == 0);
}
