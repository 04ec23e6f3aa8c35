// tools/runs: the notes that say a directory holds more than one run (two `cutrace record`s into
// one directory, two jobs, restarted workers), and the layouts of one run that must stay quiet
// (a job and its CUDA subprocesses; ranks of several nodes, each node under its own record).
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tools/analysis/runs.h"

using cutrace::runs::mixed_runs;
using cutrace::runs::Trace;

namespace {

constexpr int64_t kT0 = 1796079134'000000000;  // 2026-12-01, an instant of a run

Trace unranked(int64_t pid, const std::string& session, int64_t start_s = 0) {
  Trace t;
  t.file = "vm.rank0.pid" + std::to_string(pid) + ".cutrace";
  t.host = "vm";
  t.launcher = "none";
  t.session = session;
  t.pid = pid;
  t.rank = 0;
  t.world_size = 1;
  t.start_realtime_ns = kT0 + start_s * 1'000'000'000;
  return t;
}

Trace ranked(int64_t pid, int64_t rank, int64_t world, const std::string& host, const std::string& session,
             int64_t start_s = 0) {
  Trace t = unranked(pid, session, start_s);
  t.launcher = "torchrun";
  t.host = host;
  t.rank = rank;
  t.world_size = world;
  return t;
}

bool any_has(const std::vector<std::string>& notes, const std::string& what) {
  for (const std::string& n : notes)
    if (n.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("runs: one run's processes without launcher ranks (a job and its CUDA subprocesses) are one run") {
  CHECK(mixed_runs({unranked(10, "a"), unranked(11, "a"), unranked(12, "a")}).empty());
  CHECK(mixed_runs({unranked(10, "a")}).empty());
  CHECK(mixed_runs({}).empty());
}

TEST_CASE("runs: traces without a session (LD_PRELOAD alone, or older traces) are not guessed apart") {
  CHECK(mixed_runs({unranked(10, ""), unranked(11, "")}).empty());
}

TEST_CASE("runs: two cutrace record runs into one directory are noted, in the order they started") {
  std::vector<std::string> n = mixed_runs({unranked(20, "bbbb", 5), unranked(10, "aaaa", 0), unranked(11, "aaaa", 1)});
  REQUIRE(n.size() == 1);
  CHECK(any_has(n, "traces of 2 separate runs"));
  CHECK(any_has(n, "run 1: 2 traces (pid 10 on vm"));
  CHECK(any_has(n, "run 2: 1 trace (pid 20 on vm"));
  CHECK(any_has(n, "record each run into its own directory"));
}

TEST_CASE("runs: a recorded run beside an LD_PRELOAD run (no session) is two runs") {
  std::vector<std::string> n = mixed_runs({unranked(10, "aaaa"), unranked(30, "")});
  REQUIRE(n.size() == 1);
  CHECK(any_has(n, "traces of 2 separate runs"));
}

TEST_CASE("runs: ranks of a multi-node job, each node under its own cutrace record, are one run") {
  std::vector<Trace> t = {ranked(10, 0, 4, "node-a", "s1"), ranked(11, 1, 4, "node-a", "s1"),
                          ranked(20, 2, 4, "node-b", "s2"), ranked(21, 3, 4, "node-b", "s2")};
  CHECK(mixed_runs(t).empty());
  // ... with torchrun's parent, which has no launcher rank, in one of the sessions: still one run.
  t.push_back(unranked(9, "s1"));
  CHECK(mixed_runs(t).empty());
}

TEST_CASE("runs: a launcher rank in two traces (restarted workers, or two jobs) is noted with both processes") {
  std::vector<std::string> n = mixed_runs({ranked(10, 0, 2, "vm", "s"), ranked(11, 1, 2, "vm", "s"),
                                           ranked(40, 0, 2, "vm", "s", 30), ranked(41, 1, 2, "vm", "s", 30)});
  REQUIRE(n.size() == 2);
  CHECK(any_has(n, "2 traces of rank 0 (pid 10 on vm, started "));
  CHECK(any_has(n, "; pid 40 on vm, started "));
  CHECK(any_has(n, "2 traces of rank 1"));
}

TEST_CASE("runs: a worker's CUDA subprocess, which inherits its rank variables, is not a second rank 0") {
  Trace worker = ranked(10, 0, 1, "vm", "s");
  Trace child = ranked(11, 0, 1, "vm", "s", 2);
  child.ppid = 10;
  CHECK(mixed_runs({worker, child}).empty());
  // The same pid on another host is another process: that is a second rank 0.
  child.host = "other";
  CHECK(mixed_runs({worker, child}).size() == 1);
}

TEST_CASE("runs: jobs of different world sizes are noted") {
  std::vector<std::string> n = mixed_runs({ranked(10, 0, 2, "vm", "s"), ranked(11, 1, 2, "vm", "s"),
                                           ranked(20, 2, 4, "vm", "t"), ranked(21, 3, 4, "vm", "t")});
  REQUIRE(n.size() == 1);
  CHECK(any_has(n, "world size 2, 4"));
}

TEST_CASE("runs: a long list of processes is cut after four") {
  std::vector<Trace> t;
  for (int i = 0; i < 7; ++i) t.push_back(ranked(100 + i, 0, 1, "vm", "s", i));
  std::vector<std::string> n = mixed_runs(t);
  REQUIRE(n.size() == 1);
  CHECK(any_has(n, "7 traces of rank 0"));
  CHECK(any_has(n, "; 3 more)"));
  CHECK_FALSE(any_has(n, "pid 104"));
}
