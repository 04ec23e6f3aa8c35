// One clock for every rank of a job. Each trace records CLOCK_MONOTONIC ns; its ClockSync
// records give CLOCK_REALTIME at the same instant, which puts all ranks on wall-clock time
// (hosts' clocks agree to NTP accuracy). Ranks that ran NCCL collectives are then refined: the
// same collective ends at the same instant on every rank, so the offsets that best line up the
// ends of matching collectives are taken, and what is left over is reported as the residual.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cutrace {

struct RankClock {
  std::string file;
  int rank = 0;
  std::string host;
  int64_t offset_ns = 0;   // common (wall-clock) ns = this file's monotonic ns + offset_ns
  int64_t refined_ns = 0;  // part of offset_ns that came from matching collectives
};

struct Alignment {
  std::vector<RankClock> ranks;  // in the order of the files given
  size_t matched = 0;            // collectives matched across all ranks
  double residual_median_ns = 0; // |end - mean end| over matched collectives, after alignment
  double residual_max_ns = 0;
  std::string method;            // "realtime" or "realtime+nccl"
  std::vector<std::string> errors;  // "path: reason" of each file that did not open
  std::vector<std::string> mixed_runs;  // the files are not one run of one job (tools/runs.h)
  int64_t offset_of(const std::string& file) const;
};

// Reads every file (streaming); files that cannot be read keep offset 0, are skipped and named in
// errors.
Alignment align_traces(const std::vector<std::string>& files);

}  // namespace cutrace
