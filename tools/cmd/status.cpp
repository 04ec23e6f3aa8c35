// cutrace status DIR [--json]: the live status of a job recording into DIR (started by
// `cutrace record` here or elsewhere), or, once no process records, what its trace files hold.
#include "tools/cmd/status.h"
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"
#include "trace/reader.h"

namespace cutrace::tools {

namespace {
std::string this_host() {
  char h[256] = {};
  if (gethostname(h, sizeof h - 1) != 0) return "";
  return h;
}
}  // namespace

LiveJob live_job(const std::string& dir) {
  LiveJob job;
  const std::string host = this_host();
  for (LiveStatus& s : read_live_statuses(dir)) {
    bool gone = s.host == host && kill(pid_t(s.pid), 0) != 0 && errno == ESRCH;
    (gone ? job.vanished : job.running).push_back(std::move(s));
  }
  return job;
}

std::string live_line(const std::vector<LiveStatus>& running) {
  uint64_t records = 0, ops = 0, dropped = 0, bytes = 0;
  for (const LiveStatus& s : running)
    records += s.records, ops += s.ops_in_flight, dropped += s.dropped, bytes += s.bytes;
  size_t n = running.size();
  return human_count(n) + (n == 1 ? " process, " : " processes, ") + human_count(records) + " records, " +
         human_count(ops) + " GPU ops in flight, " + human_count(dropped) + " dropped, " + human_bytes(bytes);
}

}  // namespace cutrace::tools

namespace {

using cutrace::LiveStatus;
using Json = nlohmann::ordered_json;

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Json status_json(const LiveStatus& s, int64_t now) {
  return {{"pid", s.pid},
          {"rank", s.rank},
          {"host", s.host},
          {"trace", s.trace},
          {"records", s.records},
          {"ops_in_flight", s.ops_in_flight},
          {"dropped", s.dropped},
          {"bytes", s.bytes},
          {"capturing", s.capturing},
          {"age_ns", now - s.updated_ns},
          {"elapsed_ns", s.updated_ns - s.started_ns}};
}

// The trace files of a job no process records any more: their records, drops and sizes.
struct Finished {
  size_t files = 0, complete = 0;
  uint64_t records = 0, dropped = 0, bytes = 0;
};
Finished finished_traces(const std::string& dir) {
  Finished f;
  for (const std::string& path : cutrace::list_trace_files(dir)) {
    cutrace::TraceReader r;
    std::string err;
    if (!r.open(path, &err)) continue;
    r.read([](const cutrace::Record&) {});
    const cutrace::ReadStatus& st = r.status();
    ++f.files;
    f.complete += st.complete;
    f.records += st.records;
    f.dropped += std::max(st.complete ? st.end.dropped : 0, st.dropped);
    struct stat sb {};
    if (stat(path.c_str(), &sb) == 0) f.bytes += uint64_t(sb.st_size);
  }
  return f;
}

int run_status(const std::string& dir, bool json) {
  namespace t = cutrace::tools;
  struct stat sb {};
  if (stat(dir.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    std::fprintf(stderr, "cutrace status: %s is not a directory\n", t::printable(dir).c_str());
    return 2;
  }
  const int64_t now = realtime_ns();
  t::LiveJob job = t::live_job(dir);
  Finished fin;
  if (job.running.empty()) fin = finished_traces(dir);
  const char* state = !job.running.empty() ? "running" : fin.files ? "finished" : "none";
  if (json) {
    Json j;
    j["state"] = state;
    j["processes"] = Json::array();
    for (const LiveStatus& s : job.running) j["processes"].push_back(status_json(s, now));
    j["vanished"] = Json::array();
    for (const LiveStatus& s : job.vanished) j["vanished"].push_back(status_json(s, now));
    if (job.running.empty())
      j["traces"] = {{"files", fin.files},
                     {"complete", fin.complete},
                     {"records", fin.records},
                     {"dropped", fin.dropped},
                     {"bytes", fin.bytes}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (!job.running.empty()) {
    std::printf("running: %s\n", t::live_line(job.running).c_str());
    for (const LiveStatus& s : job.running)
      std::printf("  rank %lld pid %lld on %s: %s records, %s GPU ops in flight, %s dropped, %s%s, updated %s ago\n",
                  (long long)s.rank, (long long)s.pid, t::printable(s.host).c_str(), t::human_count(s.records).c_str(),
                  t::human_count(s.ops_in_flight).c_str(), t::human_count(s.dropped).c_str(),
                  t::human_bytes(s.bytes).c_str(), s.capturing ? "" : " (no capture window open)",
                  t::human_ns(now - s.updated_ns).c_str());
  } else if (fin.files) {
    std::printf("finished: %zu trace file%s (%zu complete), %s records, %s dropped, %s\n", fin.files,
                fin.files == 1 ? "" : "s", fin.complete, t::human_count(fin.records).c_str(),
                t::human_count(fin.dropped).c_str(), t::human_bytes(fin.bytes).c_str());
  } else {
    std::printf("no job: nothing records into %s and it holds no trace file\n", t::printable(dir).c_str());
  }
  for (const LiveStatus& s : job.vanished)
    std::printf("  rank %lld pid %lld ended without completing its trace (killed?): last update %s ago\n",
                (long long)s.rank, (long long)s.pid, t::human_ns(now - s.updated_ns).c_str());
  return 0;
}

}  // namespace

void add_status_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("status", "What a job recording into DIR is doing now, or that it finished");
  sub->add_option("dir", *dir, "The job's output directory (cutrace record -o DIR)")->required();
  sub->add_flag("--json", *json, "One JSON document (docs/USAGE.md lists its keys)");
  sub->callback([dir, json] {
    if (int rc = run_status(*dir, *json)) throw CLI::RuntimeError(rc);
  });
}
