// Aggregation behind `cutrace summary` (and later reports and exports): streams trace files and
// keeps per-kernel-name, per-copy-kind and per-sync-kind totals, per-range-name totals (NVTX
// ranges and cutrace annotations), mark counts, plus one line per file.
//
// GPU time is gpu_end - gpu_start, counted only when both are non-zero and end >= start; other
// operations are "untimed". `count` includes untimed operations; mean = total / timed count.
// Operations issued while a stream was capturing a CUDA graph did not run then: they are only
// counted in captured_ops (the graph launch is a Kernel record of kind Graph).
//
// Ranges (Range records) are grouped by (domain, name). CPU time is cpu_end - cpu_begin (never
// negative); the GPU projection gpu_end - gpu_start counts only when both are non-zero and
// end >= start (gpu_count of them); gpu_ops sums the operations launched inside. Memory stays
// bounded: at most kMaxRangeNames distinct (domain, name) pairs and kMaxMarkNames mark names are
// kept, in the order first met; later names are summed under kOtherNames ("(other names)").
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "collector/reader.h"

namespace cutrace {

struct TimeStat {
  uint64_t count = 0;    // operations
  uint64_t untimed = 0;  // operations without a GPU time
  int64_t total_ns = 0;  // over timed operations
  int64_t min_ns = 0;    // 0 when nothing was timed
  int64_t max_ns = 0;

  void add(int64_t gpu_start, int64_t gpu_end);
  void merge(const TimeStat& o);
  uint64_t timed() const { return count - untimed; }
  int64_t mean_ns() const { return timed() ? total_ns / int64_t(timed()) : 0; }
};

struct KernelStat {
  std::string name;
  TimeStat time;
};

struct CopyStat {  // memcpy of one kind, or memset
  TimeStat time;
  uint64_t bytes = 0;
  uint64_t timed_bytes = 0;  // bytes of timed operations: bandwidth = timed_bytes / total_ns
};

struct SyncStat {  // CPU time blocked in the call: cpu_end - cpu_begin
  uint64_t count = 0;
  int64_t total_ns = 0;
};

struct RangeStat {
  uint64_t count = 0;
  int64_t cpu_total_ns = 0;
  int64_t cpu_min_ns = 0;
  int64_t cpu_max_ns = 0;
  uint64_t gpu_count = 0;  // ranges with a GPU projection
  int64_t gpu_total_ns = 0;
  uint64_t gpu_ops = 0;

  void add(int64_t cpu_begin, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end, uint32_t ops);
  void merge(const RangeStat& o);
  int64_t cpu_mean_ns() const { return count ? cpu_total_ns / int64_t(count) : 0; }
  int64_t gpu_mean_ns() const { return gpu_count ? gpu_total_ns / int64_t(gpu_count) : 0; }
};

struct RangeSummary {
  std::string name;
  std::string domain;  // "" = the default domain
  RangeStat stat;
};

struct DeviceInfo {
  uint16_t device = 0;
  std::string name;
  uint16_t cc_major = 0, cc_minor = 0, sm_count = 0;
  uint64_t total_mem = 0;
};

struct FileSummary {  // one trace file: one process, usually one rank
  std::string file;
  std::string host;
  std::string cmdline;
  int64_t rank = -1;  // -1: not recorded
  int64_t pid = 0;
  int64_t local_rank = -1;
  int64_t world_size = -1;
  std::string version;
  std::vector<DeviceInfo> devices;
  ReadStatus status;
  uint64_t dropped = 0;  // max(End.dropped, sum of Dropped records)
  bool read_error = false;
};

class SummaryModel {
 public:
  static constexpr size_t kCopyKinds = 6;  // fmt::CopyKind Unknown..PtoP
  static constexpr size_t kSyncKinds = 7;  // 0 (unknown) + fmt::SyncKind Context..EventQuery
  static constexpr size_t kMaxRangeNames = 10000;  // distinct (domain, name) pairs kept
  static constexpr size_t kMaxMarkNames = 10000;
  static constexpr const char* kOtherNames = "(other names)";

  // Streams one file (from its start) into the totals. False on a read error.
  bool add(TraceReader& r);

  std::vector<KernelStat> kernels() const;  // sorted by total_ns desc, count desc, name
  const CopyStat& memcpy_kind(size_t kind) const { return memcpy_[kind]; }
  const CopyStat& memsets() const { return memset_; }
  const SyncStat& sync_kind(size_t kind) const { return syncs_[kind]; }
  // Sorted by cpu_total_ns desc, count desc, name, domain.
  std::vector<RangeSummary> ranges() const;
  std::vector<std::pair<std::string, uint64_t>> marks() const;  // sorted by count desc, name
  const std::vector<FileSummary>& files() const { return files_; }  // sorted by rank, file
  uint64_t dropped_records() const;
  uint64_t api_errors() const { return api_errors_; }
  uint64_t records() const { return records_; }
  uint64_t captured_ops() const { return captured_; }  // issued into a CUDA graph capture

  // The documented `cutrace summary --json` document.
  nlohmann::ordered_json to_json() const;

 private:
  struct FileTotals;
  void merge_file(const TraceReader& r, FileTotals& t);
  void add_file_summary(const TraceReader& r, bool read_ok);

  struct RangeKey {
    std::string domain, name;
    bool operator==(const RangeKey& o) const { return domain == o.domain && name == o.name; }
  };
  struct RangeKeyHash {
    size_t operator()(const RangeKey& k) const {
      return std::hash<std::string>()(k.name) * 31 + std::hash<std::string>()(k.domain);
    }
  };

  std::unordered_map<std::string, TimeStat> kernels_;
  std::unordered_map<RangeKey, RangeStat, RangeKeyHash> ranges_;  // kOtherNames included
  std::unordered_map<std::string, uint64_t> marks_;
  std::array<CopyStat, kCopyKinds> memcpy_{};
  CopyStat memset_;
  std::array<SyncStat, kSyncKinds> syncs_{};
  std::vector<FileSummary> files_;
  uint64_t api_errors_ = 0;
  uint64_t records_ = 0;
  uint64_t captured_ = 0;
};

}  // namespace cutrace
