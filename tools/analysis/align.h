// One clock for every rank of a job. Each trace records CLOCK_MONOTONIC ns; its ClockSync
// records give CLOCK_REALTIME at the same instant, which puts every rank on wall-clock time. How
// far two wall clocks may disagree is bounded: processes of one host share their clocks (the
// bound is AlignOptions::same_host_tolerance_ns plus the spread of their ClockSync readings),
// hosts agree to what NTP gives (cross_host_tolerance_ns, `--clock-tolerance`).
//
// Ranks that ran NCCL collectives are then refined against a reference rank (the lowest rank
// with collectives): the same collective ends at the same instant on every rank. A collective is
// matched by identity (tools/analysis/collectives.h): by the step it was launched in, its name, launch
// configuration and ordinal in the step, when both ranks have steps of the same names; else by
// an offset search over the corrections the clock bound allows, each scored by how many
// collectives of the same name and configuration then end together. A correction is applied
// only when the matched collectives agree (80% of them end within agree_ns of the reference's),
// the match is unambiguous (no second correction, as good, within the bound: collectives that
// repeat faster than the clocks can tell apart) and it lies within the bound; otherwise the rank
// stays on its wall clock and `note` says why. Everything is reported per rank: collectives,
// matched, correction, residual, uncertainty.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tools/analysis/collectives.h"

namespace cutrace {

struct AlignOptions {
  int64_t cross_host_tolerance_ns = 50'000'000;  // two hosts' wall clocks agree within this
  int64_t same_host_tolerance_ns = 50'000;       // two processes of one host (reading noise)
  int64_t agree_ns = 100'000;                    // matched collectives end within this
  std::string step_pattern = "step_[0-9]*|ProfilerStep#[0-9]*";
};

struct RankClock {
  std::string file;
  int rank = 0;
  std::string host;
  int64_t offset_ns = 0;           // common (wall-clock) ns = this file's monotonic ns + offset_ns
  int64_t wall_offset_ns = 0;      // from its ClockSync records alone
  int64_t refined_ns = 0;          // the correction from collectives: offset_ns - wall_offset_ns
  int64_t uncertainty_ns = 0;      // how far offset_ns may be off, relative to the reference rank
  uint64_t collectives = 0;        // timed NCCL kernels in the trace
  uint64_t matched = 0;            // of them matched to the reference rank's collectives
  std::string matched_by;          // "steps" or "times"; "" when none matched
  int64_t residual_median_ns = 0;  // |end - reference's end| over the matched, after alignment
  int64_t residual_max_ns = 0;
  std::string status;  // "reference", "collectives", "wall clock"
  std::string note;    // with "wall clock": why (no collectives, no match, ambiguous, beyond the bound)
};

struct Alignment {
  std::vector<RankClock> ranks;  // in the order of the files given
  int reference = -1;            // index into ranks of the reference rank; -1: no collectives anywhere
  // Collectives of the reference rank matched on every other rank that has collectives, and
  // the residual over them all. (0 when some rank with collectives matched none.)
  size_t matched = 0;
  int64_t residual_median_ns = 0;
  int64_t residual_max_ns = 0;
  std::string method;                   // "realtime", "realtime+nccl" (some rank corrected), "merged file: <method>"
  std::vector<std::string> warnings;    // one line per rank left on its wall clock, and why
  std::vector<std::string> errors;      // "path: reason" of each file that did not open
  std::vector<std::string> mixed_runs;  // the files are not one run of one job (tools/analysis/runs.h)
  // instances[j][i]: the index in rank i's profile of the collective matched to the reference's
  // j-th collective (-1: none). Matches by step names count here even when their correction was
  // beyond the clock bound (the identity holds; the clocks do not allow the shift).
  std::vector<std::vector<int32_t>> instances;
  int64_t offset_of(const std::string& file) const;
};

// Matches and aligns profiles read with read_profile.
Alignment align_profiles(const std::vector<RankProfile>& profiles, const AlignOptions& opt = {});

// Reads every file (streaming); files that cannot be read keep offset 0, are skipped and named in
// errors. Members of one merged job file (`cutrace merge -o`) take the offsets stored in it.
// `profiles`, when given, receives the profiles read (one per file; empty for a file not read).
Alignment align_traces(const std::vector<std::string>& files, const AlignOptions& opt = {},
                       std::vector<RankProfile>* profiles = nullptr);

// Writes the merged job file `out` (trace/job_file.h) of `files` (as aligned in `a`): each
// member's bytes, its offset and its RankClock as properties, the job's figures and warnings.
bool write_merged(const std::string& out, const std::vector<std::string>& files, const Alignment& a,
                  int64_t clock_tolerance_ns, std::string* err);

// "rank 1 (host b): 34 of 34 collectives matched by steps, correction -2.500001 s, residual
// median 0.4 us, max 1.2 us" and the like, one line per rank; the report of `cutrace merge`.
std::vector<std::string> alignment_lines(const Alignment& a);

}  // namespace cutrace
