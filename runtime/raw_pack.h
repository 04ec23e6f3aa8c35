// The packed form of RawRecord in a thread's chunks (runtime/record_buffer.h): a head that gives the
// kind and the size, then only the fields that kind uses. A kernel launch takes 62 bytes with
// CUPTI timing and 66 with end events (128 as a RawRecord). Written by the owner thread, read by the
// collector (unpack), both in this process: native byte order, no alignment.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include "runtime/raw.h"

namespace cutrace {

#pragma pack(push, 1)
struct PackedHead {
  uint8_t kind;  // RawKind
  uint8_t sub;
  uint16_t flags;  // RawFlags, and the kPk* presence bits below
  uint16_t api;
  uint16_t size;  // bytes of the whole packed record
};
static_assert(sizeof(PackedHead) == 8);

// Driver calls (kernel .. stream wait): what every call has.
struct PackedCall {
  PackedHead h;
  uint64_t t0;
  uint32_t dt;  // t1 - t0 in ticks (kPkLongCall: the full difference follows instead)
  int32_t result;
  uint64_t stream;
};
static_assert(sizeof(PackedCall) == 32);
#pragma pack(pop)

// Presence bits of optional fields, in PackedHead::flags only (RawFlags stay below bit 12).
enum PackFlags : uint16_t {
  kPkEvStart = 1 << 12,     // u64 ev_start follows
  kPkEvEnd = 1 << 13,       // u64 ev_end follows
  kPkLongCall = 1 << 14,    // u64 t1 - t0 follows (the call took 2^32 ticks or more)
  kPkWideConfig = 1 << 15,  // kernel dimensions as u32 each (one did not fit 16 bits)
};
inline constexpr uint16_t kPkMask = 0xF000;

inline constexpr uint32_t kMaxCallBytes = 96;             // the largest packed call record
inline constexpr uint32_t kMaxInlineName = 16384;         // copied names longer than this are cut
inline constexpr uint32_t kNoteFixedBytes = 16 + 25 + 2;  // head, t0, named-note fields, name length
inline constexpr uint32_t kNotePayloadBytes = 9;          // payload type and bits (kRawPayload)

namespace pk {
template <class T>
inline uint8_t* put(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}
template <class T>
inline const uint8_t* get(const uint8_t* p, T* v) {
  std::memcpy(v, p, sizeof *v);
  return p + sizeof *v;
}
inline uint64_t u64(const void* ptr) { return reinterpret_cast<uint64_t>(ptr); }
}  // namespace pk

// Packs a driver call's record into `out` (at least kMaxCallBytes); returns its size.
inline uint32_t pack_call(const RawRecord& r, uint8_t* out) {
  using namespace pk;
  uint16_t flags = uint16_t(r.flags & ~kPkMask);
  uint64_t dt = r.t1 - r.t0;
  if (r.ev_start) flags |= kPkEvStart;
  if (r.ev_end) flags |= kPkEvEnd;
  if (dt > UINT32_MAX) flags |= kPkLongCall;
  const bool kernel = r.kind == RawKind::Kernel;
  if (kernel && (r.kernel.grid[1] > 0xFFFF || r.kernel.grid[2] > 0xFFFF || r.kernel.block[0] > 0xFFFF ||
                 r.kernel.block[1] > 0xFFFF || r.kernel.block[2] > 0xFFFF))
    flags |= kPkWideConfig;
  uint8_t* p = out + sizeof(PackedCall);
  if (flags & kRawCupti) p = put(p, r.cupti_corr);
  if (flags & kPkEvStart) p = put(p, u64(r.ev_start));
  if (flags & kPkEvEnd) p = put(p, u64(r.ev_end));
  if (flags & kPkLongCall) p = put(p, dt);
  switch (r.kind) {
    case RawKind::Kernel:
      p = put(p, u64(r.kernel.func));
      p = put(p, r.kernel.grid[0]);
      if (flags & kPkWideConfig) {
        p = put(p, r.kernel.grid[1]), p = put(p, r.kernel.grid[2]);
        for (uint32_t b : r.kernel.block) p = put(p, b);
      } else {
        p = put(p, uint16_t(r.kernel.grid[1])), p = put(p, uint16_t(r.kernel.grid[2]));
        for (uint32_t b : r.kernel.block) p = put(p, uint16_t(b));
      }
      p = put(p, r.kernel.shmem);
      break;
    case RawKind::Memcpy:
      p = put(p, r.copy.bytes), p = put(p, r.copy.src), p = put(p, r.copy.dst);
      p = put(p, r.copy.copy_kind), p = put(p, r.copy.src_kind), p = put(p, r.copy.dst_kind);
      break;
    case RawKind::Memset: p = put(p, r.set.bytes), p = put(p, r.set.value), p = put(p, r.set.elem); break;
    case RawKind::Memory: p = put(p, r.mem.address), p = put(p, r.mem.bytes), p = put(p, r.mem.mem_kind); break;
    default:  // Sync, EventRecord, StreamWait
      p = put(p, u64(r.ev.event));
      break;
  }
  PackedCall c;
  c.h = {uint8_t(r.kind), r.sub, flags, r.api, uint16_t(p - out)};
  c.t0 = r.t0;
  c.dt = uint32_t(dt > UINT32_MAX ? UINT32_MAX : dt);
  c.result = r.result;
  c.stream = u64(r.stream);
  std::memcpy(out, &c, sizeof c);
  return uint32_t(p - out);
}

// Size of a copied name as stored: at most kMaxInlineName bytes, cut before a UTF-8 continuation.
inline uint32_t inline_name_len(const char* s, size_t n) {
  if (n <= kMaxInlineName) return uint32_t(n);
  uint32_t cut = kMaxInlineName;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

// Annotation records (range push/start/pop/end, mark, thread name), window edges and context
// changes. A copied name (kRawNameSlot) follows the fixed fields; otherwise its stable pointer;
// then, with kRawPayload, the payload (kNotePayloadBytes).
// `name_len`: the stored length of a copied name (inline_name_len). Returns the size.
inline uint32_t pack_note(const RawRecord& r, const char* name, uint32_t name_len, uint8_t* out) {
  using namespace pk;
  uint8_t* p = out + sizeof(PackedHead);
  p = put(p, r.t0);
  switch (r.kind) {
    case RawKind::RangePop:
    case RawKind::RangeEnd: p = put(p, r.nvtx.id), p = put(p, u64(r.nvtx.domain)), p = put(p, r.nvtx.source); break;
    case RawKind::Window: p = put(p, u64(r.nvtx.name)); break;
    case RawKind::Context: p = put(p, u64(r.ctx)); break;
    default:  // RangePush, RangeStart, Mark, ThreadName, CategoryName
      p = put(p, r.nvtx.id), p = put(p, u64(r.nvtx.domain)), p = put(p, r.nvtx.category);
      p = put(p, r.nvtx.color), p = put(p, r.nvtx.source);
      if (r.flags & kRawNameSlot) {
        p = put(p, uint16_t(name_len));
        std::memcpy(p, name, name_len);
        p += name_len;
      } else {
        p = put(p, u64(r.nvtx.name));
      }
      if (r.flags & kRawPayload) p = put(p, r.nvtx.payload_type), p = put(p, r.nvtx.payload);
      break;
  }
  PackedHead h{uint8_t(r.kind), r.sub, r.flags, r.api, uint16_t(p - out)};
  std::memcpy(out, &h, sizeof h);
  return uint32_t(p - out);
}

// Collector: the record at `p` (size from its head); `name` receives a copied name.
inline void unpack(const uint8_t* p, RawRecord* r, std::string* name) {
  using namespace pk;
  PackedHead h;
  std::memcpy(&h, p, sizeof h);
  std::memset(static_cast<void*>(r), 0, sizeof *r);
  r->kind = RawKind(h.kind), r->sub = h.sub, r->flags = uint16_t(h.flags & ~kPkMask), r->api = h.api;
  const bool call = h.kind >= uint8_t(RawKind::Kernel) && h.kind <= uint8_t(RawKind::StreamWait);
  if (!call) {
    const uint8_t* q = get(p + sizeof h, &r->t0);
    r->t1 = r->t0;
    uint64_t v = 0;
    switch (r->kind) {
      case RawKind::RangePop:
      case RawKind::RangeEnd:
        q = get(q, &r->nvtx.id), q = get(q, &v), q = get(q, &r->nvtx.source);
        r->nvtx.domain = reinterpret_cast<const void*>(v);
        break;
      case RawKind::Window: get(q, &v), r->nvtx.name = reinterpret_cast<const char*>(v); break;
      case RawKind::Context: get(q, &v), r->ctx = reinterpret_cast<CUcontext>(v); break;
      default: {
        q = get(q, &r->nvtx.id), q = get(q, &v);
        r->nvtx.domain = reinterpret_cast<const void*>(v);
        q = get(q, &r->nvtx.category), q = get(q, &r->nvtx.color), q = get(q, &r->nvtx.source);
        if (h.flags & kRawNameSlot) {
          uint16_t n;
          q = get(q, &n);
          name->assign(reinterpret_cast<const char*>(q), n);
          q += n;
        } else {
          q = get(q, &v);
          r->nvtx.name = reinterpret_cast<const char*>(v);
        }
        if (h.flags & kRawPayload) q = get(q, &r->nvtx.payload_type), get(q, &r->nvtx.payload);
        break;
      }
    }
    return;
  }
  PackedCall c;
  std::memcpy(&c, p, sizeof c);
  r->t0 = c.t0, r->t1 = c.t0 + c.dt, r->result = c.result;
  r->stream = reinterpret_cast<CUstream>(c.stream);
  const uint8_t* q = p + sizeof c;
  uint64_t v = 0;
  if (h.flags & kRawCupti) q = get(q, &r->cupti_corr);
  if (h.flags & kPkEvStart) q = get(q, &v), r->ev_start = reinterpret_cast<CUevent>(v);
  if (h.flags & kPkEvEnd) q = get(q, &v), r->ev_end = reinterpret_cast<CUevent>(v);
  if (h.flags & kPkLongCall) q = get(q, &v), r->t1 = r->t0 + v;
  switch (r->kind) {
    case RawKind::Kernel: {
      q = get(q, &v), r->kernel.func = reinterpret_cast<void*>(v);
      q = get(q, &r->kernel.grid[0]);
      if (h.flags & kPkWideConfig) {
        q = get(q, &r->kernel.grid[1]), q = get(q, &r->kernel.grid[2]);
        for (uint32_t& b : r->kernel.block) q = get(q, &b);
      } else {
        uint16_t d;
        q = get(q, &d), r->kernel.grid[1] = d;
        q = get(q, &d), r->kernel.grid[2] = d;
        for (uint32_t& b : r->kernel.block) q = get(q, &d), b = d;
      }
      get(q, &r->kernel.shmem);
      break;
    }
    case RawKind::Memcpy:
      q = get(q, &r->copy.bytes), q = get(q, &r->copy.src), q = get(q, &r->copy.dst);
      q = get(q, &r->copy.copy_kind), q = get(q, &r->copy.src_kind), get(q, &r->copy.dst_kind);
      break;
    case RawKind::Memset: q = get(q, &r->set.bytes), q = get(q, &r->set.value), get(q, &r->set.elem); break;
    case RawKind::Memory: q = get(q, &r->mem.address), q = get(q, &r->mem.bytes), get(q, &r->mem.mem_kind); break;
    default: get(q, &v), r->ev.event = reinterpret_cast<CUevent>(v); break;
  }
}

inline uint16_t packed_size(const uint8_t* p) {
  PackedHead h;
  std::memcpy(&h, p, sizeof h);
  return h.size;
}

}  // namespace cutrace
