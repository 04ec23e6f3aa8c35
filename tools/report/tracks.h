// The timeline behind the report: every trace file of a job read into tracks of events, in the
// columnar form the web page draws (tools/report/data.cpp turns it into JSON; docs/REPORT.md
// defines the keys). Used by `cutrace report` and `cutrace serve` through tools/report/data.h.
//
// Track tree: host -> process (one file, usually one rank) -> CPU threads (API calls on the
// bottom row, NVTX ranges and marks above, by nesting depth) and GPU devices -> streams
// (kernels, copies, sets), plus counters (CPU utilisation, GPU utilisation, device memory).
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tools/analysis/straggler.h"

namespace cutrace::report {

// What an event is; the page colours and describes events by it.
enum class EventKind : uint8_t {
  Kernel = 0,
  Memcpy = 1,
  Memset = 2,
  Sync = 3,
  Api = 4,
  Range = 5,
  Memory = 6,
  Mark = 7,
  Missing = 8,  // an interval of the thread whose records were not captured (LossRec)
};

// Interned strings: id 0 is "".
class StringTable {
 public:
  StringTable() { strings_.emplace_back(); }
  uint32_t id(const std::string& s);
  const std::vector<std::string>& all() const { return strings_; }

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> ids_;
};

// Events of one track, one column per field (absolute ns; JSON makes them relative).
struct EventColumns {
  std::vector<int64_t> start, dur;
  std::vector<uint32_t> name;    // string id
  std::vector<uint8_t> kind;     // EventKind
  std::vector<uint16_t> row;     // thread tracks: 0.. ranges by depth, the last row API calls
  std::vector<uint64_t> corr;    // correlation id (launch <-> execution), 0 = none
  std::vector<uint64_t> bytes;   // copies, sets, allocations; 0 otherwise
  std::vector<uint32_t> detail;  // string id: kernel geometry, copy kinds, launched kernel, ...
  // Thread events: string id of the call's symbolised stack, one frame per line (0 = none
  // recorded); the page shows it in the details panel (key "bt").
  std::vector<uint32_t> backtrace;
  size_t size() const { return start.size(); }
  void add(int64_t s, int64_t d, uint32_t n, EventKind k, uint16_t r, uint64_t c, uint64_t b, uint32_t x) {
    start.push_back(s);
    dur.push_back(d < 0 ? 0 : d);
    name.push_back(n);
    kind.push_back(uint8_t(k));
    row.push_back(r);
    corr.push_back(c);
    bytes.push_back(b);
    detail.push_back(x);
    backtrace.push_back(0);
  }
};

struct CounterSeries {  // a counter track: value at ts (absolute ns), step-wise
  std::string unit;     // "%", "bytes"
  std::vector<int64_t> ts;
  std::vector<double> value;
};

struct Track {
  int id = 0;
  int parent = -1;   // -1: a root (host)
  std::string kind;  // host, process, thread, gpu, stream, counter
  std::string name;
  int file = -1;    // index into Timeline::files
  int rows = 1;     // thread tracks: ranges' depth rows + the API row
  int device = -1;  // gpu, stream and GPU counter tracks
  // Counters: gpu_busy, gpu_util (NVML), gpu_mem_used (NVML), gpu_mem_alloc, cpu_host, cpu_process
  std::string series;
  EventColumns events;
  CounterSeries counter;  // kind == "counter"
};

struct FileInfo {
  std::string path, host, cmdline;
  int64_t rank = -1, pid = 0;
};

struct Timeline {
  std::vector<FileInfo> files;
  std::vector<Track> tracks;  // in tree order (a parent before its children)
  StringTable strings;
  int64_t t0_ns = std::numeric_limits<int64_t>::max();  // earliest event or sample (absolute)
  int64_t t1_ns = std::numeric_limits<int64_t>::min();  // latest end
  uint64_t events = 0;
  // Times of one file: its own CLOCK_MONOTONIC ("monotonic", as `cutrace summary` and `dump`);
  // of several: the common clock of tools/analysis/align.h ("realtime" or "realtime+nccl", as `cutrace
  // export`), so that ranks on different hosts line up.
  std::string clock;
  std::vector<std::string> clock_warnings;  // ranks left on their wall clocks (tools/analysis/align.h)
  StragglerReport stragglers;               // of several files (tools/analysis/straggler.h)
  std::vector<std::string> errors;          // files that could not be opened or read
  // Of a TimelineIndex's piece: blocks decoded, of the blocks indexed (0 and 0 otherwise).
  uint64_t blocks_read = 0, blocks_indexed = 0;
};

class TimelineIndex;

// Reads every file of `job_path`; keeps the events that overlap [t0_ns, t1_ns) (on the clock
// above; the extent and the tree always cover the whole job). False when no file could be read.
// With `index`, that read also builds it (tracks.cpp).
bool load_timeline(const std::string& job_path, int64_t t0_ns, int64_t t1_ns, Timeline* out, std::string* err,
                   TimelineIndex* index = nullptr);

// What `cutrace serve` keeps of a loaded job so that a timeline piece decodes only the blocks of
// its time range (the file's blocks carry no time bounds): per file, the time span of every block
// (on the job's clock), the reader holding the whole file's metadata (strings, kernel
// configurations), the call stacks, and the track ids of the whole job's tree. Built by
// load_timeline's full read; its memory is the metadata and 40 bytes a block, not the events.
// A piece holds what load_timeline(job, t0, t1) would keep, unless the files changed since (the
// caller builds a new index then). Pieces of one index are read one at a time.
class TimelineIndex {
 public:
  TimelineIndex();
  ~TimelineIndex();
  // Events overlapping [t0_ns, t1_ns), every thread and stream track of the job (empty ones too)
  // numbered as in the tree of the whole job. False when no indexed file reads any more.
  bool piece(int64_t t0_ns, int64_t t1_ns, Timeline* out, std::string* err);
  uint64_t blocks() const;            // blocks indexed, all files
  uint64_t last_blocks_read() const;  // blocks the last piece decoded

  struct Impl;  // tracks.cpp
  std::unique_ptr<Impl> impl;
};

}  // namespace cutrace::report
