#include "trace/codec.h"

#include <algorithm>
#include <cstring>
#include <utility>

// Forced inlining for the unpacker's speed (bench/summary_speed.sh). GCC's sanitizer builds
// (make sanitize, -O1) cannot honour it where a coder is reached through a function pointer.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CT_FORCE_INLINE inline
#else
#define CT_FORCE_INLINE [[gnu::always_inline]] inline
#endif

namespace cutrace::codec {
namespace {

using trace::Column;
constexpr size_t kConfigBytes = sizeof(trace::KernelRec) - offsetof(trace::KernelRec, name_id);
static_assert(kConfigBytes == sizeof(trace::KernelConfigRec) - offsetof(trace::KernelConfigRec, name_id));

uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
int64_t unzigzag(uint64_t u) { return int64_t(u >> 1) ^ -int64_t(u & 1); }

uint64_t load(const char* p, size_t size) {  // little-endian, zero-extended
  uint64_t v = 0;
  std::memcpy(&v, p, size);
  return v;
}
int64_t load_signed(const char* p, size_t size) {
  uint64_t v = load(p, size);
  unsigned shift = unsigned(64 - 8 * size);
  return int64_t(v << shift) >> shift;
}
void store(char* p, size_t size, uint64_t v) { std::memcpy(p, &v, size); }

// Copies N >= 8 bytes (zeros when from is null) as 8-byte words, the last one overlapping its
// predecessor, written out without a loop. The decoder's records are small and of constant size,
// where GCC's memcpy/memset (and loops it recognises as such) become `rep movs`/`rep stos`, which
// spend more time starting up than copying.
template <size_t N, size_t... W>
CT_FORCE_INLINE void copy_words(char* to, const char* from, std::index_sequence<W...>) {
  static_assert(N >= 8);
  (store(to + 8 * W, 8, from ? load(from + 8 * W, 8) : 0), ...);
  if (N % 8) store(to + N - 8, 8, from ? load(from + N - 8, 8) : 0);
}
template <size_t N>
CT_FORCE_INLINE void copy_words(char* to, const char* from) {
  copy_words<N>(to, from, std::make_index_sequence<N / 8>());
}

// Previous values per thread (cpu_begin) or per stream (gpu_end), reset every block. A
// direct-mapped table of 256 slots: slot = (key * 0x9E3779B97F4A7C15) >> 56; a slot holding
// another key is a miss (the caller falls back to its default prediction) and is overwritten.
class Lanes {
 public:
  void clear() { std::memset(keys_, 0, sizeof keys_); }
  bool find(uint64_t key, int64_t* v) const {
    unsigned s = slot(key);
    if (keys_[s] != key + 1) return false;
    *v = vals_[s];
    return true;
  }
  void set(uint64_t key, int64_t v) {
    unsigned s = slot(key);
    keys_[s] = key + 1;
    vals_[s] = v;
  }

 private:
  static unsigned slot(uint64_t key) { return unsigned((key * 0x9E3779B97F4A7C15ull) >> 56); }
  uint64_t keys_[256];  // key + 1 (keys are below 2^48); 0: unused
  int64_t vals_[256];
};

// Prediction state shared by the encoder and the decoder; fresh for every block.
struct State {
  Lanes cpu;                           // tid -> cpu_begin of its previous record
  Lanes gpu;                           // device << 32 | stream -> gpu_end of its previous timed operation
  int64_t last_cpu;                    // cpu_begin of the previous record with CPU times
  uint64_t prev[trace::kColumnCount];  // delta-coded columns: the previous value
  void reset() {
    cpu.clear();
    gpu.clear();
    last_cpu = 0;
    std::memset(prev, 0, sizeof prev);
  }
  int64_t predict_cpu(uint32_t tid) const {
    int64_t v = last_cpu;
    cpu.find(tid, &v);
    return v;
  }
  void saw_cpu(uint32_t tid, int64_t begin) {
    cpu.set(tid, begin);
    last_cpu = begin;
  }
  int64_t predict_gpu(uint64_t lane, int64_t cpu_end) const {
    int64_t prev_end = 0;
    gpu.find(lane, &prev_end);
    return std::max(prev_end, cpu_end);
  }
};

// ---- the record layouts, written once for both directions ------------------------------------
//
// `IO` is Writer (reads the fields of a record and appends varints to the columns) or Reader
// (reads varints and stores the fields of a zeroed record). The order of the calls is the order
// of the values in each column; fields used as keys (tid, stream, device) come first.

#define AT(R, member) r + offsetof(R, member), sizeof(static_cast<R*>(nullptr)->member)

template <class IO>
CT_FORCE_INLINE void code_cpu_times(IO& io, char* r, size_t begin_off, size_t end_off, size_t tid_off) {
  uint32_t tid = uint32_t(load(r + tid_off, 4));
  io.cpu_times(tid, r + begin_off, r + end_off);
}

template <class IO, class R>
CT_FORCE_INLINE void code_op(IO& io, char* r) {
  constexpr size_t op = offsetof(R, op);
  using O = trace::OpCommon;
  io.u(trace::kColThread, r + op + offsetof(O, tid), 4);
  io.u(trace::kColStream, r + op + offsetof(O, stream), 4);
  io.u(trace::kColDevice, r + op + offsetof(O, device), 2);
  io.u(trace::kColApi, r + op + offsetof(O, api), 2);
  io.u(trace::kColFlags, r + op + offsetof(O, flags), 2);
  io.z(trace::kColResult, r + op + offsetof(O, result), 4);
  io.delta(trace::kColCorr, r + op + offsetof(O, corr), 8);
  code_cpu_times(io, r, op + offsetof(O, cpu_begin), op + offsetof(O, cpu_end), op + offsetof(O, tid));
  uint64_t lane = load(r + op + offsetof(O, device), 2) << 32 | load(r + op + offsetof(O, stream), 4);
  io.gpu_times(lane, load_signed(r + op + offsetof(O, cpu_end), 8), r + op + offsetof(O, gpu_start),
               r + op + offsetof(O, gpu_end));
}

template <class IO>
CT_FORCE_INLINE void code_kernel(IO& io, char* r) {
  code_op<IO, trace::KernelRec>(io, r);
  io.config(r + offsetof(trace::KernelRec, name_id));
}

template <class IO>
void code_memcpy(IO& io, char* r) {
  using R = trace::MemcpyRec;
  code_op<IO, R>(io, r);
  io.u(trace::kColBytes, AT(R, bytes));
  io.u(trace::kColSmall, AT(R, copy_kind));
  io.u(trace::kColSmall, AT(R, src_kind));
  io.u(trace::kColSmall, AT(R, dst_kind));
  io.u(trace::kColDevice, AT(R, src_device));
  io.u(trace::kColDevice, AT(R, dst_device));
}

template <class IO>
void code_memset(IO& io, char* r) {
  using R = trace::MemsetRec;
  code_op<IO, R>(io, r);
  io.u(trace::kColBytes, AT(R, bytes));
  io.u(trace::kColSmall, AT(R, value));
  io.u(trace::kColSmall, AT(R, element_size));
}

template <class IO>
void code_sync(IO& io, char* r) {
  using R = trace::SyncRec;
  io.u(trace::kColThread, AT(R, tid));
  io.u(trace::kColStream, AT(R, stream));
  io.u(trace::kColDevice, AT(R, device));
  io.u(trace::kColApi, AT(R, api));
  io.z(trace::kColResult, AT(R, result));
  io.u(trace::kColSmall, AT(R, kind));
  io.delta(trace::kColCorr, AT(R, corr));
  io.delta(trace::kColHandle, AT(R, event));
  code_cpu_times(io, r, offsetof(R, cpu_begin), offsetof(R, cpu_end), offsetof(R, tid));
}

template <class IO>
void code_memory(IO& io, char* r) {
  using R = trace::MemoryRec;
  io.u(trace::kColThread, AT(R, tid));
  io.u(trace::kColStream, AT(R, stream));
  io.u(trace::kColDevice, AT(R, device));
  io.u(trace::kColApi, AT(R, api));
  io.z(trace::kColResult, AT(R, result));
  io.u(trace::kColSmall, AT(R, op));
  io.u(trace::kColSmall, AT(R, mem_kind));
  io.delta(trace::kColHandle, AT(R, address));
  io.u(trace::kColBytes, AT(R, bytes));
  code_cpu_times(io, r, offsetof(R, cpu_begin), offsetof(R, cpu_end), offsetof(R, tid));
}

template <class IO>
void code_api(IO& io, char* r) {
  using R = trace::ApiRec;
  io.u(trace::kColThread, AT(R, tid));
  io.u(trace::kColStream, AT(R, stream));
  io.u(trace::kColDevice, AT(R, device));
  io.u(trace::kColApi, AT(R, api));
  io.z(trace::kColResult, AT(R, result));
  io.delta(trace::kColCorr, AT(R, corr));
  io.delta(trace::kColHandle, AT(R, arg));
  code_cpu_times(io, r, offsetof(R, cpu_begin), offsetof(R, cpu_end), offsetof(R, tid));
}

#undef AT

// The packed record types and their struct sizes.
size_t packed_size(uint16_t type) {
  switch (static_cast<trace::RecType>(type)) {
    case trace::RecType::Kernel: return sizeof(trace::KernelRec);
    case trace::RecType::Memcpy: return sizeof(trace::MemcpyRec);
    case trace::RecType::Memset: return sizeof(trace::MemsetRec);
    case trace::RecType::Sync: return sizeof(trace::SyncRec);
    case trace::RecType::Memory: return sizeof(trace::MemoryRec);
    case trace::RecType::Api: return sizeof(trace::ApiRec);
    default: return 0;
  }
}

template <class IO>
void code_record(IO& io, uint16_t type, char* r) {
  switch (static_cast<trace::RecType>(type)) {
    case trace::RecType::Kernel: return code_kernel(io, r);
    case trace::RecType::Memcpy: return code_memcpy(io, r);
    case trace::RecType::Memset: return code_memset(io, r);
    case trace::RecType::Sync: return code_sync(io, r);
    case trace::RecType::Memory: return code_memory(io, r);
    case trace::RecType::Api: return code_api(io, r);
    default: return;
  }
}

bool zero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i]) return false;
  }
  return true;
}

// Whether the packed form reproduces the record exactly: pads are 0 and GPU times are not
// negative (so that "1 + zigzag(delta)" never wraps to the 0 that means "no time").
bool packable(uint16_t type, const char* r) {
  auto op_ok = [&](size_t op) {
    return zero(r + op + offsetof(trace::OpCommon, pad), 2) &&
           load_signed(r + op + offsetof(trace::OpCommon, gpu_start), 8) >= 0 &&
           load_signed(r + op + offsetof(trace::OpCommon, gpu_end), 8) >= 0;
  };
  switch (static_cast<trace::RecType>(type)) {
    case trace::RecType::Kernel:
      return op_ok(offsetof(trace::KernelRec, op)) && zero(r + offsetof(trace::KernelRec, pad), 1);
    case trace::RecType::Memcpy:
      return op_ok(offsetof(trace::MemcpyRec, op)) && zero(r + offsetof(trace::MemcpyRec, pad), 1);
    case trace::RecType::Memset:
      return op_ok(offsetof(trace::MemsetRec, op)) && zero(r + offsetof(trace::MemsetRec, pad), 3);
    case trace::RecType::Sync: return zero(r + offsetof(trace::SyncRec, pad), 3);
    case trace::RecType::Memory: return zero(r + offsetof(trace::MemoryRec, pad), 2);
    case trace::RecType::Api: return true;
    default: return false;
  }
}

// ---- encoder ---------------------------------------------------------------------------------

void put_varint(std::string& out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = char(v | 0x80);
    v >>= 7;
  }
  buf[n++] = char(v);
  out.append(buf, n);
}

struct Writer {
  ColumnBuffer* col;  // kColumnCount, BlockEncoder::cols_
  State st;

  void u(Column c, char* p, size_t size) { col[c].put_varint(load(p, size)); }
  void z(Column c, char* p, size_t size) { col[c].put_varint(zigzag(load_signed(p, size))); }
  void delta(Column c, char* p, size_t size) {
    uint64_t v = load(p, size);
    col[c].put_varint(zigzag(int64_t(v - st.prev[c])));
    st.prev[c] = v;
  }
  void cpu_times(uint32_t tid, char* begin_p, char* end_p) {
    int64_t begin = load_signed(begin_p, 8), end = load_signed(end_p, 8);
    col[trace::kColCpuBegin].put_varint(zigzag(int64_t(uint64_t(begin) - uint64_t(st.predict_cpu(tid)))));
    col[trace::kColCpuDuration].put_varint(zigzag(int64_t(uint64_t(end) - uint64_t(begin))));
    st.saw_cpu(tid, begin);
  }
  void gpu_times(uint64_t lane, int64_t cpu_end, char* start_p, char* end_p) {
    int64_t start = load_signed(start_p, 8), end = load_signed(end_p, 8);
    int64_t pred = st.predict_gpu(lane, cpu_end);
    col[trace::kColGpuStart].put_varint(start ? 1 + zigzag(int64_t(uint64_t(start) - uint64_t(pred))) : 0);
    int64_t base = start ? start : cpu_end;
    col[trace::kColGpuDuration].put_varint(end ? 1 + zigzag(int64_t(uint64_t(end) - uint64_t(base))) : 0);
    if (end) st.gpu.set(lane, end);
  }
  uint32_t config_id = 0;  // the kernel's, looked up (or assigned) by BlockEncoder::encode
  void config(char*) { col[trace::kColConfig].put_varint(config_id); }
};

}  // namespace

const char* column_name(int column) {
  static const char* const names[trace::kColumnCount] = {
      "tag",       "verbatim", "corr",      "thread",  "stream", "device", "api",    "flags", "result",
      "cpu_begin", "cpu_dur",  "gpu_start", "gpu_dur", "config", "bytes",  "handle", "small"};
  return column >= 0 && column < trace::kColumnCount ? names[column] : "?";
}

size_t ConfigKeyHash::operator()(const ConfigKey& k) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over 8-byte words
  for (size_t i = 0; i + 8 <= sizeof k.b; i += 8) {
    uint64_t w;
    std::memcpy(&w, k.b + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  uint32_t tail;
  static_assert(sizeof k.b % 8 == 4);
  std::memcpy(&tail, k.b + sizeof k.b - 4, 4);
  h = (h ^ tail) * 1099511628211ull;
  return size_t(h ^ (h >> 29));
}

void BlockEncoder::encode(const char* raw, size_t n, std::vector<char>* out) {
  for (ColumnBuffer& c : cols_) c.clear();
  Writer w;
  w.col = cols_;
  w.st.reset();
  ColumnBuffer& tags = w.col[trace::kColTag];
  auto verbatim = [&](const char* rec, size_t size) {
    tags.push_back(0);
    w.col[trace::kColVerbatim].append(rec, size);
  };
  for (size_t off = 0; off + sizeof(trace::RecHeader) <= n;) {
    trace::RecHeader h;
    std::memcpy(&h, raw + off, sizeof h);
    if (h.size < sizeof h || h.size > n - off) break;  // the writer never produces these
    const char* rec = raw + off;
    off += h.size;
    size_t want = packed_size(h.type);
    if (want == 0 || h.size != want || !packable(h.type, rec)) {
      verbatim(rec, h.size);
      continue;
    }
    if (h.type == uint16_t(trace::RecType::Kernel)) {
      ConfigKey key;
      std::memcpy(key.b, rec + offsetof(trace::KernelRec, name_id), sizeof key.b);
      auto it = configs_.find(key);
      if (it != configs_.end()) {
        w.config_id = it->second;
      } else {
        if (configs_.size() >= trace::kMaxKernelConfigs) {
          verbatim(rec, h.size);
          continue;
        }
        trace::KernelConfigRec c{};
        c.h.type = uint16_t(trace::RecType::KernelConfig);
        c.h.size = sizeof c;
        c.id = uint32_t(configs_.size() + 1);
        std::memcpy(reinterpret_cast<char*>(&c) + offsetof(trace::KernelConfigRec, name_id), key.b, kConfigBytes);
        configs_.emplace(key, c.id);
        w.config_id = c.id;
        verbatim(reinterpret_cast<const char*>(&c), sizeof c);
      }
    }
    tags.push_back(char(h.type));
    code_record(w, h.type, const_cast<char*>(rec));  // Writer only reads the record
  }
  std::string head;
  put_varint(head, trace::kColumnCount);
  size_t total = 0;
  for (const ColumnBuffer& c : cols_) {
    put_varint(head, c.size());
    total += c.size();
  }
  out->clear();
  out->reserve(head.size() + total);
  out->insert(out->end(), head.begin(), head.end());
  for (const ColumnBuffer& c : cols_) out->insert(out->end(), c.data(), c.data() + c.size());
}

// ---- decoder ---------------------------------------------------------------------------------

namespace {

using Cursor = ColumnCursor;

// The most varints one packed record reads from one column (a copy's three devices and three
// small values), hence the most bytes it moves that column's cursor: kMaxRecordRead.
constexpr size_t kMaxVarintsPerColumn = 3;
constexpr size_t kMaxRecordRead = 10 * kMaxVarintsPerColumn;
static_assert(kDecodePadding >= 16 * kMaxRecordRead, "a batch of BlockDecoder::decode is >= 16 records");

// Reads the varints of the records. kChecked: every varint read checks its cursor against
// `limit` first (a cursor at or past the payload's end makes the block bad at once). Unchecked
// (the fast path): the caller runs the records in batches short enough that no read can pass the
// payload's padding (see unpack_records), and cursors that passed `limit` make the block bad when
// the batch, or the block, ends. The varint loop itself is the same.
template <bool kChecked>
struct Reader {
  Cursor col[trace::kColumnCount];
  State st;
  const std::vector<trace::KernelConfigRec>* configs;
  const uint8_t* limit = nullptr;  // end of the payload: kDecodePadding readable bytes follow
  uint64_t unresolved = 0;
  bool bad = false;

  // One varint of column c. A cursor below `limit` can read a whole varint (10 bytes) without a
  // check per byte, even from the next column's bytes: the cursors are checked against their own
  // columns' ends once, after the block (a column that overran makes the block bad), and
  // `limit` (or the batch length) bounds every read to the payload and its padding.
  CT_FORCE_INLINE uint64_t get(Column c) {
    const uint8_t* p = col[c].p;
    if (kChecked && __builtin_expect(p >= limit, 0)) {
      bad = true;
      return 0;
    }
    uint64_t b = *p++;
    if (b < 0x80) {
      col[c].p = p;
      return b;
    }
    uint64_t v = b & 0x7F;
    for (unsigned shift = 7; shift < 70; shift += 7) {
      b = *p++;
      v |= (b & 0x7F) << shift;
      if (b < 0x80) {
        col[c].p = p;
        return v;
      }
    }
    col[c].p = p;
    bad = true;
    return 0;
  }
  void u(Column c, char* p, size_t size) { store(p, size, get(c)); }
  void z(Column c, char* p, size_t size) { store(p, size, uint64_t(unzigzag(get(c)))); }
  void delta(Column c, char* p, size_t size) {
    uint64_t v = st.prev[c] + uint64_t(unzigzag(get(c)));
    store(p, size, v);
    st.prev[c] = load(p, size);
  }
  CT_FORCE_INLINE void cpu_times(uint32_t tid, char* begin_p, char* end_p) {
    int64_t begin = int64_t(uint64_t(st.predict_cpu(tid)) + uint64_t(unzigzag(get(trace::kColCpuBegin))));
    int64_t end = int64_t(uint64_t(begin) + uint64_t(unzigzag(get(trace::kColCpuDuration))));
    store(begin_p, 8, uint64_t(begin));
    store(end_p, 8, uint64_t(end));
    st.saw_cpu(tid, begin);
  }
  CT_FORCE_INLINE void gpu_times(uint64_t lane, int64_t cpu_end, char* start_p, char* end_p) {
    uint64_t s = get(trace::kColGpuStart), e = get(trace::kColGpuDuration);
    int64_t start = s ? int64_t(uint64_t(st.predict_gpu(lane, cpu_end)) + uint64_t(unzigzag(s - 1))) : 0;
    int64_t base = start ? start : cpu_end;
    int64_t end = e ? int64_t(uint64_t(base) + uint64_t(unzigzag(e - 1))) : 0;
    store(start_p, 8, uint64_t(start));
    store(end_p, 8, uint64_t(end));
    if (end) st.gpu.set(lane, end);
  }
  void config(char* p) {
    uint64_t id = get(trace::kColConfig);
    if (id >= 1 && id <= configs->size() && (*configs)[id - 1].h.size != 0) {
      copy_words<kConfigBytes>(
          p, reinterpret_cast<const char*>(&(*configs)[id - 1]) + offsetof(trace::KernelConfigRec, name_id));
    } else {
      copy_words<kConfigBytes>(p, nullptr);
      ++unresolved;  // its KernelConfig was in a lost block: name_id 0, zero dimensions
    }
  }
};

// One packed record of struct R at dst: zeroed (pads, fields a lost config leaves unset), its
// header, then its fields. sizeof(R) is a constant here, so the zeroing is a few stores.
template <class R, class Rd>
CT_FORCE_INLINE void unpack(Rd& rd, trace::RecType type, char* dst, void (*code)(Rd&, char*)) {
  copy_words<sizeof(R)>(dst, nullptr);
  trace::RecHeader h{uint16_t(type), uint16_t(sizeof(R))};
  std::memcpy(dst, &h, sizeof h);
  code(rd, dst);
}

// Where the records of a payload go: out grows as needed (never shrinks), up to
// trace::kMaxBlockDecoded bytes.
struct Output {
  std::vector<char>* out;
  size_t used = 0;
  CT_FORCE_INLINE char* room(size_t size) {
    if (used + size > trace::kMaxBlockDecoded) return nullptr;
    if (out->size() < used + size) {
      out->resize(std::max(used + size, std::min<size_t>(2 * out->size() + 4096, trace::kMaxBlockDecoded)));
    }
    char* at = out->data() + used;
    used += size;
    return at;
  }
};

// unpack() into room taken from out; false when there is none left.
template <class R, class Rd>
CT_FORCE_INLINE bool unpack_into(Rd& rd, trace::RecType type, Output& out, void (*code)(Rd&, char*)) {
  char* dst = out.room(sizeof(R));
  if (!dst) return false;
  unpack<R>(rd, type, dst, code);
  return true;
}

// One packed record of type `tag` (one switch: its size and its layout). False for a type
// this reader does not know, or no room left.
template <class Rd>
CT_FORCE_INLINE bool unpack_packed(Rd& rd, uint8_t tag, Output& out) {
  using T = trace::RecType;
  char* dst;
  switch (static_cast<T>(tag)) {
    case T::Kernel: {  // every byte is written but the pad: no zeroing first (-0.8 % of instructions)
      if (!(dst = out.room(sizeof(trace::KernelRec)))) return false;
      trace::RecHeader h{uint16_t(T::Kernel), uint16_t(sizeof(trace::KernelRec))};
      std::memcpy(dst, &h, sizeof h);
      store(dst + offsetof(trace::KernelRec, op) + offsetof(trace::OpCommon, pad), 2, 0);
      code_kernel(rd, dst);
      static_assert(offsetof(trace::KernelRec, op) == sizeof(trace::RecHeader) &&
                    offsetof(trace::KernelRec, name_id) + kConfigBytes == sizeof(trace::KernelRec));
      return true;
    }
    case T::Memcpy: return unpack_into<trace::MemcpyRec>(rd, T::Memcpy, out, code_memcpy<Rd>);
    case T::Memset: return unpack_into<trace::MemsetRec>(rd, T::Memset, out, code_memset<Rd>);
    case T::Sync: return unpack_into<trace::SyncRec>(rd, T::Sync, out, code_sync<Rd>);
    case T::Memory: return unpack_into<trace::MemoryRec>(rd, T::Memory, out, code_memory<Rd>);
    case T::Api: return unpack_into<trace::ApiRec>(rd, T::Api, out, code_api<Rd>);
    default: return false;  // a packed type this reader does not know (packed_size() lists them)
  }
}

}  // namespace

// The records of a payload whose columns are `cols`, into *out (see decode()). Fast path
// (kChecked false): the records run in batches, and before each batch the cursor furthest into
// the payload is at most at its end; a record moves any cursor at most kMaxRecordRead bytes, so a
// batch of (limit + kDecodePadding - furthest) / kMaxRecordRead records reads nothing past the
// padding, and the varint reads need no check of their own (with the one switch of
// unpack_packed: -4.5 % of `cutrace summary`'s instructions, bench/RESULTS-format.md section 6).
// KernelConfig records found on the way go into configs_, the fast path logging what they replace
// in undo_: when it fails, decode() undoes them and decodes the block again with every check,
// which fails where it always did (a bad block keeps the configs before its failing record).
template <bool kChecked>
bool BlockDecoder::unpack_records(const Cursor* cols, const char* payload_end, std::vector<char>* out,
                                  size_t* out_size) {
  Reader<kChecked> rd;
  rd.st.reset();
  rd.configs = &configs_;
  std::copy(cols, cols + trace::kColumnCount, rd.col);
  rd.limit = reinterpret_cast<const uint8_t*>(payload_end);
  Output o{out};
  Cursor& tags = rd.col[trace::kColTag];
  Cursor& verb = rd.col[trace::kColVerbatim];
  while (tags.p < tags.end) {
    const uint8_t* batch_end = tags.end;
    if (!kChecked) {
      const uint8_t* furthest = rd.col[trace::kColVerbatim + 1].p;
      for (int i = trace::kColVerbatim + 2; i < trace::kColumnCount; ++i) furthest = std::max(furthest, rd.col[i].p);
      if (furthest > rd.limit) return false;  // a column overran: it fails the end-of-block test anyway
      size_t batch = size_t(rd.limit + kDecodePadding - furthest) / kMaxRecordRead;
      if (size_t(tags.end - tags.p) > batch) batch_end = tags.p + batch;
    }
    while (tags.p < batch_end) {
      uint8_t tag = *tags.p++;
      if (tag != 0) {
        if (!unpack_packed(rd, tag, o)) return false;
        if (kChecked && rd.bad) return false;
        continue;
      }
      trace::RecHeader h;
      if (verb.end - verb.p < ptrdiff_t(sizeof h)) return false;
      std::memcpy(&h, verb.p, sizeof h);
      if (h.size < sizeof h || h.size > verb.end - verb.p) return false;
      const char* rec = reinterpret_cast<const char*>(verb.p);
      verb.p += h.size;
      if (h.type == uint16_t(trace::RecType::KernelConfig) && h.size >= sizeof(trace::KernelConfigRec)) {
        trace::KernelConfigRec c;
        std::memcpy(&c, rec, sizeof c);
        if (c.id == 0 || c.id > trace::kMaxKernelConfigs) return false;
        if (configs_.size() < c.id) configs_.resize(c.id);
        if (!kChecked && c.id - 1 < undo_size_) undo_.emplace_back(c.id - 1, configs_[c.id - 1]);
        configs_[c.id - 1] = c;
        continue;
      }
      char* dst = o.room(h.size);
      if (!dst) return false;
      std::memcpy(dst, rec, h.size);
    }
    if (rd.bad) return false;
  }
  for (int i = 0; i < trace::kColumnCount; ++i) {
    if (rd.col[i].p > rd.col[i].end) return false;  // read past its column (see Reader::get)
  }
  *out_size = o.used;
  unresolved_ += rd.unresolved;
  return true;
}

bool BlockDecoder::decode(const char* payload, size_t n, std::vector<char>* out, size_t* out_size, ColumnSizes* sizes) {
  Reader<true> rd;  // reads the column lengths
  Cursor head{reinterpret_cast<const uint8_t*>(payload), reinterpret_cast<const uint8_t*>(payload) + n};
  rd.col[0] = head;
  rd.limit = head.end;
  uint64_t ncols = rd.get(trace::kColTag);
  if (rd.bad || ncols < trace::kColumnCount || ncols > 255) return false;
  uint64_t lens[256];
  uint64_t total = 0;
  for (uint64_t i = 0; i < ncols; ++i) {
    lens[i] = rd.get(trace::kColTag);
    total += lens[i];
    if (rd.bad || lens[i] > n || total > n) return false;
  }
  const uint8_t* p = rd.col[0].p;
  if (total != uint64_t(rd.col[0].end - p)) return false;
  Cursor cols[trace::kColumnCount];
  for (uint64_t i = 0; i < ncols; ++i) {  // columns of a later minor version are skipped
    if (i < trace::kColumnCount) {
      cols[i] = Cursor{p, p + lens[i]};
    }
    p += lens[i];
  }

  undo_size_ = configs_.size();
  undo_.clear();
  if (!unpack_records<false>(cols, payload + n, out, out_size)) {
    // Undo the fast path's KernelConfig records, then decode again with every check.
    configs_.resize(undo_size_);
    for (size_t i = undo_.size(); i-- > 0;) configs_[undo_[i].first] = undo_[i].second;
    if (!unpack_records<true>(cols, payload + n, out, out_size)) return false;
  }
  if (sizes) {
    for (int i = 0; i < trace::kColumnCount; ++i) sizes->bytes[i] += lens[i];
  }
  return true;
}

}  // namespace cutrace::codec
