// Behind `cutrace diff A B`: what changed between two runs, and by how much. Each side is read
// into its own SummaryModel (tools/analysis/summary_model.h); compare() lines the two up. Figures
// are per step when both sides have steps (totals divided by each side's step count), so runs of
// different length compare fairly; otherwise totals. docs/DIFF.md defines every figure and key.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/analysis/summary_model.h"

namespace cutrace {

// A kernel name with what changes between builds removed, for matching names that are not
// equal: (1) template argument lists "<...>" (nested) are dropped; (2) a parameter list "(...)"
// is dropped; (3) every token of two or more decimal numbers joined by 'x' ("128x64",
// "tilesize128x128x32" -> "tilesize*") becomes '*'; (4) every number that is a whole token
// between '_', ':' or the name's ends ("_128_") becomes '*'. Other digits (sm80, f16, fp32)
// stay: they name the architecture or the precision. Spaces left at the end are trimmed.
std::string normalise_kernel_name(std::string_view name);

// Steps first..last (0-based, inclusive) of each file, in the order they began.
struct StepPick {
  uint64_t first = 0;
  uint64_t last = UINT64_MAX;
};
// "3-10", "5" (one step), "3-" (from 3 to the end). False if malformed or last < first.
bool parse_step_pick(std::string_view text, StepPick* out);

// One side of the diff, read.
struct DiffSide {
  std::string path;
  std::unique_ptr<SummaryModel> model;
  std::vector<std::string> errors;  // files that did not open or read ("path: why")
  size_t files = 0;                 // files opened
  std::string note;                 // what --steps selected ("steps 2-5: ..."), or why it could not
  bool ok = false;                  // at least one file opened and, with --steps, steps were found
};

// Reads `path` (job directory, merged file, one file) with `opt` (its rank filter included). With
// `pick`, a first pass finds each file's step ranges (opt.step_pattern) and the summary is limited
// to [begin of step first, end of step last], the union over the files; files of more than one host
// (different clocks) need a rank.
DiffSide load_diff_side(const std::string& path, const SummaryOptions& opt, const std::optional<StepPick>& pick);

// Distribution figures of one side's step times.
struct StepQuantiles {
  uint64_t n = 0;
  int64_t mean = 0, median = 0, p25 = 0, p75 = 0, p90 = 0, min = 0, max = 0;
  int64_t iqr() const { return p75 - p25; }
};

// A step-time comparison (CPU or GPU). The change is "beyond the spread" when both sides have
// steps and |median B - median A| > max(IQR A, IQR B): the shift of the typical step is larger
// than the middle half of either run's own steps spans.
struct StepChange {
  StepQuantiles a, b;
  int64_t median_change = 0;  // b.median - a.median
  int64_t p90_change = 0;
  double ratio = 0;  // b.median / a.median; 0 when a.median is 0
  bool beyond_spread = false;
};

enum class KernelMatch { Exact, Normalised, OnlyA, OnlyB };
const char* kernel_match_name(KernelMatch m);  // "exact", "normalised", "only_a", "only_b"

struct KernelSide {
  std::vector<std::string> names;  // the names of this side that the row stands for
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t mean_ns = 0;     // total / timed launches
  double per_step_ns = 0;  // total / steps (or total without steps)
  double count_per_step = 0;
  double share = 0;  // of the side's kernel GPU time
};

struct KernelDiff {
  std::string name;  // the exact name, or the normalised one
  KernelMatch match = KernelMatch::Exact;
  KernelSide a, b;
  double change_ns = 0;  // b.per_step_ns - a.per_step_ns
  double ratio = 0;      // b.mean_ns / a.mean_ns; 0 when a side has none
};

struct RangeDiff {  // NVTX ranges of one (domain, name) or one digit pattern ("step_*")
  std::string domain, name;
  size_t names_a = 0, names_b = 0;  // names it stands for in each run
  uint64_t count_a = 0, count_b = 0;
  int64_t cpu_total_a = 0, cpu_total_b = 0, gpu_total_a = 0, gpu_total_b = 0;
  int64_t cpu_mean_a = 0, cpu_mean_b = 0, gpu_mean_a = 0, gpu_mean_b = 0;
  int64_t cpu_median_a = 0, cpu_median_b = 0;  // per range
  double cpu_change_ns = 0;                    // per step, as KernelDiff::change_ns
  double gpu_change_ns = 0;
};

struct CountDiff {  // copies of one kind, memsets, syncs of one kind, one API
  std::string name;
  uint64_t count_a = 0, count_b = 0;
  int64_t ns_a = 0, ns_b = 0;  // GPU time (copies, sets) or CPU time (syncs, APIs)
  uint64_t bytes_a = 0, bytes_b = 0;
  double change_ns = 0;  // per step
};

struct SideFacts {
  size_t files = 0;
  uint64_t records = 0;
  uint64_t steps = 0;
  std::string step_source;
  double divisor = 1;     // steps when the diff is per step, else 1
  GpuBreakdown gpu;       // all devices of all files
  uint64_t mem_peak = 0;  // largest NVML memory-used sample of any device (0: no samples)
  tools::LossFacts losses;
  uint64_t api_errors = 0;
  int64_t kernel_ns = 0;
  uint64_t kernels = 0;
};

struct Diff {
  bool per_step = false;  // both sides have steps: the figures below are per step
  SideFacts a, b;
  StepChange cpu, gpu;
  std::vector<KernelDiff> kernels;  // by |change_ns| desc, then name
  double kernel_change_ns = 0;      // sum of the kernels' change_ns
  std::vector<RangeDiff> ranges;    // by |cpu_change_ns| desc, then name
  std::vector<CountDiff> copies;    // memcpy kinds, then "memset"; kinds in neither run left out
  std::vector<CountDiff> syncs;     // sync kinds in either run
  std::vector<CountDiff> apis;      // by |change_ns| desc, then name
};

Diff compare(const SummaryModel& a, const SummaryModel& b);

// The documented `cutrace diff --json` document (docs/DIFF.md).
nlohmann::ordered_json diff_json(const Diff& d, const DiffSide& a, const DiffSide& b);

}  // namespace cutrace
