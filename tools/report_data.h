// Data behind the HTML report and `cutrace serve`: one job (a directory of rank files, or one
// file) turned into the JSON documents the web page draws. `cutrace report` embeds both documents
// in one self-contained HTML file; `cutrace serve` answers them over HTTP, the timeline a piece
// (time range, level of detail) at a time. docs/REPORT.md defines every key.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

namespace cutrace::report {

// Everything the dashboard shows: the `cutrace summary --json` document (same numbers) plus the
// series for charts (GPU/CPU utilisation over time per GPU/node, step times, memory in use, ...)
// and the timeline's track tree and time extent.
// Returns false and sets *err when nothing can be read.
bool dashboard_json(const std::string& job_path, std::string* out, std::string* err);

// Timeline events in [t0_ns, t1_ns) (host CLOCK_MONOTONIC-aligned ns as in the summary), for
// every track. When a track holds more events than about `width_px` per the range, neighbouring
// events are aggregated into level-of-detail buckets (count, busy time, dominant name) so the
// answer stays small; width_px = 0 means every event, no aggregation.
struct TimelineQuery {
  int64_t t0_ns = std::numeric_limits<int64_t>::min();
  int64_t t1_ns = std::numeric_limits<int64_t>::max();
  int width_px = 0;
};
bool timeline_json(const std::string& job_path, const TimelineQuery& q, std::string* out,
                   std::string* err);

}  // namespace cutrace::report
