// What the job-level analyses need from one trace, read in one pass: its clock pairs (ClockSync),
// its NCCL kernels (the collectives), its steps and per-range CPU totals. tools/analysis/align.h puts the
// ranks on one clock from them, tools/analysis/straggler.h finds the rank the others wait for.
//
// A collective is a timed Kernel record whose name starts with "nccl" (not captured into a graph,
// not a graph launch). Its identity across ranks: its name and launch configuration (grid and
// block, which follow the message size), and, when the trace has steps, the step it was launched
// in and its ordinal among the collectives of that name and configuration in that step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tools/analysis/runs.h"

namespace cutrace {
class TraceReader;

struct Collective {
  uint32_t key = 0;       // index into RankProfile::keys: "name grid block"
  uint32_t channel = 0;   // the trace's NCCL streams, numbered in order of their first collective
  int64_t cpu_begin = 0;  // the launch call
  int64_t gpu_start = 0;  // > 0
  int64_t gpu_end = 0;    // >= gpu_start
  int32_t step = -1;      // index into RankProfile::steps of the step it was launched in; -1: none
  uint32_t ordinal = 0;   // among the collectives of the same key in that step, from 0
  int64_t duration() const { return gpu_end - gpu_start; }
};

struct StepSpan {
  std::string name;
  int64_t begin = 0, end = 0;  // CPU times of the step range
};

struct RangeTotal {  // Range records of one (domain, name), steps excluded
  std::string name;  // "domain::name" outside the default domain
  uint64_t count = 0;
  int64_t cpu_ns = 0;
};

struct RankProfile {
  static constexpr size_t kMaxCollectives = size_t(1) << 22;  // more are counted, not kept
  static constexpr size_t kMaxSteps = size_t(1) << 20;
  static constexpr size_t kMaxRanges = 1000;

  std::string file, host;
  int64_t rank = -1;  // -1: not recorded
  runs::Trace id;
  bool has_clock = false;       // any ClockSync record
  int64_t wall_offset_ns = 0;   // median over its ClockSync records of realtime - monotonic
  int64_t clock_spread_ns = 0;  // max - min of those (NTP slewing the wall clock while it ran)
  std::vector<std::string> keys;
  std::vector<Collective> collectives;  // by channel, then gpu_end
  uint64_t collectives_beyond = 0;      // timed collectives not kept (kMaxCollectives)
  uint64_t collectives_untimed = 0;     // NCCL kernels without a GPU time (not matchable)
  std::vector<StepSpan> steps;          // by begin
  std::vector<RangeTotal> ranges;       // by first appearance
  int64_t step_cpu_ns = 0;              // sum of the steps' CPU durations
  int64_t step_blocked_ns = 0;          // CPU time inside steps blocked in synchronisations and blocking copies
  int64_t compute_ns = 0;               // GPU time of the other kernels, whole trace
  int64_t comm_ns = 0;                  // GPU time of the collectives, whole trace
};

// Streams one opened trace. Steps are the Range records whose name matches `step_pattern`
// (trace/name_pattern.h). False when the read failed (*err says why; what was read
// is kept).
bool read_profile(TraceReader& r, const std::string& step_pattern, RankProfile* out, std::string* err);

// The collective's kernel name (its key up to the launch configuration).
std::string collective_name(const RankProfile& p, const Collective& c);

}  // namespace cutrace
