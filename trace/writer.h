// TraceWriter: turns records into a cutrace file (trace/format.h). Records accumulate in a
// raw block that is packed (trace/codec.h), LZ4-compressed and written when the next record
// would not fit in trace::kBlockTargetRaw, on flush() and on close(). Single-threaded: the
// collector thread owns it.
//
// Errors never throw and never print: after a failed write, failed() is true, error() says why,
// and further data is discarded (records are still counted) so the caller can carry on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/codec.h"
#include "trace/format.h"

namespace cutrace {

class TraceWriter {
 public:
  TraceWriter() = default;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter();  // if not closed: flush pending data, close the fd, write no End record

  // Creates `path` exclusively (never follows a symlink, never truncates) and writes the header.
  bool open(const std::string& path, std::string* err);
  // Takes ownership of an already open fd (pipes, /dev/full in tests) and writes the header.
  bool open_fd(int fd, std::string* err);
  // Appends the file bytes to *sink instead of a file (tests, tools).
  bool open_memory(std::string* sink);
  // Before open*: write a format 1.1 file (unpacked records), as cutrace 0.1 did. For
  // compatibility tests and size comparisons.
  void write_v1() { v1_ = !open_; }
  // Before open*: flight recorder (--capture-range flight:SECONDS). Definitions (is_definition)
  // are kept whole in memory; other records go, in blocks LZ4-compressed without packing, to a
  // ring holding the blocks begun within the last keep_ns and at most budget_bytes, oldest
  // dropped first. Nothing but the header reaches the file until snapshot(); close() writes the
  // definitions not yet written and End, never the ring.
  void set_flight(int64_t keep_ns, size_t budget_bytes) {
    if (!open_) flight_ = keep_ns > 0, keep_ns_ = keep_ns, budget_ = budget_bytes;
  }
  bool flight() const { return flight_; }
  // Flight mode: writes the definitions not yet written, then a Window pair (reason "flight:" +
  // trigger) around the kept blocks not yet written, in order, and a `flight_snapshot.K` Meta.
  // Blocks written by an earlier snapshot are never written again. Returns the span's begin
  // (monotonic ns; now when nothing was kept).
  int64_t snapshot(std::string_view trigger);
  uint32_t snapshots() const { return snapshots_; }

  // Returns the id (>= 1) of `s`, emitting a String record the first time it is seen.
  // Strings longer than trace::kMaxStringBytes are truncated first.
  uint32_t intern(std::string_view s);
  void meta(std::string_view key, std::string_view value);
  void api_name(uint16_t api, std::string_view name);

  // `rec` begins with a RecHeader whose type and size are set.
  void append(const void* rec);
  template <class R>
  void add(R& r, trace::RecType t) {
    r.h.type = static_cast<uint16_t>(t);
    r.h.size = static_cast<uint16_t>(sizeof(R));
    append(&r);
  }
  // A fixed part (with h.type set) followed by a variable tail; sets h.size in the written copy.
  // The tail is cut so that the record stays within 65535 bytes.
  void append_var(const void* fixed, size_t fixed_size, const void* tail, size_t tail_size);

  bool flush();                                            // compress and write the pending block, if any
  bool close(uint64_t dropped_total, uint32_t end_flags);  // End record, flush, close

  // The text of an interned string (id from intern()); "" for 0 or an unknown id.
  std::string_view text(uint32_t id) const {
    return id && id <= string_store_.size() ? std::string_view(string_store_[id - 1]) : std::string_view();
  }
  uint64_t records() const { return records_; }
  uint64_t bytes_written() const { return bytes_written_; }
  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }

 private:
  bool start();                                                   // writes the FileHeader
  char* reserve(size_t n, uint16_t type);                         // room for one record, or nullptr when discarding
  bool write_block(const char* raw, size_t n, uint64_t records);  // pack, compress, write
  bool write_defs();                                              // flight: the definitions not yet written
  void ring_push(int64_t now);                                    // flight: raw_ into the ring
  void ring_trim(int64_t now);                                    // flight: drop blocks begun before now - keep_ns_
  bool write_out(const char* p, size_t n);
  void fail(std::string msg);
  bool close_fd();

  int fd_ = -1;
  std::string* sink_ = nullptr;
  bool open_ = false;
  bool closed_ = false;
  bool failed_ = false;
  bool v1_ = false;
  std::string error_;

  std::vector<char> raw_;     // pending records
  std::vector<char> packed_;  // the pending records, packed
  std::vector<char> out_;     // BlockHeader + compressed bytes
  codec::BlockEncoder encoder_;
  uint64_t seq_ = 0;
  uint64_t records_ = 0;
  uint64_t bytes_written_ = 0;

  struct FlightBlock {
    std::vector<char> lz4;  // LZ4 of raw records (unpacked)
    uint32_t raw_size = 0;
    uint64_t records = 0;
    int64_t begin_ns = 0;  // when its first record could have been added (the previous block's end)
  };
  bool flight_ = false;
  int64_t keep_ns_ = 0;
  size_t budget_ = 0;
  std::deque<FlightBlock> ring_;
  size_t ring_bytes_ = 0;
  uint64_t raw_records_ = 0;      // records in raw_
  int64_t block_begin_ns_ = 0;    // when raw_ began collecting
  std::vector<char> defs_;        // every definition record, in order
  size_t defs_written_ = 0;       // bytes of defs_ already in the file
  bool clock_kept_ = false;       // the first ClockSync is a definition (the reader's time base)
  uint64_t file_records_ = 0;     // records in the file (End's count in flight mode)
  uint64_t budget_cut_ = 0;       // blocks dropped for the budget, not for age
  int64_t last_snapshot_ns_ = 0;  // the end of the last snapshot
  uint32_t snapshots_ = 0;

  std::deque<std::string> string_store_;  // stable storage for the keys of string_ids_
  std::unordered_map<std::string_view, uint32_t> string_ids_;
};

}  // namespace cutrace
