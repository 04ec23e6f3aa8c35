// tools/jobs: what `cutrace serve` lists. Job status from the files, the directory walk, and the
// containment rules (nothing outside the root: no directory symlink followed, a job with a trace
// that resolves outside refused, ids that no path can forge).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <doctest/doctest.h>

#include "test/unit/temp_dir.h"
#include "tools/serve/job_dir.h"
#include "trace/live_status.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

struct JobsTempDir : cutrace_test::TempDir {
  explicit JobsTempDir(const char* what = "root") : cutrace_test::TempDir(std::string("cutrace_jobs_") + what) {}
};

int64_t mono_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string this_host() {
  char h[256] = {};
  gethostname(h, sizeof h - 1);
  return h;
}

enum class Ending { Clean, Signal, None, Exit1, Sigterm };

// One rank file as the collector writes it: metadata, one kernel name, then an End (or none).
void write_trace(const std::string& path, Ending end, const std::string& host, int64_t pid, int64_t start_realtime_ns,
                 int64_t start_mono_ns = 1, const std::string& session = "") {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  TraceWriter w;
  std::string err;
  REQUIRE_MESSAGE(w.open(path, &err), err);
  w.meta("host", host);
  w.meta("pid", std::to_string(pid));
  w.meta("start_realtime_ns", std::to_string(start_realtime_ns));
  w.meta("start_monotonic_ns", std::to_string(start_mono_ns));
  if (!session.empty()) w.meta("session", session);
  w.intern("k_step");
  if (end == Ending::Clean) w.meta("exit_status", "0");
  if (end == Ending::Exit1) w.meta("exit_status", "1");  // as the collector writes it, at the end
  if (end == Ending::Clean || end == Ending::Exit1) REQUIRE(w.close(0, trace::kEndClean));
  if (end == Ending::Sigterm) w.meta("signal", "15");  // as the collector writes it, at the end
  if (end == Ending::Signal || end == Ending::Sigterm) REQUIRE(w.close(0, trace::kEndSignal));
  // Ending::None: the destructor flushes and closes without an End record (killed process).
}

void age(const std::string& path, int seconds) {
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  timespec t[2] = {st.st_atim, st.st_mtim};
  t[0].tv_sec -= seconds;
  t[1].tv_sec -= seconds;
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), t, 0) == 0);
}

const jobs::Job* by_name(const std::vector<jobs::Job>& all, const std::string& name) {
  for (const jobs::Job& j : all) {
    if (j.name == name) return &j;
  }
  return nullptr;
}

// A pid that is certainly not running: a child that has exited and been reaped.
int64_t dead_pid() {
  pid_t p = fork();
  if (p == 0) _exit(0);
  int st = 0;
  waitpid(p, &st, 0);
  return p;
}

}  // namespace

TEST_CASE("jobs: status comes from the End record, the process and the file's age") {
  JobsTempDir root;
  const std::string host = this_host();
  const int64_t t0 = 1'700'000'000'000'000'000;
  write_trace(root.path + "/done/h.rank0.pid1.cutrace", Ending::Clean, host, dead_pid(), t0);
  write_trace(root.path + "/done/h.rank1.pid2.cutrace", Ending::Clean, host, dead_pid(), t0 + 5);
  write_trace(root.path + "/crashed/h.rank0.pid3.cutrace", Ending::Clean, host, dead_pid(), t0);
  write_trace(root.path + "/crashed/h.rank1.pid4.cutrace", Ending::Signal, host, dead_pid(), t0);
  // exit(1) on one rank: a clean End record, but the job failed (not shown as completed).
  write_trace(root.path + "/exit1/h.rank0.pid10.cutrace", Ending::Clean, host, dead_pid(), t0);
  write_trace(root.path + "/exit1/h.rank1.pid11.cutrace", Ending::Exit1, host, dead_pid(), t0);
  write_trace(root.path + "/killed/h.rank0.pid5.cutrace", Ending::None, host, dead_pid(), t0);
  age(root.path + "/killed/h.rank0.pid5.cutrace", 3600);
  // This very process, with a capture start after its own start: alive.
  write_trace(root.path + "/live/h.rank0.pid6.cutrace", Ending::None, host, getpid(), t0, mono_now());
  age(root.path + "/live/h.rank0.pid6.cutrace", 3600);
  // Another host's process cannot be asked: a file written just now counts as running...
  write_trace(root.path + "/remote_fresh/h.rank0.pid7.cutrace", Ending::None, "elsewhere", 1, t0);
  // ... and one untouched for an hour as stopped.
  write_trace(root.path + "/remote_old/h.rank0.pid8.cutrace", Ending::None, "elsewhere", 1, t0);
  age(root.path + "/remote_old/h.rank0.pid8.cutrace", 3600);
  // Our pid, but the capture started before this process did: a reused pid, not the job's.
  write_trace(root.path + "/reused/h.rank0.pid9.cutrace", Ending::None, host, getpid(), t0, 1000);
  age(root.path + "/reused/h.rank0.pid9.cutrace", 3600);

  jobs::Scanner sc;
  std::string err;
  REQUIRE_MESSAGE(sc.open(root.path, &err), err);
  std::vector<jobs::Job> all = sc.scan();
  auto status = [&](const char* name) {
    const jobs::Job* j = by_name(all, name);
    REQUIRE_MESSAGE(j != nullptr, name);
    return std::string(jobs::status_name(j->status));
  };
  CHECK(status("done") == "completed");
  CHECK(status("crashed") == "failed");
  CHECK(status("exit1") == "failed");
  CHECK(status("killed") == "stopped");
  CHECK(status("live") == "running");
  CHECK(status("remote_fresh") == "running");
  CHECK(status("remote_old") == "stopped");
  CHECK(status("reused") == "stopped");
  const jobs::Job* done = by_name(all, "done");
  CHECK(done->ranks == 2);
  CHECK(done->created_ns == t0);
  CHECK(done->hosts == std::vector<std::string>{host});
  uint64_t bytes = std::filesystem::file_size(root.path + "/done/h.rank0.pid1.cutrace") +
                   std::filesystem::file_size(root.path + "/done/h.rank1.pid2.cutrace");
  CHECK(done->size_bytes == bytes);
}

TEST_CASE("jobs: each status says why: exit status, the signal by name, the file that is still written") {
  JobsTempDir root;
  const std::string host = this_host();
  const int64_t t0 = 1'700'000'000'000'000'000;
  write_trace(root.path + "/done/h.rank0.pid1.cutrace", Ending::Clean, host, dead_pid(), t0);
  write_trace(root.path + "/term/h.rank0.pid2.cutrace", Ending::Clean, host, dead_pid(), t0);
  write_trace(root.path + "/term/h.rank1.pid3.cutrace", Ending::Sigterm, host, dead_pid(), t0);
  write_trace(root.path + "/exit1/h.rank0.pid4.cutrace", Ending::Exit1, host, dead_pid(), t0);
  write_trace(root.path + "/killed/h.rank0.pid5.cutrace", Ending::None, host, dead_pid(), t0);
  age(root.path + "/killed/h.rank0.pid5.cutrace", 3600);
  write_trace(root.path + "/live/h.rank0.pid6.cutrace", Ending::None, host, getpid(), t0, mono_now());
  jobs::Scanner sc;
  std::string err;
  REQUIRE_MESSAGE(sc.open(root.path, &err), err);
  std::vector<jobs::Job> all = sc.scan();
  auto reason = [&](const char* name) {
    const jobs::Job* j = by_name(all, name);
    REQUIRE_MESSAGE(j != nullptr, name);
    return j->reason;
  };
  CHECK(reason("done") == "exit status 0");
  CHECK(reason("term") == "h.rank1.pid3.cutrace: killed by SIGTERM");  // only the rank that failed
  CHECK(reason("exit1") == "exit status 1");
  CHECK(reason("killed").rfind("no end record and no longer written", 0) == 0);
  const std::string live = reason("live");
  CHECK(live.rfind("recording, ", 0) == 0);
  CHECK(live.find("written so far") != std::string::npos);
}

TEST_CASE("jobs: a live process reads running with its records so far, stopping once it is ending") {
  JobsTempDir root;
  const std::string host = this_host();
  const int64_t t0 = 1'700'000'000'000'000'000;
  for (const char* job : {"recording", "ending"})
    write_trace(root.path + "/" + job + "/h.rank0.pid6.cutrace", Ending::None, host, getpid(), t0, mono_now());
  LiveStatus l;
  l.pid = getpid(), l.host = host, l.updated_ns = t0, l.records = 12345, l.bytes = 3 << 20;
  REQUIRE(write_live_status(root.path + "/recording", l));
  l.finishing = true;
  REQUIRE(write_live_status(root.path + "/ending", l));
  jobs::Scanner sc;
  std::string err;
  REQUIRE_MESSAGE(sc.open(root.path, &err), err);
  std::vector<jobs::Job> all = sc.scan();
  const jobs::Job* rec = by_name(all, "recording");
  const jobs::Job* end = by_name(all, "ending");
  REQUIRE(rec);
  REQUIRE(end);
  CHECK(rec->status == jobs::Status::Running);
  CHECK(rec->reason == "recording, 12,345 records (3.00 MiB) written so far");
  CHECK(end->status == jobs::Status::Stopping);
  CHECK(std::string(jobs::status_name(end->status)) == "stopping");
  CHECK(end->reason == "ending: the last records are being written (12,345 so far)");
  jobs::Status st;
  CHECK(jobs::parse_status("stopping", &st));
  CHECK(st == jobs::Status::Stopping);
}

TEST_CASE("jobs: a file that is not a trace makes its job stopped with the reason, not an error") {
  JobsTempDir root;
  std::filesystem::create_directories(root.path + "/junk");
  std::ofstream(root.path + "/junk/x.cutrace") << "not a trace at all";
  age(root.path + "/junk/x.cutrace", 3600);
  jobs::Scanner sc;
  std::string err;
  REQUIRE(sc.open(root.path, &err));
  std::vector<jobs::Job> all = sc.scan();
  const jobs::Job* j = by_name(all, "junk");
  REQUIRE(j != nullptr);
  CHECK(j->status == jobs::Status::Stopped);
  REQUIRE(j->problems.size() == 1);
  CHECK(j->problems[0].rfind("x.cutrace: ", 0) == 0);
}

TEST_CASE("jobs: the walk finds the root's own traces and nested job directories") {
  JobsTempDir root;
  const std::string host = this_host();
  write_trace(root.path + "/a.rank0.pid1.cutrace", Ending::Clean, host, 1, 3);
  write_trace(root.path + "/exp1/run_a/h.rank0.pid1.cutrace", Ending::Clean, host, 1, 2);
  write_trace(root.path + "/exp1/run_b/h.rank0.pid1.cutrace", Ending::Clean, host, 1, 1);
  std::filesystem::create_directories(root.path + "/empty/deeper");
  jobs::Scanner sc;
  std::string err;
  REQUIRE(sc.open(root.path, &err));
  std::vector<jobs::Job> all = sc.scan();
  std::vector<std::string> names;
  for (const jobs::Job& j : all) names.push_back(j.name);
  CHECK(names == std::vector<std::string>{".", "exp1/run_a", "exp1/run_b"});  // newest first
  std::regex hex16("[0-9a-f]{16}");
  for (const jobs::Job& j : all) {
    CHECK(std::regex_match(j.id, hex16));
    CHECK(j.id == jobs::job_id(j.name));
    jobs::Job again;
    CHECK(sc.find(j.id, &again));
    CHECK(again.path == j.path);
  }
  jobs::Job none;
  CHECK_FALSE(sc.find("0123456789abcdef", &none));
  CHECK_FALSE(sc.find("../../etc", &none));
  CHECK_FALSE(sc.find("", &none));
}

TEST_CASE("jobs: symlinks never lead out of the root") {
  JobsTempDir root, outside("outside");
  const std::string host = this_host();
  write_trace(outside.path + "/secret/h.rank0.pid1.cutrace", Ending::Clean, host, 1, 1);
  write_trace(root.path + "/good/h.rank0.pid1.cutrace", Ending::Clean, host, 1, 1);
  // A directory symlink out of the root: not followed.
  REQUIRE(symlink((outside.path + "/secret").c_str(), (root.path + "/linked_dir").c_str()) == 0);
  // A trace symlink out of the root: the job holding it is refused as a whole.
  std::filesystem::create_directories(root.path + "/mixed");
  write_trace(root.path + "/mixed/h.rank0.pid1.cutrace", Ending::Clean, host, 1, 1);
  REQUIRE(symlink((outside.path + "/secret/h.rank0.pid1.cutrace").c_str(),
                  (root.path + "/mixed/h.rank1.pid2.cutrace").c_str()) == 0);
  // A directory symlink inside the root is not followed either (no loops, one name per job).
  REQUIRE(symlink((root.path + "/good").c_str(), (root.path + "/alias").c_str()) == 0);
  // A trace symlink to a file inside the root is fine.
  std::filesystem::create_directories(root.path + "/inner_link");
  REQUIRE(symlink((root.path + "/good/h.rank0.pid1.cutrace").c_str(),
                  (root.path + "/inner_link/h.rank0.pid1.cutrace").c_str()) == 0);

  jobs::Scanner sc;
  std::string err;
  REQUIRE(sc.open(root.path, &err));
  std::vector<jobs::Job> all = sc.scan();
  std::vector<std::string> names;
  for (const jobs::Job& j : all) names.push_back(j.name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"good", "inner_link"});
  jobs::Job j;
  CHECK_FALSE(sc.find(jobs::job_id("linked_dir"), &j));
  CHECK_FALSE(sc.find(jobs::job_id("mixed"), &j));
  CHECK_FALSE(sc.find(jobs::job_id("alias"), &j));
  CHECK_FALSE(sc.inside(outside.path + "/secret/h.rank0.pid1.cutrace"));
  CHECK_FALSE(sc.inside(root.path + "/../" + std::filesystem::path(outside.path).filename().string()));
  CHECK(sc.inside(root.path + "/good/../good/h.rank0.pid1.cutrace"));

  SUBCASE("a job directory swapped for a symlink after the scan is refused") {
    REQUIRE(sc.find(jobs::job_id("good"), &j));
    std::filesystem::rename(root.path + "/good", root.path + "/good_moved");
    REQUIRE(symlink((outside.path + "/secret").c_str(), (root.path + "/good").c_str()) == 0);
    CHECK_FALSE(sc.find(jobs::job_id("good"), &j));
  }
  SUBCASE("a trace swapped for a symlink out after the scan makes the job refused") {
    REQUIRE(sc.find(jobs::job_id("good"), &j));
    std::filesystem::remove(root.path + "/good/h.rank0.pid1.cutrace");
    REQUIRE(symlink((outside.path + "/secret/h.rank0.pid1.cutrace").c_str(),
                    (root.path + "/good/h.rank0.pid1.cutrace").c_str()) == 0);
    CHECK_FALSE(sc.find(jobs::job_id("good"), &j));
  }
}

TEST_CASE("jobs: the filter matches name substrings without case, statuses and a time range") {
  jobs::Job a;
  a.name = "exp1/Resnet_run";
  a.status = jobs::Status::Running;
  a.created_ns = 2'000;
  jobs::Filter f;
  CHECK(f.matches(a));
  f.name = "RESNET";
  CHECK(f.matches(a));
  f.name = "bert";
  CHECK_FALSE(f.matches(a));
  f = jobs::Filter{};
  f.status = {jobs::Status::Completed, jobs::Status::Failed};
  CHECK_FALSE(f.matches(a));
  f.status.push_back(jobs::Status::Running);
  CHECK(f.matches(a));
  f = jobs::Filter{};
  f.from_ns = 1'000;
  f.to_ns = 2'000;
  CHECK(f.matches(a));
  f.from_ns = 2'001;
  CHECK_FALSE(f.matches(a));
  jobs::Status s;
  CHECK(jobs::parse_status("stopped", &s));
  CHECK(s == jobs::Status::Stopped);
  CHECK_FALSE(jobs::parse_status("Stopped;rm -rf /", &s));
}

// Two `cutrace record -o DIR` runs in one directory are not listed as one job without a word: the
// job list carries the note that the summary and the report give.
TEST_CASE("jobs: a directory holding separate runs carries the note, one run none") {
  JobsTempDir root;
  const int64_t t0 = 1'700'000'000'000'000'000;
  // One run, two CUDA processes of it (same session): no note.
  write_trace(root.path + "/one/h.rank0.pid1.cutrace", Ending::Clean, "h", dead_pid(), t0, 1, "aaaa");
  write_trace(root.path + "/one/h.rank0.pid2.cutrace", Ending::Clean, "h", dead_pid(), t0 + 5, 1, "aaaa");
  // Two runs.
  write_trace(root.path + "/two/h.rank0.pid3.cutrace", Ending::Clean, "h", dead_pid(), t0, 1, "aaaa");
  write_trace(root.path + "/two/h.rank0.pid4.cutrace", Ending::Clean, "h", dead_pid(), t0 + 60, 1, "bbbb");

  jobs::Scanner sc;
  std::string err;
  REQUIRE_MESSAGE(sc.open(root.path, &err), err);
  std::vector<jobs::Job> all = sc.scan();
  const jobs::Job* one = by_name(all, "one");
  const jobs::Job* two = by_name(all, "two");
  REQUIRE(one);
  REQUIRE(two);
  CHECK(one->notes.empty());
  REQUIRE(two->notes.size() == 1);
  CHECK(two->notes[0].find("2 separate runs") != std::string::npos);
  // find() re-reads the directory: the same note.
  jobs::Job again;
  REQUIRE(sc.find(two->id, &again));
  CHECK(again.notes == two->notes);
}
