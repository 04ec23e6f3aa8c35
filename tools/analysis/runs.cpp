#include "tools/analysis/runs.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "tools/common/format_util.h"  // fmt, header-only

#include "trace/reader.h"

namespace cutrace::runs {
namespace {

bool has_launcher_rank(const Trace& t) { return !t.launcher.empty() && t.launcher != "none" && t.rank >= 0; }

// "pid 5016 on vm, started 02:41:07" (local time; the date too when the traces span days).
std::string who(const Trace& t, bool with_date) {
  std::string s = ::fmt::format("pid {}", t.pid);
  if (!t.host.empty()) s += " on " + t.host;
  if (t.start_realtime_ns > 0) {
    time_t sec = time_t(t.start_realtime_ns / 1000000000);
    struct tm tm {};
    char buf[32];
    if (localtime_r(&sec, &tm) && strftime(buf, sizeof buf, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm))
      s += ::fmt::format(", started {}", buf);
  }
  return s;
}

std::string list(const std::vector<const Trace*>& ts, bool with_date) {
  constexpr size_t kShown = 4;
  std::string s;
  for (size_t i = 0; i < ts.size() && i < kShown; ++i) s += (i ? "; " : "") + who(*ts[i], with_date);
  if (ts.size() > kShown) s += ::fmt::format("; {} more", ts.size() - kShown);
  return s;
}

constexpr const char* kAdvice =
    "the figures add them up as one job's processes (record each run into its own directory)";

}  // namespace

Trace identify(const TraceReader& r) {
  Trace t;
  t.file = r.path();
  t.host = std::string(r.meta("host"));
  t.launcher = std::string(r.meta("launcher"));
  t.session = std::string(r.meta("session"));
  t.pid = r.meta_int("pid", 0);
  t.ppid = r.meta_int("ppid", 0);
  t.rank = r.meta_int("rank", -1);
  t.world_size = r.meta_int("world_size", -1);
  t.start_realtime_ns = r.meta_int("start_realtime_ns", 0);
  return t;
}

std::vector<std::string> mixed_runs(const std::vector<Trace>& traces) {
  std::vector<std::string> notes;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const Trace& t : traces)
    if (t.start_realtime_ns > 0) lo = std::min(lo, t.start_realtime_ns), hi = std::max(hi, t.start_realtime_ns);
  const bool with_date = lo != INT64_MAX && hi - lo >= 86400 * int64_t(1000000000);

  auto by_start = [](const Trace* a, const Trace* b) {
    return a->start_realtime_ns != b->start_realtime_ns ? a->start_realtime_ns < b->start_realtime_ns
                                                        : a->file < b->file;
  };
  std::set<std::pair<std::string, int64_t>> processes;  // (host, pid) of every trace
  for (const Trace& t : traces) processes.insert({t.host, t.pid});
  auto subprocess = [&](const Trace& t) { return t.ppid > 0 && processes.count({t.host, t.ppid}); };
  std::map<int64_t, std::vector<const Trace*>> ranks;
  std::set<int64_t> sizes;
  std::map<std::string, std::vector<const Trace*>> sessions;  // of traces without a launcher rank
  for (const Trace& t : traces) {
    if (has_launcher_rank(t)) {
      if (!subprocess(t)) ranks[t.rank].push_back(&t);
      if (t.world_size > 0) sizes.insert(t.world_size);
    } else {
      sessions[t.session].push_back(&t);
    }
  }
  for (auto& [rank, ts] : ranks) {
    if (ts.size() < 2) continue;
    std::sort(ts.begin(), ts.end(), by_start);
    notes.push_back(::fmt::format("{} traces of rank {} ({}): more than one run of a job, or restarted workers; {}",
                                  ts.size(), rank, list(ts, with_date), kAdvice));
  }
  if (sizes.size() > 1) {
    std::string s;
    for (int64_t n : sizes) s += (s.empty() ? "" : ", ") + std::to_string(n);
    notes.push_back(::fmt::format("traces of jobs of different sizes (world size {}); {}", s, kAdvice));
  }
  if (sessions.size() > 1) {
    std::vector<std::vector<const Trace*>> groups;
    for (auto& [id, ts] : sessions) {
      std::sort(ts.begin(), ts.end(), by_start);
      groups.push_back(ts);
    }
    std::sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) { return by_start(a[0], b[0]); });
    std::string s;
    for (size_t i = 0; i < groups.size(); ++i)
      s += ::fmt::format("{}run {}: {} trace{} ({})", i ? "; " : "", i + 1, groups[i].size(),
                         groups[i].size() == 1 ? "" : "s", list(groups[i], with_date));
    notes.push_back(::fmt::format("traces of {} separate runs ({}); {}", groups.size(), s, kAdvice));
  }
  return notes;
}

}  // namespace cutrace::runs
