// NVTX ranges and annotations on the collector side: the ranges open on each thread (push/pop)
// and in the process (start/end), and their GPU projection: the span from the earliest start to
// the latest end of the GPU work launched while the range was open. A range is written once it
// is closed and every GPU operation launched inside it has its times.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>
#include "trace/format.h"
#include "trace/writer.h"

namespace cutrace {

struct OpenRange {
  trace::RangeRec rec;
  uint32_t pending = 0;  // GPU operations inside whose times are not known yet
  uint32_t level = 0;    // push/pop: depth in its domain on its thread (rec.depth saturates)
  bool closed = false;
  uint8_t payload_type = 0;  // trace::PayloadType; 0 = none
  uint64_t payload = 0;
};

class RangeTracker {
 public:
  explicit RangeTracker(TraceWriter& w) : w_(w) {}
  struct Attrs {
    uint32_t name_id, domain_id, category, color;
    uint8_t source;
    uint8_t payload_type = 0;  // trace::PayloadType; 0 = none
    uint64_t payload = 0;
  };
  // Push/pop nest per (thread, domain); `level` is the push's depth in its domain on its thread
  // (the pop: the depth of the range it ends), as the shim counted it.
  void push(uint32_t tid, int64_t ts, const Attrs& a, uint32_t level);
  void pop(uint32_t tid, uint32_t domain_id, int64_t ts, uint32_t level);
  void start(uint64_t id, uint32_t tid, int64_t ts, const Attrs& a);
  void end(uint64_t id, uint32_t tid, int64_t ts);
  // The ranges a GPU operation launched now by `tid` belongs to (each now waits for it).
  void attach(uint32_t tid, std::vector<OpenRange*>* out);
  // That operation's GPU times are known (0 = none).
  void op_done(const std::vector<OpenRange*>& ranges, int64_t gpu_start, int64_t gpu_end);
  // End of capture at `end_ts`: ranges never closed are written open (trace::kRangeOpen), ending
  // there.
  void finish(int64_t end_ts);
  // The names (string ids) of the ranges open on `tid`, outermost first: its push/pop ranges of
  // every domain, then the start/end ranges it started.
  std::vector<uint32_t> open_on(uint32_t tid) const;

 private:
  OpenRange* open(uint32_t tid, int64_t ts, const Attrs& a, trace::RangeKind kind, uint64_t id);
  void close(OpenRange* r, uint32_t tid, int64_t ts);
  void close_open(OpenRange* r, int64_t end_ts);
  struct DomainStack {
    uint32_t domain_id;
    std::vector<OpenRange*> open;
  };
  void maybe_write(OpenRange* r);

  TraceWriter& w_;
  std::unordered_map<uint32_t, std::vector<DomainStack>> stacks_;  // tid -> push/pop stack per domain
  std::unordered_map<uint64_t, OpenRange*> started_;               // start/end ranges by id
  uint64_t next_id_ = 1ull << 62;                                  // push/pop range ids (NVTX start/end ids stay below)
};

}  // namespace cutrace
