// The first of the Chrome export's two passes over a trace (tools/export/chrome.cpp): what an
// event needs to know of records that come later in the file (records are in the order the
// collector wrote them, not in time order):
// - the slices of every host thread track (calls and push/pop ranges), made to nest: a slice that overlaps its
// neighbour by a little (the tick-to-ns anchor moved
//   between two calls) is moved by the smaller amount that makes it nest or follow, so viewers
//   see no overlapping slices on one track;
// - the push/pop ranges of each thread, to find the innermost one open when a call was made
//   (Kineto's "External id" and the gpu_user_annotation spans per stream);
// - the cuEventRecord calls of each event handle, to find the record a stream wait or an event
//   synchronisation waits on (Kineto's wait_on_cuda_event_record_corr_id);
// - the span of the file's GPU work, which the GPU-side sync events stay inside.
// Records are named by their ordinal: the position in which TraceReader::read hands them over,
// the same in both passes.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "trace/format.h"
#include "trace/reader.h"

namespace cutrace::exporter {

struct Slice {
  int64_t b, e;
  uint64_t ord;
  bool moved = false;
};
// Makes the slices of one track nest (sorted by begin on return): where one starts inside
// another and ends after it, either its begin moves to the other's end or its end to it,
// whichever moves less; such a slice gets `moved`.
void nest_slices(std::vector<Slice>& v);

// The GPU-side event of a synchronisation (Kineto's cat cuda_sync) goes on pid = device and this
// tid: Stream Sync and Stream Wait Event on "stream N (sync)" (N + kSyncRow, Kineto's row for
// Stream Sync), Context and Event Sync, which have no stream, on kSyncRow.
inline constexpr int64_t kSyncRow = 1000000;
inline bool gpu_side_sync(const trace::SyncRec& s) {
  auto k = trace::SyncKind(s.kind);
  return s.result == 0 && (k == trace::SyncKind::Context || k == trace::SyncKind::Stream ||
                           k == trace::SyncKind::Event || k == trace::SyncKind::StreamWait);
}
inline int64_t sync_row(const trace::SyncRec& s) {
  auto k = trace::SyncKind(s.kind);
  return k == trace::SyncKind::Stream || k == trace::SyncKind::StreamWait ? kSyncRow + int64_t(s.stream) : kSyncRow;
}

class ChromePlan {
 public:
  struct Range {
    int64_t b, e;
    uint64_t ord;  // the Range record's ordinal: unique, where ids may not be (0 in old traces)
    uint64_t id;
    uint32_t name_id;
    int32_t parent;  // index in the thread's vector, -1 = outermost
    bool profiler_step;
  };
  struct EventRecord {
    int64_t t;  // cpu_begin of the record call
    uint64_t corr;
    uint32_t stream;
  };

  // Reads the whole file once (r must be open; the caller reads it again afterwards).
  void build(TraceReader& r);

  // Times of the slice of record `ord` on its host thread track.
  void host_times(uint64_t ord, int64_t* b, int64_t* e) const {
    if (moves_.empty()) return;
    auto it = moves_.find(ord);
    if (it != moves_.end()) *b = it->second.first, *e = it->second.second;
  }
  // The innermost push/pop range open on thread tid at t, or nullptr.
  const Range* innermost(uint32_t tid, int64_t t) const;
  // The last record of `event` that began at or before t, or nullptr.
  const EventRecord* record_before(uint64_t event, int64_t t) const;
  uint64_t moved() const { return moves_.size(); }  // slices whose times were changed
  // First start and last end of the file's GPU operations; 0, 0 if none has GPU times.
  int64_t gpu_first() const { return gpu_first_; }
  int64_t gpu_last() const { return gpu_last_; }

 private:
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> moves_;  // ord -> nested (begin, end)
  int64_t gpu_first_ = 0, gpu_last_ = 0;
  std::unordered_map<uint32_t, std::vector<Range>> ranges_;         // by tid, sorted by begin
  std::unordered_map<uint64_t, std::vector<EventRecord>> records_;  // by event handle, by time
};

}  // namespace cutrace::exporter
