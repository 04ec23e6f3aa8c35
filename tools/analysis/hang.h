// `cutrace hang`: what each rank's trace says about a hang (its watchdog's Hang/HangItem/HangEnd
// records, the operations flagged pending at exit, the open syncs and NVTX ranges), and which
// collective the ranks wait in and which ranks never reached it.
//
// A collective is a Kernel record whose name starts with "nccl" (tools/analysis/collectives.h),
// or an Op item of a Hang record with a sequence number (one whose Kernel record is not written
// yet: a live trace). A rank's collectives are numbered from 1 in launch order (cpu_begin), as
// the collector numbers them in its report; a rank waits in its first collective not complete.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cutrace {
class TraceReader;

struct HangOpInfo {
  std::string kind;  // "kernel", "memcpy", "memset"
  std::string name;
  uint64_t corr = 0;
  int64_t begin = 0;  // the launch call's entry
  uint32_t stream = 0, tid = 0;
  uint64_t seq = 0;                 // collective number, 0: not a collective
  std::vector<std::string> frames;  // the launch's call stack, symbolised, innermost first
};

struct HangSyncInfo {
  uint32_t tid = 0;
  std::string api;
  uint32_t stream = 0;
  int64_t begin = 0;
};

struct HangRangeInfo {
  uint32_t tid = 0;
  std::string name;
  int64_t begin = 0;
};

struct RankHang {
  std::string file, host;
  int64_t rank = -1, pid = 0;
  bool complete = false;  // the trace has its End record (the process ended, or was stopped)
  int64_t origin = 0;     // monotonic time of the trace's first ClockSync: times are shown from it
  uint32_t hangs = 0;     // Hang records
  uint32_t hangs_over = 0;
  int64_t stuck_since = 0;  // the last open hang's oldest item, 0: none open
  uint64_t collectives = 0, collectives_complete = 0;
  uint64_t waiting_seq = 0;  // its first collective not complete, 0: none
  std::string waiting_name;
  int64_t last_collective_end = 0;    // CPU end of the launch of its last complete collective
  std::vector<HangOpInfo> in_flight;  // launched, not complete
  std::vector<HangSyncInfo> blocked;  // threads blocked in a synchronisation
  std::vector<HangRangeInfo> open_ranges;
  std::vector<HangOpInfo> last_ops;  // the last operations launched, newest first
};

struct HangCulprit {
  size_t rank_index = 0;  // into the ranks
  uint64_t reached = 0;   // collectives it launched
};

struct HangVerdict {
  uint64_t seq = 0;  // the collective the ranks wait in, 0: none waits
  std::string collective;
  std::vector<size_t> waiting;  // rank indices
  std::vector<HangCulprit> culprits;
  std::vector<int64_t> missing_ranks;  // below world_size and without a trace
  std::string text;                    // one sentence
};

// Reads one trace (opened). False with *err when the read failed (what was read is kept).
bool read_rank_hang(TraceReader& r, RankHang* out, std::string* err);
// world_size: -1 when unknown.
HangVerdict judge_hang(const std::vector<RankHang>& ranks, int64_t world_size);

}  // namespace cutrace
