// Data behind the HTML report and `cutrace serve`: one job (a directory of rank files, or one
// file) turned into the JSON documents the web page draws. `cutrace report` embeds both documents
// in one self-contained HTML file; `cutrace serve` answers them over HTTP, the timeline a piece
// (time range, level of detail) at a time. docs/REPORT.md defines every key.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace cutrace::report {

// Everything the dashboard shows: the `cutrace summary --json` document (same numbers) plus the
// series for charts (GPU/CPU utilisation over time per GPU/node, step times, memory in use, ...)
// and the timeline's track tree and time extent.
// Returns false and sets *err when nothing can be read.
bool dashboard_json(const std::string& job_path, std::string* out, std::string* err);
class TimelineIndex;  // tools/report/tracks.h
// Same, and builds `index` (for timeline_json below) from the same read of the job.
bool dashboard_json(const std::string& job_path, std::string* out, std::string* err, TimelineIndex* index);

// Timeline events in [t0_ns, t1_ns) (host CLOCK_MONOTONIC-aligned ns as in the summary), for
// every track. When a track holds more events than about `width_px` per the range, neighbouring
// events are aggregated into level-of-detail buckets (count, busy time, dominant name) so the
// answer stays small; width_px = 0 means every event, no aggregation.
struct TimelineQuery {
  int64_t t0_ns = std::numeric_limits<int64_t>::min();
  int64_t t1_ns = std::numeric_limits<int64_t>::max();
  int width_px = 0;
};
bool timeline_json(const std::string& job_path, const TimelineQuery& q, std::string* out, std::string* err);
// Same document from an index: only the blocks of the range are decoded (its "blocks_read" says
// how many, of "blocks_indexed").
bool timeline_json(TimelineIndex& index, const TimelineQuery& q, std::string* out, std::string* err);

// Added by the report half (compatible extensions):

// The whole self-contained page of `cutrace report`: the web assets with both documents
// (timeline: every event, no aggregation) embedded. False and *err when nothing can be read.
// *unreadable (when given): one line per file that did not open, with the reason.
bool report_html(const std::string& job_path, std::string* out, std::string* err,
                 std::vector<std::string>* unreadable = nullptr);
// `cutrace diff --html`: web/diff.html with the `cutrace diff --json` document embedded.
bool diff_html(std::string diff_json, std::string* out, std::string* err);

// The page's assets, embedded into the binary at build time from web/ (tools/dev/embed_web.py):
// "index.html" (the page without data: it fetches dashboard.json and timeline.json relative to
// its own URL, for `cutrace serve`), "style.css", "chart.umd.js" and every web/*.js it names
// ("common.js", "dashboard.js", "timeline.js", "app.js"). Empty if unknown.
std::string_view web_asset(const std::string& name);

}  // namespace cutrace::report
