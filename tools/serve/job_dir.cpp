#include "tools/serve/job_dir.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include "tools/common/format_util.h"
#include "trace/job_file.h"
#include "trace/live_status.h"
#include "trace/reader.h"

namespace cutrace::jobs {
namespace {

constexpr const char* kStatusNames[] = {"running", "completed", "failed", "stopped", "stopping"};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int64_t to_i64(std::string_view s) {
  char* end = nullptr;
  std::string tmp(s);
  long long v = std::strtoll(tmp.c_str(), &end, 10);
  return end && *end == 0 && !tmp.empty() ? v : 0;
}

int64_t mtime_ns(const struct stat& st) { return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec; }

int64_t now_realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string resolve(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

}  // namespace

const char* status_name(Status s) { return kStatusNames[static_cast<int>(s)]; }

bool parse_status(const std::string& name, Status* s) {
  for (int i = 0; i < int(std::size(kStatusNames)); ++i) {
    if (name == kStatusNames[i]) {
      *s = static_cast<Status>(i);
      return true;
    }
  }
  return false;
}

bool Filter::matches(const Job& j) const {
  if (!name.empty() && lower(j.name).find(lower(name)) == std::string::npos) return false;
  if (!status.empty() && std::find(status.begin(), status.end(), j.status) == status.end()) return false;
  return j.created_ns >= from_ns && j.created_ns <= to_ns;
}

std::string job_id(const std::string& rel_name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  for (unsigned char c : rel_name) h = (h ^ c) * 0x100000001b3ull;
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// Alive, and not a later process that reused the pid: the process must have started before
// the capture did (/proc/PID/stat starttime, in clock ticks since boot, against the trace's
// CLOCK_MONOTONIC start; a host that was suspended makes this err towards "not alive").
bool process_alive(int64_t pid, int64_t start_monotonic_ns) {
  if (pid <= 0 || pid > INT_MAX) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return true;  // no /proc: trust kill()
  size_t close = line.rfind(')');
  if (close == std::string::npos) return true;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  // Fields after the command: state is field 3, starttime field 22.
  for (int i = 3; i <= 22 && (rest >> field); ++i) {}
  long ticks = sysconf(_SC_CLK_TCK);
  if (field.empty() || ticks <= 0 || start_monotonic_ns <= 0) return true;
  int64_t started_ns = to_i64(field) * (1'000'000'000 / ticks);
  return started_ns <= start_monotonic_ns + 2'000'000'000;
}

bool Scanner::open(const std::string& root, std::string* err) {
  struct stat st {};
  if (stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *err = root + ": not a directory";
    return false;
  }
  root_ = resolve(root);
  if (root_.empty()) {
    *err = root + ": cannot be resolved";
    return false;
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  hostname_ = host;
  return true;
}

bool Scanner::inside(const std::string& path) const {
  std::string r = resolve(path);
  if (r.empty()) return false;
  if (r == root_) return true;
  std::string prefix = root_ == "/" ? root_ : root_ + "/";
  return r.compare(0, prefix.size(), prefix) == 0;
}

FileFacts Scanner::facts(const std::string& path, uint64_t size, int64_t mtime, bool need_end) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(path);
    if (it != cache_.end() && it->second.size == size && it->second.mtime_ns == mtime &&
        (it->second.has_end_info || !need_end))
      return it->second.facts;
  }
  FileFacts f;
  TraceReader r;
  if (!r.open(path, &f.error)) {
    if (f.error.empty()) f.error = "cannot be read";
  } else {
    f.id = runs::identify(r);
    f.start_monotonic_ns = r.meta_int("start_monotonic_ns", 0);
    if (need_end) {
      r.read([](const Record&) {});
      f.complete = r.status().complete;
      f.end_flags = r.status().end.flags;
      f.exit_status = int(r.meta_int("exit_status", -1));  // written at the end: known after the read
      f.signal = int(r.meta_int("signal", 0));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  cache_[path] = Cached{size, mtime, need_end, f};
  return f;
}

Status Scanner::file_status(const std::string& path, const FileFacts& f, int64_t mtime) const {
  if (f.complete) return (f.end_flags & trace::kEndSignal) || f.exit_status > 0 ? Status::Failed : Status::Completed;
  if (now_realtime_ns() - mtime < running_grace_ns) return Status::Running;
  return Status::Stopped;
}

// Why one file has its status, in words (the job list shows it beside the status).
std::string file_reason(Status s, const FileFacts& f, uint64_t size, bool merged, const LiveStatus* live) {
  if (!f.error.empty()) return f.error;
  switch (s) {
    case Status::Running:
      if (live)
        return "recording, " + tools::human_count(live->records) + " records (" + tools::human_bytes(live->bytes) +
               ") written so far";
      return "recording, " + tools::human_bytes(size) + " written so far";
    case Status::Stopping:
      return "ending: the last records are being written (" + tools::human_count(live ? live->records : 0) + " so far)";
    case Status::Completed: return "exit status " + std::to_string(f.exit_status < 0 ? 0 : f.exit_status);
    case Status::Failed:
      if (f.signal > 0) {
        const char* abbrev = sigabbrev_np(f.signal);
        return abbrev ? std::string("killed by SIG") + abbrev : "killed by signal " + std::to_string(f.signal);
      }
      if (f.end_flags & trace::kEndSignal) return "killed by a signal";
      return "exit status " + std::to_string(f.exit_status);
    case Status::Stopped:
      return merged ? "the trace ends without its end record"
                    : "no end record and no longer written: the process was killed without a flush "
                      "(SIGKILL, out of memory) or its machine stopped";
  }
  return "";
}

// Fills `job` from the traces directly in `dir` (merged job files there are jobs of their own);
// false when it holds none, or holds one that resolves outside the root (the whole job is then
// refused).
bool Scanner::scan_dir(const std::string& dir, const std::string& rel, Job* job) {
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (ends_with(name, ".cutrace")) names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<Entry> entries;
  for (const std::string& name : names) {
    std::string path = dir + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // as list_trace_files
    if (!inside(path)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (warned_.insert(path).second) {
        fprintf(stderr, "cutrace serve: refusing job %s: %s resolves outside %s\n", rel.c_str(), name.c_str(),
                root_.c_str());
      }
      return false;
    }
    if (job::is_job_file(path)) continue;
    entries.push_back({path, name, st});
  }
  return fill_job(dir, rel, entries, false, job);
}

// A merged job file (`cutrace merge -o`): its members are the ranks; none is running.
bool Scanner::scan_merged(const std::string& file, const std::string& rel, Job* job) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !inside(file)) return false;
  std::vector<Entry> entries;
  for (const std::string& m : list_trace_files(file)) entries.push_back({m, m.substr(m.find_last_of('/') + 1), st});
  if (!fill_job(file, rel, entries, true, job)) return false;
  job->size_bytes = uint64_t(st.st_size);
  return true;
}

bool Scanner::fill_job(const std::string& path, const std::string& rel, const std::vector<Entry>& entries, bool merged,
                       Job* job) {
  *job = Job{};
  job->name = rel;
  job->id = job_id(rel);
  job->path = path;
  bool any = false, running = false, failed = false, stopped = false;
  std::vector<std::pair<Status, std::string>> reasons;  // per file: "name: why"
  bool stopping = false;
  // The collectors' live status files, by pid: records so far, and whether a process is ending.
  std::map<int64_t, LiveStatus> live;
  if (!merged)
    for (LiveStatus& l : read_live_statuses(path)) live[l.pid] = l;
  std::set<std::string> hosts;
  std::vector<runs::Trace> ids;
  for (const Entry& e : entries) {
    const std::string& name = e.name;
    const struct stat& st = e.st;
    any = true;
    ++job->ranks;
    job->size_bytes += uint64_t(st.st_size);
    int64_t mt = mtime_ns(st);
    FileFacts f = facts(e.path, uint64_t(st.st_size), mt, false);
    Status s;
    if (!f.error.empty()) {
      job->problems.push_back(name + ": " + f.error);
      s = !merged && now_realtime_ns() - mt < running_grace_ns ? Status::Running : Status::Stopped;
    } else if (!merged && f.id.host == hostname_ && process_alive(f.id.pid, f.start_monotonic_ns)) {
      auto it = live.find(f.id.pid);
      s = it != live.end() && it->second.finishing ? Status::Stopping : Status::Running;  // no need to read it all
    } else {
      f = facts(e.path, uint64_t(st.st_size), mt, true);
      s = merged && !f.complete ? Status::Stopped : file_status(e.path, f, mt);
    }
    auto lv = live.find(f.id.pid);
    const LiveStatus* ls = lv != live.end() && f.error.empty() && lv->second.host == f.id.host ? &lv->second : nullptr;
    reasons.emplace_back(s, name + ": " + file_reason(s, f, uint64_t(st.st_size), merged, ls));
    if (f.error.empty()) ids.push_back(f.id);
    if (!f.id.host.empty()) hosts.insert(f.id.host);
    int64_t created = f.id.start_realtime_ns > 0 ? f.id.start_realtime_ns : mt;
    if (job->created_ns == 0 || created < job->created_ns) job->created_ns = created;
    running |= s == Status::Running;
    stopping |= s == Status::Stopping;
    failed |= s == Status::Failed;
    stopped |= s == Status::Stopped;
  }
  if (!any) return false;
  job->status = running    ? Status::Running
                : stopping ? Status::Stopping
                : failed   ? Status::Failed
                : stopped  ? Status::Stopped
                           : Status::Completed;
  // The files that make the job's status, at most three named.
  int shown = 0, more = 0;
  for (const auto& [s, why] : reasons) {
    if (s != job->status) continue;
    if (shown == 3) {
      ++more;
      continue;
    }
    job->reason += (shown++ ? "; " : "") + (entries.size() == 1 ? why.substr(why.find(": ") + 2) : why);
  }
  if (more) job->reason += "; and " + std::to_string(more) + " more";
  job->hosts.assign(hosts.begin(), hosts.end());
  job->notes = runs::mixed_runs(ids);
  return true;
}

std::vector<Job> Scanner::scan() {
  std::vector<Job> out;
  struct Item {
    std::string dir, rel;
    int depth;
  };
  std::vector<Item> todo{{root_, ".", 0}};
  while (!todo.empty()) {
    Item it = todo.back();
    todo.pop_back();
    Job job;
    if (scan_dir(it.dir, it.rel, &job)) out.push_back(std::move(job));
    if (it.depth >= max_depth) continue;
    DIR* d = opendir(it.dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string path = it.dir + "/" + name;
      std::string rel = it.rel == "." ? name : it.rel + "/" + name;
      struct stat st {};
      // lstat: a directory symlink is never followed, inside the root or out of it.
      if (lstat(path.c_str(), &st) != 0) continue;
      if (S_ISREG(st.st_mode) && ends_with(name, ".cutrace") && job::is_job_file(path)) {
        Job merged;
        if (scan_merged(path, rel, &merged)) out.push_back(std::move(merged));
        continue;
      }
      if (!S_ISDIR(st.st_mode)) continue;
      todo.push_back({path, rel, it.depth + 1});
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end(), [](const Job& a, const Job& b) {
    return a.created_ns != b.created_ns ? a.created_ns > b.created_ns : a.name < b.name;
  });
  std::lock_guard<std::mutex> lock(mu_);
  known_.clear();
  for (const Job& j : out) known_[j.id] = {j.path, j.name};
  return out;
}

bool Scanner::find(const std::string& id, Job* out) {
  std::pair<std::string, std::string> where;
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = known_.find(id);
      if (it != known_.end()) {
        where = it->second;
        break;
      }
    }
    if (attempt == 0) scan();
  }
  if (where.first.empty()) return false;
  // Re-check now: the directory may have been replaced by a symlink since the scan.
  struct stat st {};
  if (lstat(where.first.c_str(), &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) return false;
  if (!inside(where.first) || resolve(where.first) != where.first) return false;
  return S_ISREG(st.st_mode) ? scan_merged(where.first, where.second, out) : scan_dir(where.first, where.second, out);
}

}  // namespace cutrace::jobs
