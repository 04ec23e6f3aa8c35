// The straggler of a job, from its collectives. A collective ends on every rank when the last
// rank has arrived, so every rank's step takes as long and step time cannot tell the ranks apart;
// but the last rank to arrive has the shortest collective kernel, and every other rank's kernel
// is longer by the time it waited for it. Per collective instance matched across ranks
// (Alignment::instances, tools/analysis/align.h): the last rank is the one whose kernel is shortest; the
// others waited (their kernel's time - its kernel's time) each.
//
// Per rank: the instances it was last at, the time the others waited for it there, and what it
// did differently: its compute (GPU time of the non-NCCL kernels) and host time (steps' CPU time
// outside synchronisations and blocking copies) per step, and the range (NVTX or annotation) whose
// CPU time per step exceeds the other ranks' median the most. The straggler is the rank the
// others waited for most, when they waited for it at least twice as long as for any other rank,
// it was last at more than half the instances, and they waited at least kMinWaitNs per instance;
// otherwise there is no straggler (ranks are even, or take turns).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/analysis/align.h"
#include "tools/analysis/collectives.h"

namespace cutrace {

struct RankLoad {
  int rank = 0;
  std::string host, file;
  uint64_t collectives = 0;   // instances (on two ranks or more) it took part in
  uint64_t last = 0;          // of them, those it arrived at last
  int64_t waited_for_ns = 0;  // the others' waiting at those, summed over the others
  uint64_t waits = 0;         // (collective, other rank) pairs that waiting is summed over
  uint64_t steps = 0;
  int64_t compute_per_step_ns = -1;  // -1: no steps
  int64_t host_per_step_ns = -1;
  std::string range;            // "" when no range exceeds the others'
  int64_t range_ns = 0;         // its CPU time per step (per call when some rank has no steps)
  int64_t range_others_ns = 0;  // the other ranks' median of the same
};

struct StragglerReport {
  static constexpr int64_t kMinWaitNs = 10'000;
  bool analysed = false;
  std::string why_not;          // when not analysed
  uint64_t instances = 0;       // collective instances matched on two ranks or more
  int64_t waited_ns = 0;        // all the waiting, over all instances and ranks
  int straggler = -1;           // index into ranks; -1: none
  bool per_step = true;         // range figures per step (false: per call)
  std::vector<RankLoad> ranks;  // in the order of the profiles
  std::string verdict;          // one sentence: the straggler with its evidence, or "no straggler"
};

StragglerReport find_stragglers(const std::vector<RankProfile>& profiles, const Alignment& a);
nlohmann::ordered_json straggler_json(const StragglerReport& s);
// The per-rank table and the verdict, as `cutrace summary` prints them.
void print_stragglers(const StragglerReport& s, std::FILE* out);

}  // namespace cutrace
