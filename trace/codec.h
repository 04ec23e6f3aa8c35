// The compact block encoding of format 2.x (docs/FORMAT.md, "Packed payload"). The writer keeps
// records as the fixed structs of trace/format.h and packs a whole block at flush time; the
// reader unpacks a block back into those structs, so every tool sees the same records as in 1.x.
//
// A packed payload is a set of columns (trace::Column). Each record contributes one tag byte to
// the Tag column: 0 means "verbatim" (the whole record is copied into the Verbatim column), any
// other tag is the RecType of a record whose fields are spread over the other columns as
// varints: times as deltas from the previous record of the same thread or stream, correlation
// ids and handles as deltas from the previous value, kernel launch configurations as ids of
// KernelConfig records written once per file. State (previous values) starts afresh in every
// block, so each block decodes on its own; only the KernelConfig table lives for the whole file,
// like the string table.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/format.h"

namespace cutrace::codec {

// "tag", "verbatim", "corr", ... ("?" out of range).
const char* column_name(int column);

// Byte size of each column of one packed payload (for `cutrace dump --stats`).
struct ColumnSizes {
  uint64_t bytes[trace::kColumnCount] = {};
};

// One column being written: bytes appended in place, its memory kept from block to block.
class ColumnBuffer {
 public:
  void clear() { n_ = 0; }
  size_t size() const { return n_; }
  const char* data() const { return b_.data(); }
  char* room(size_t k) {
    if (b_.size() - n_ < k) b_.resize(std::max(2 * b_.size(), n_ + k + 4096));
    return b_.data() + n_;
  }
  void push_back(char c) {
    *room(1) = c;
    ++n_;
  }
  void append(const char* p, size_t k) {
    std::memcpy(room(k), p, k);
    n_ += k;
  }
  void put_varint(uint64_t v) {
    char* p = room(10);
    char* q = p;
    for (; v >= 0x80; v >>= 7) *q++ = char(v | 0x80);
    *q++ = char(v);
    n_ += size_t(q - p);
  }

 private:
  std::vector<char> b_;
  size_t n_ = 0;
};

// A kernel's launch configuration: the KernelRec bytes from name_id to the end (44), the key of
// the file's KernelConfig table.
struct ConfigKey {
  static constexpr size_t kBytes = sizeof(trace::KernelRec) - offsetof(trace::KernelRec, name_id);
  char b[kBytes];
  bool operator==(const ConfigKey& o) const { return std::memcmp(b, o.b, kBytes) == 0; }
};
struct ConfigKeyHash {
  size_t operator()(const ConfigKey& k) const;
};

// Packs blocks of raw records. One per file: it owns the file's KernelConfig table.
class BlockEncoder {
 public:
  // Packs the records in raw[0, n) (a whole number of records) into *out (replaced).
  void encode(const char* raw, size_t n, std::vector<char>* out);
  size_t configs() const { return configs_.size(); }

 private:
  std::unordered_map<ConfigKey, uint32_t, ConfigKeyHash> configs_;  // config -> id (>= 1)
  ColumnBuffer cols_[trace::kColumnCount];
};

// Readable bytes that BlockDecoder::decode needs after a payload: its fast path reads varints
// (at most 10 bytes each) in batches of records without a bounds check per read; the padding sets
// the shortest batch (codec.cpp, kMaxRecordRead).
inline constexpr size_t kDecodePadding = 4096;

// A column of a packed payload being read: next byte, end.
struct ColumnCursor {
  const uint8_t* p = nullptr;
  const uint8_t* end = nullptr;
};

// Unpacks packed payloads. One per file: it owns the file's KernelConfig table.
class BlockDecoder {
 public:
  // Unpacks payload[0, n) into the first *out_size bytes of *out (grown as needed, never shrunk)
  // as plain records. payload[n, n + kDecodePadding) must be readable too (its bytes are never
  // used): varints are read without a check per byte. Returns false, with *out in an
  // unspecified state, when the payload is malformed (a column overruns, an unknown tag, the
  // result would exceed trace::kMaxBlockDecoded). Kernels whose config is unknown (its block was
  // lost) decode with name_id 0 and zero dimensions and are counted in unresolved().
  bool decode(const char* payload, size_t n, std::vector<char>* out, size_t* out_size, ColumnSizes* sizes = nullptr);
  void reset() {
    configs_.clear();
    unresolved_ = 0;
  }
  uint64_t unresolved() const { return unresolved_; }

 private:
  template <bool kChecked>
  bool unpack_records(const ColumnCursor* cols, const char* payload_end, std::vector<char>* out, size_t* out_size);

  std::vector<trace::KernelConfigRec> configs_;  // index id - 1; h.size 0 = not (yet) defined
  uint64_t unresolved_ = 0;
  // decode()'s fast path: configs_ entries it replaced (index, old value), and configs_'s size
  // before it, to undo them when the block turns out bad.
  std::vector<std::pair<uint32_t, trace::KernelConfigRec>> undo_;
  size_t undo_size_ = 0;
};

}  // namespace cutrace::codec
