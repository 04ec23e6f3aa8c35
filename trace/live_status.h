// The live status of a recording process: DIR/.cutrace-status.<pid>, a few `key value` lines that
// the collector rewrites (write then rename) about once a second and removes when its trace is
// complete. `cutrace record` reads them for its status line, `cutrace status DIR` prints them.
// docs/FORMAT.md "Live status files" lists the keys.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cutrace {

inline constexpr char kLiveStatusPrefix[] = ".cutrace-status.";

struct LiveStatus {
  int64_t pid = 0;
  int64_t rank = -1;
  std::string host;
  std::string trace;           // the trace file's path
  int64_t started_ns = 0;      // CLOCK_REALTIME when the collector started
  int64_t updated_ns = 0;      // CLOCK_REALTIME of this update
  uint64_t records = 0;        // records written to the trace so far
  uint64_t ops_in_flight = 0;  // GPU operations launched and not yet complete
  uint64_t dropped = 0;        // records dropped (the buffer budget was in use)
  uint64_t bytes = 0;          // trace file bytes written
  bool capturing = false;      // a capture window is open
  bool finishing = false;      // the process is ending: the collector writes its last records
};

std::string live_status_path(const std::string& dir, int64_t pid);
std::string format_live_status(const LiveStatus& s);
// False when `text` lacks the pid or updated time (a torn or foreign file).
bool parse_live_status(const std::string& text, LiveStatus* out);
// Writes `s` to live_status_path(dir, s.pid) through a temporary file and rename(), so that a
// reader sees a whole file or none. Returns false on an I/O error (nothing else is affected).
bool write_live_status(const std::string& dir, const LiveStatus& s);
// The status files of dir that parse, by pid.
std::vector<LiveStatus> read_live_statuses(const std::string& dir);

}  // namespace cutrace
