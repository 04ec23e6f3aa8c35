// The one reader of cutrace files (trace/format.h); every tool streams traces through it.
//
//   TraceReader r;
//   if (!r.open(path, &err)) die(err);          // header + metadata written before the first op
//   r.read([&](const Record& rec) {              // every record of every good block, in order
//     if (rec.type() == trace::RecType::Kernel) use(rec.as<trace::KernelRec>(), r.str(...));
//   });                                          // the visitor may return bool: false stops
//   r.status();                                  // complete/truncated, bad blocks, drops, ...
//
// Blocks are read into reusable buffers, so memory does not grow with the trace length. Damaged
// blocks are skipped (and counted), a truncated file reads up to its last complete block, and a
// record of a known type that is shorter than its struct never reaches the visitor, so as<R>()
// is safe for the type the record reports.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/codec.h"
#include "trace/format.h"

namespace cutrace {

// One record inside a decoded block; valid only during the visitor call.
class Record {
 public:
  explicit Record(const char* p) : p_(p) {}
  uint16_t type_raw() const { return header().type; }
  trace::RecType type() const { return static_cast<trace::RecType>(header().type); }
  uint16_t size() const { return header().size; }
  const char* data() const { return p_; }
  template <class R>
  const R& as() const {  // packed structs: alignment 1
    return *reinterpret_cast<const R*>(p_);
  }
  // Bytes after a fixed part of `fixed_size` bytes (String text, CpuSample core values).
  std::string_view tail(size_t fixed_size) const {
    return size() > fixed_size ? std::string_view(p_ + fixed_size, size() - fixed_size) : std::string_view();
  }

 private:
  trace::RecHeader header() const {
    trace::RecHeader h;
    std::memcpy(&h, p_, sizeof h);
    return h;
  }
  const char* p_;
};

struct ReadStatus {
  uint64_t blocks = 0;                    // blocks decoded and verified
  uint64_t bad_blocks = 0;                // damaged blocks skipped (resynchronised on the next block magic)
  uint64_t seq_gaps = 0;                  // places where the block sequence jumps
  uint64_t missing_blocks = 0;            // sequence numbers absent from the file
  uint64_t duplicate_blocks = 0;          // copies of a block already read (same seq and checksum): skipped
  uint64_t records = 0;                   // records handed to the visitor
  uint64_t bad_records = 0;               // malformed records skipped (too short, past the block end)
  uint64_t trailing_bytes = 0;            // bytes of an incomplete last block (file cut while writing)
  uint64_t dropped = 0;                   // sum of Loss (and 1.x Dropped) records (End.dropped: the writer's total)
  uint64_t lost[trace::kLossKinds] = {};  // Loss records' counts by kind (none for Dropped records)
  std::vector<trace::LossRec> losses;     // every Loss record: the intervals where records are missing
  uint64_t unresolved_configs = 0;        // 2.x: kernels whose KernelConfig was in a lost block
  uint64_t payload_bytes = 0;             // decompressed payload bytes of the good blocks
  uint64_t compressed_bytes = 0;          // their block headers and compressed bytes, as on disk
  codec::ColumnSizes columns;             // 2.x: packed bytes per column, summed over the good blocks
  bool complete = false;                  // End record seen; false: truncated (process killed, ...)
  trace::EndRec end{};                    // valid when complete
};

// Reads a file, or bytes in memory, a window at a time.
class ByteSource {
 public:
  ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  ~ByteSource();
  bool open_file(const std::string& path, std::string* err);
  // Bytes [base, base + size) of a file: one member of a merged job file.
  bool open_file_range(const std::string& path, uint64_t base, uint64_t size, std::string* err);
  void open_memory(std::string_view bytes);
  void close();

  uint64_t size() const { return size_; }
  bool is_open() const { return fd_ >= 0 || mem_; }
  uint64_t pos() const { return pos_; }
  const char* data() const { return cur_; }
  size_t ensure(size_t n);  // makes up to n bytes available at data(); returns how many
  void consume(size_t n);
  void seek(uint64_t pos);
  const std::string& error() const { return error_; }  // I/O error: reads end early

 private:
  int fd_ = -1;
  const char* mem_ = nullptr;  // memory mode
  uint64_t base_ = 0;          // file offset of byte 0 (a member of a merged job file)
  bool ranged_ = false;        // a member: reads stop at size_
  uint64_t size_ = 0;
  uint64_t pos_ = 0;  // file offset of cur_
  const char* cur_ = nullptr;
  const char* end_ = nullptr;
  std::vector<char> buf_;  // file mode window
  std::string error_;
};

class TraceReader {
 public:
  // Opens the file, checks the header and reads the metadata (strings, meta, api names,
  // threads, devices, streams, clock syncs) written before the first operation record. A path
  // FILE/<member> opens that member of the merged job file FILE (trace/job_file.h).
  bool open(const std::string& path, std::string* err);
  // Same on bytes in memory; `name` stands in for the path in messages and path().
  bool open_memory(std::string_view bytes, const std::string& name, std::string* err);
  void close();  // releases the fd and buffers; the metadata stays available

  // Streams every record from the start of the file. Returns true when the end of the file was
  // reached, false when the visitor returned false or a read error occurred (see error()).
  template <class V>
  bool read(V&& visit);
  // Streams the records of the blocks that start at `offsets` (file offsets of block headers, as
  // block_offset() gave them in an earlier read), in the given order, with the metadata (strings,
  // kernel configurations) of what was read before. Reopens the file after close(). False on a
  // read error or when the file is gone; a block no longer at its offset is skipped.
  template <class V>
  bool read_blocks(const std::vector<uint64_t>& offsets, V&& visit);
  // During read(): the file offset of the block whose records the visitor is being given.
  uint64_t block_offset() const { return block_.offset; }

  const std::string& path() const { return path_; }
  uint16_t version_major() const { return version_major_; }
  uint16_t version_minor() const { return version_minor_; }
  uint64_t file_size() const { return src_.size(); }
  const ReadStatus& status() const { return status_; }
  const std::string& error() const { return src_.error(); }

  std::string_view str(uint32_t id) const;            // "" for 0, "(unknown string)" if absent
  std::string_view api_name(uint16_t api) const;      // "(unknown api)" if absent
  std::string_view meta(std::string_view key) const;  // "" if absent
  // A decimal Meta value (pid, rank, world_size, ...); `fallback` if absent or not a number.
  int64_t meta_int(std::string_view key, int64_t fallback) const;
  const std::vector<std::pair<std::string, std::string>>& metas() const { return metas_; }
  const std::map<uint16_t, trace::DeviceRec>& devices() const { return devices_; }
  const std::map<uint32_t, trace::StreamRec>& streams() const { return streams_; }
  const std::map<uint32_t, uint32_t>& threads() const { return threads_; }  // tid -> name id
  // First ClockSync seen: CLOCK_MONOTONIC and CLOCK_REALTIME at the same instant (0 if none).
  const trace::ClockSyncRec& clock_sync() const { return clock_sync_; }

 private:
  struct Block {
    std::vector<char> raw;  // the decompressed payload
    uint32_t size = 0;
    uint32_t checksum = 0;
    uint64_t seq = 0;
    uint32_t disk_size = 0;     // header + compressed bytes
    uint64_t offset = 0;        // file offset of its header
    std::vector<char> records;  // 2.x: the payload unpacked into plain records
    size_t records_size = 0;
  };

  void reset(const std::string& path);  // forgets the previous file entirely
  bool open_source(std::string* err);
  bool next_block();       // decodes and verifies the next good block into block_; false at the end
  bool accept_block();     // checksum and (2.x) unpacking of the block just framed; false: damaged
  bool reopen();           // the source of open() again, after close()
  bool packed_under_1x();  // a 1.x header whose first block is a 2.x packed payload (version damaged)
  bool read_block();       // decodes the next block frame into block_; false at the end of data
  bool resync();           // skips a damaged block: scans for the next block magic; false at end of data
  void count_seq(uint64_t seq);
  void absorb(const char* rec, uint16_t type);  // metadata, drops and End bookkeeping
  void set_meta(std::string_view key, std::string_view value);
  template <class V>
  bool walk(V& visit);  // hands block_'s records to the visitor

  ByteSource src_;
  std::string path_;
  uint64_t data_start_ = 0;
  uint16_t version_major_ = 0;
  uint16_t version_minor_ = 0;
  ReadStatus status_;
  uint64_t next_seq_ = 0;
  std::unordered_map<uint64_t, uint32_t> seen_;  // seq -> checksum of every block read: copies are skipped
  std::string src_file_;                         // what open() opened: file, member range
  uint64_t src_base_ = 0, src_size_ = 0;
  bool src_ranged_ = false;
  Block block_;
  codec::BlockDecoder decoder_;

  std::unordered_map<uint32_t, std::string> strings_;
  std::unordered_map<uint16_t, uint32_t> api_names_;
  std::vector<std::pair<std::string, std::string>> metas_;
  std::map<uint16_t, trace::DeviceRec> devices_;
  std::map<uint32_t, trace::StreamRec> streams_;
  std::map<uint32_t, uint32_t> threads_;
  trace::ClockSyncRec clock_sync_{};
};

// Metadata records: what open() reads ahead of the first operation record.
bool is_metadata(trace::RecType t);

namespace detail {
template <class R>
constexpr void set_min(uint16_t* t, trace::RecType type) {
  t[static_cast<uint16_t>(type)] = sizeof(R);
}
struct MinSizes {
  uint16_t v[64] = {};
  constexpr MinSizes() {
    using T = trace::RecType;
    for (uint16_t& x : v) x = sizeof(trace::RecHeader);
    set_min<trace::StringRec>(v, T::String);
    set_min<trace::MetaRec>(v, T::Meta);
    set_min<trace::ApiNameRec>(v, T::ApiName);
    set_min<trace::ThreadRec>(v, T::Thread);
    set_min<trace::DeviceRec>(v, T::Device);
    set_min<trace::StreamRec>(v, T::Stream);
    set_min<trace::KernelRec>(v, T::Kernel);
    set_min<trace::MemcpyRec>(v, T::Memcpy);
    set_min<trace::MemsetRec>(v, T::Memset);
    set_min<trace::SyncRec>(v, T::Sync);
    set_min<trace::MemoryRec>(v, T::Memory);
    set_min<trace::ApiRec>(v, T::Api);
    set_min<trace::RangeRec>(v, T::Range);
    set_min<trace::MarkRec>(v, T::Mark);
    set_min<trace::CpuSampleRec>(v, T::CpuSample);
    set_min<trace::GpuSampleRec>(v, T::GpuSample);
    set_min<trace::ClockSyncRec>(v, T::ClockSync);
    set_min<trace::DroppedRec>(v, T::Dropped);
    set_min<trace::LossRec>(v, T::Loss);
    set_min<trace::WindowRec>(v, T::Window);
    set_min<trace::EndRec>(v, T::End);
    set_min<trace::ModuleRec>(v, T::Module);
    set_min<trace::StackRec>(v, T::Stack);
    set_min<trace::OpStackRec>(v, T::OpStack);
    set_min<trace::PayloadRec>(v, T::Payload);
    set_min<trace::HangRec>(v, T::Hang);
    set_min<trace::HangItemRec>(v, T::HangItem);
    set_min<trace::HangEndRec>(v, T::HangEnd);
    set_min<trace::CounterDefRec>(v, T::CounterDef);
    set_min<trace::CounterSampleRec>(v, T::CounterSample);
    set_min<trace::CounterMissingRec>(v, T::CounterMissing);
    set_min<trace::PyCodeRec>(v, T::PyCode);
    set_min<trace::PyStackRec>(v, T::PyStack);
  }
};
inline constexpr MinSizes kMinSizes;
// Types the reader itself keeps track of: String..Stream, ClockSync, Dropped, End, Loss.
inline constexpr uint64_t kAbsorbMask = 0x7Eull | (1ull << 30) | (1ull << 31) | (1ull << 33) | (1ull << 35);
}  // namespace detail

// Joins Payload records to the Range or Mark record each precedes. Call see() with every record
// the visitor receives, before handling it; range()/mark() then give the current record's
// payload, or nullptr (none, or its Payload record was in a lost block).
class PayloadJoin {
 public:
  void see(const Record& rec) {
    if (rec.type() == trace::RecType::Payload && rec.size() >= sizeof(trace::PayloadRec)) {
      p_ = rec.as<trace::PayloadRec>(), state_ = 1;
    } else {
      state_ = state_ == 1 ? 2 : 0;  // 2: the record just before this one was a Payload
    }
  }
  const trace::PayloadRec* range(const trace::RangeRec& g) const {
    return state_ == 2 && p_.of == uint16_t(trace::RecType::Range) && p_.target == g.id && p_.tid == g.tid ? &p_
                                                                                                           : nullptr;
  }
  const trace::PayloadRec* mark(const trace::MarkRec& m) const {
    return state_ == 2 && p_.of == uint16_t(trace::RecType::Mark) && p_.ts == m.ts && p_.tid == m.tid ? &p_ : nullptr;
  }

 private:
  trace::PayloadRec p_{};
  int state_ = 0;
};

// The smallest valid size of a record of `type` (sizeof its struct; 4 for unknown types).
constexpr uint16_t min_record_size(uint16_t type) {
  return type < 64 ? detail::kMinSizes.v[type] : sizeof(trace::RecHeader);
}

// Names used by the tools: "Kernel", "HtoD", "stream_wait", ...; "?" or "unknown" if out of range.
const char* rec_type_name(uint16_t type);
bool parse_rec_type(std::string_view name, uint16_t* type);  // case-insensitive
const char* copy_kind_name(uint8_t kind);
const char* mem_kind_name(uint8_t kind);
const char* sync_kind_name(uint8_t kind);  // lowercase: context, stream, event, stream_wait, ... (open bit ignored)
const char* kernel_kind_name(uint8_t kind);

// A file: itself; a directory: every regular `*.cutrace` in it, in natural order (rank2 before
// rank10). A merged job file (trace/job_file.h), given or in the directory, stands for its
// members, FILE/<member>, in its order. A path that does not exist is returned as is so that
// opening it reports the error.
std::vector<std::string> list_trace_files(const std::string& dir_or_file);

// Every trace of a directory (or one file), opened one at a time so that memory stays bounded.
class TraceSet {
 public:
  explicit TraceSet(const std::string& dir_or_file);
  const std::vector<std::string>& files() const { return files_; }
  // Calls fn(TraceReader&) for each file that opens; the others land in errors() as
  // "path: reason". Returns the number of files visited.
  template <class Fn>
  size_t for_each(Fn&& fn);
  const std::vector<std::string>& errors() const { return errors_; }
  // The files of files() that did not open, each with the reason (errors() without the path).
  const std::vector<std::pair<std::string, std::string>>& unreadable() const { return unreadable_; }

 private:
  std::string where_;
  std::vector<std::string> files_;
  std::vector<std::string> errors_;
  std::vector<std::pair<std::string, std::string>> unreadable_;
};

// The reason of an open() error about `file`: the message without its leading "file: ".
std::string open_error_reason(const std::string& file, const std::string& err);

// ---- template implementations ----------------------------------------------------------------

// status_.records is counted in a local and stored when the block ends or the visitor stops
// (visitors read status() after read()): as a member it was a load and a store per record.
// An unpacked 2.x block holds whole records by construction (BlockDecoder::decode checks every
// header it copies), so only 1.x blocks have their headers checked against the block's end.
template <class V>
bool TraceReader::walk(V& visit) {
  const bool packed = version_major_ >= 2;
  const char* p = packed ? block_.records.data() : block_.raw.data();
  const char* end = p + (packed ? block_.records_size : block_.size);
  uint64_t records = status_.records;
  while (p < end) {
    trace::RecHeader h;
    if (!packed && end - p < static_cast<ptrdiff_t>(sizeof h)) {
      ++status_.bad_records;
      break;
    }
    std::memcpy(&h, p, sizeof h);
    if (!packed && (h.size < sizeof h || h.size > end - p)) {  // the rest cannot be trusted
      ++status_.bad_records;
      break;
    }
    if (h.size < min_record_size(h.type)) {
      ++status_.bad_records;
    } else {
      if (h.type < 64 && ((detail::kAbsorbMask >> h.type) & 1)) absorb(p, h.type);
      ++records;
      Record rec(p);
      if constexpr (std::is_same_v<decltype(visit(rec)), bool>) {
        if (!visit(rec)) {
          status_.records = records;
          return false;
        }
      } else {
        visit(rec);
      }
    }
    p += h.size;
  }
  status_.records = records;
  return true;
}

template <class V>
bool TraceReader::read(V&& visit) {
  src_.seek(data_start_);
  status_ = ReadStatus{};
  next_seq_ = 0;
  seen_.clear();
  while (next_block()) {
    if (!walk(visit)) return false;
  }
  return src_.error().empty();
}

template <class V>
bool TraceReader::read_blocks(const std::vector<uint64_t>& offsets, V&& visit) {
  if (!reopen()) return false;
  for (uint64_t off : offsets) {
    src_.seek(off);
    if (!read_block() || block_.offset != off || !accept_block()) continue;
    if (!walk(visit)) return false;
  }
  return src_.error().empty();
}

template <class Fn>
size_t TraceSet::for_each(Fn&& fn) {
  errors_.clear();
  unreadable_.clear();
  if (files_.empty()) errors_.push_back(where_ + ": no *.cutrace files");
  size_t visited = 0;
  for (const std::string& f : files_) {
    TraceReader r;
    std::string err;
    if (!r.open(f, &err)) {
      errors_.push_back(err);
      unreadable_.emplace_back(f, open_error_reason(f, err));
      continue;
    }
    fn(r);
    ++visited;
  }
  return visited;
}

}  // namespace cutrace
