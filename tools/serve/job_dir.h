// The recorded jobs under one directory, for `cutrace serve`. A job is a directory holding
// `*.cutrace` files (what `cutrace record -o DIR` writes), or the root itself when it holds
// traces, or a merged job file (`cutrace merge -o`), whose members are its ranks. Nothing outside the root is ever
// listed: directory symlinks are not followed, and a job with a trace file that resolves outside the root (a symlink
// out) is refused, not listed. Its status comes from the files (docs/REPORT.md, "cutrace serve"):
//   completed  every rank's End record is clean
//   failed     some rank's End record was written from a fatal-signal handler, or some rank
//              exited with a non-zero status (meta exit_status)
//   running    some rank has no End record yet and its process is alive on this host (or the
//              file changed in the last few seconds)
//   stopped    some rank has no End record and its process is gone (killed, crashed hard)
#pragma once
#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tools/analysis/runs.h"

namespace cutrace::jobs {

enum class Status { Running, Completed, Failed, Stopped, Stopping };
const char* status_name(Status s);  // "running", "completed", "failed", "stopped", "stopping"
bool parse_status(const std::string& name, Status* s);

struct Job {
  std::string id;          // opaque, URL-safe, stable for a path: 16 hex digits
  std::string name;        // path relative to the root ("." for the root itself)
  std::string path;        // absolute path of the job directory or merged file (inside the root)
  int64_t created_ns = 0;  // CLOCK_REALTIME of the earliest capture start (mtime if unknown)
  Status status = Status::Completed;
  std::string reason;  // why that status, in words: "exit status 3", "rank 1: SIGTERM", ...
  int ranks = 0;       // trace files
  uint64_t size_bytes = 0;
  std::vector<std::string> hosts;
  std::vector<std::string> problems;  // ranks that could not be read: "file: reason"
  std::vector<std::string> notes;     // runs::mixed_runs: the directory holds separate runs
};

struct Filter {
  std::string name;             // case-insensitive substring of the name; empty: any
  std::vector<Status> status;   // empty: any
  int64_t from_ns = INT64_MIN;  // created_ns in [from_ns, to_ns]
  int64_t to_ns = INT64_MAX;
  bool matches(const Job& j) const;
};

// Per-file facts that need a full read (the End record is at the end), cached by size and mtime.
struct FileFacts {
  bool complete = false;
  uint32_t end_flags = 0;
  int exit_status = -1;  // meta exit_status; -1: not recorded
  int signal = 0;        // meta signal: the fatal signal the trace was flushed for; 0: none
  runs::Trace id;        // host, pid, start time, and what tells runs apart
  int64_t start_monotonic_ns = 0;
  std::string error;  // could not be opened
};

class Scanner {
 public:
  // `root` must be an existing directory; it is resolved (realpath) once.
  bool open(const std::string& root, std::string* err);
  const std::string& root() const { return root_; }
  // Walks the root (directories up to `max_depth` below it) and returns every job, newest first.
  std::vector<Job> scan();
  // The job with this id, re-checked now (it must still exist and lie inside the root).
  bool find(const std::string& id, Job* out);
  // True when `path` (resolved) lies inside the root.
  bool inside(const std::string& path) const;

  int max_depth = 4;
  int64_t running_grace_ns = 5'000'000'000;  // a file touched this recently counts as running

 private:
  struct Entry {
    std::string path, name;  // a trace file, or a member FILE/<member> of a merged job file
    struct stat st;          // the file's (the merged file's)
  };
  bool scan_dir(const std::string& dir, const std::string& rel, Job* job);
  bool scan_merged(const std::string& file, const std::string& rel, Job* job);
  bool fill_job(const std::string& path, const std::string& rel, const std::vector<Entry>& entries, bool merged,
                Job* job);
  Status file_status(const std::string& path, const FileFacts& f, int64_t mtime_ns) const;
  FileFacts facts(const std::string& path, uint64_t size, int64_t mtime_ns, bool need_end);

  std::string root_;
  std::string hostname_;
  struct Cached {
    uint64_t size;
    int64_t mtime_ns;
    bool has_end_info;
    FileFacts facts;
  };
  std::mutex mu_;
  std::map<std::string, Cached> cache_;
  std::map<std::string, std::pair<std::string, std::string>> known_;  // id -> (path, name)
  std::set<std::string> warned_;                                      // refused trace paths already reported on stderr
};

// Exposed for tests.
std::string job_id(const std::string& rel_name);
bool process_alive(int64_t pid, int64_t start_monotonic_ns);

}  // namespace cutrace::jobs
