// What a recording job is doing, from the live status files of its processes
// (trace/live_status.h): `cutrace status DIR` and the status line of `cutrace record`.
#pragma once
#include <string>
#include <vector>
#include "trace/live_status.h"

namespace cutrace::tools {

// The processes of dir that are recording now: their status files, less those of processes
// of this host that no longer exist (killed before their trace was complete).
struct LiveJob {
  std::vector<LiveStatus> running;
  std::vector<LiveStatus> vanished;  // status file left, process gone
};
LiveJob live_job(const std::string& dir);
// "2 processes, 12,345 records, 34 GPU ops in flight, 0 dropped, 1.20 MiB"
std::string live_line(const std::vector<LiveStatus>& running);

}  // namespace cutrace::tools
