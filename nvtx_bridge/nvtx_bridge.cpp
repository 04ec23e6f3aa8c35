// NVTX injection: every NVTX copy in the process (each library embeds its own) finds this
// library through NVTX_INJECTION64_PATH, calls InitializeInjectionNvtx2 once, and from then on
// sends its push/pop, start/end, marks, domains, registered strings and thread names here.
// The same records are produced by cutrace's own C API (cutrace_api.h), used by the Python module.
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <nvtx3/nvToolsExtSync.h>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include "collector/nvtx_meta.h"
#include "nvtx_bridge/cutrace_api.h"
#include "runtime/config.h"
#include "runtime/thread_state.h"
#include "runtime/ticks.h"
#include "shim/capture.h"
#include "shim/op.h"
#include "trace/format.h"

namespace cutrace {
namespace {

using trace::RangeSource;

// Domains and registered strings are handles we hand out: pointers to stable copies.
struct Domain {
  std::string name;
};
std::mutex g_handles_mu;  // registration only (rare, never per event)

const char* stable_copy(const char* s) {
  static auto* pool = new std::unordered_map<std::string, std::string*>();
  std::lock_guard<std::mutex> l(g_handles_mu);
  auto it = pool->find(s ? s : "");
  if (it == pool->end()) it = pool->emplace(s ? s : "", new std::string(s ? s : "")).first;
  return it->second->c_str();
}

std::atomic<uint64_t> g_range_ids{1};

// An annotation's text as emit() takes it: a stable pointer (registered strings, handles,
// literals; flags 0), or `len` bytes to copy into the record (kRawNameSlot, maybe kRawNameCut).
struct Name {
  const char* s = nullptr;
  uint32_t len = 0;
  uint16_t flags = 0;
};
Name stable_name(const char* s) { return {s, 0, 0}; }
Name copied_name(const char* s) {
  if (!s) return {};
  size_t full = strlen(s);
  uint32_t n = inline_name_len(s, full);
  return {s, n, uint16_t(kRawNameSlot | (n < full ? kRawNameCut : 0))};
}

// One code point as UTF-8 into e[0, 4); returns its length. Invalid ones become U+FFFD.
uint32_t encode_utf8(uint32_t c, char* e) {
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
  uint32_t k = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  if (k == 1) {
    e[0] = char(c);
    return 1;
  }
  for (uint32_t i = k - 1; i > 0; --i, c >>= 6) e[i] = char(0x80 | (c & 0x3F));
  e[0] = char((k == 2 ? 0xC0 : k == 3 ? 0xE0 : 0xF0) | c);
  return k;
}
// UTF-8 of a wide (UTF-32 on Linux) string into buf[0, cap), NUL-terminated, cut on a character
// boundary when it does not fit (*cut set).
uint32_t to_utf8(const wchar_t* w, char* buf, uint32_t cap, bool* cut) {
  uint32_t n = 0;
  *cut = false;
  char e[4];
  for (; w && *w; ++w) {
    uint32_t k = encode_utf8(uint32_t(*w), e);
    if (n + k >= cap) {
      *cut = true;
      break;
    }
    memcpy(buf + n, e, k), n += k;
  }
  buf[n] = 0;
  return n;
}
std::string utf8(const wchar_t* w) {  // registration only (domains, strings, category names)
  std::string out;
  char e[4];
  for (; w && *w; ++w) out.append(e, encode_utf8(uint32_t(*w), e));
  return out;
}
// A wide message converted on the caller's stack (kMaxInlineName bytes at most, as copied names).
struct WideText {
  char buf[kMaxInlineName + 1];
  Name name(const wchar_t* w) {
    if (!w) return {};
    bool cut;
    uint32_t n = to_utf8(w, buf, sizeof buf, &cut);
    return {buf, n, uint16_t(kRawNameSlot | (cut ? kRawNameCut : 0))};
  }
};

// An event attribute's scalar payload: type 0 for none (or a type this version does not know).
struct Payload {
  uint8_t type = 0;
  uint64_t bits = 0;  // as trace::PayloadRec::bits
};

// One annotation record. Returns whether it was recorded. `force` records even outside a capture
// window (the pop of a range whose push was recorded). `sub`: a CategoryName's NvtxResource when
// it names a CUDA resource instead of a category. kPayload false (emit()): no payload, and the
// code is that of a record without one (no test, no extra bytes); true: `pl` is recorded.
template <bool kPayload>
__attribute__((always_inline)) inline bool emit_note(RawKind kind, Name nm, uint64_t id, const void* domain,
                                                     uint32_t category, uint32_t color, RangeSource source, bool force,
                                                     Payload pl, uint8_t sub) {
  if ((!force && !capture_on()) || t_in_shim) return false;
  ThreadState* ts = thread_state();
  if (!ts || !enter_record(ts, kind, force)) return false;
  const bool copy = nm.flags & kRawNameSlot;
  const bool end = kind == RawKind::RangePop || kind == RawKind::RangeEnd;
  uint8_t* p = ts->reserve(
      end ? 33 : (copy ? kNoteFixedBytes + nm.len : kNoteFixedBytes + 6) + (kPayload ? kNotePayloadBytes : 0));
  if (!p) {
    ts->count_lost(kind);
    leave_record(ts);
    return false;
  }
  RawRecord r;
  r.kind = kind;
  r.sub = sub;
  r.api = 0;
  r.flags = kPayload ? uint16_t(nm.flags | kRawPayload) : uint16_t(nm.flags & ~kRawPayload);
  if (kPayload) r.nvtx.payload_type = pl.type, r.nvtx.payload = pl.bits;
  r.nvtx.name = copy ? nullptr : nm.s;
  r.nvtx.id = id, r.nvtx.domain = domain, r.nvtx.category = category, r.nvtx.color = color;
  r.nvtx.source = uint8_t(source);
  r.t0 = ticks();
  ts->commit(pack_note(r, nm.s, nm.len, p));
  leave_record(ts);
  return true;
}
bool emit(RawKind kind, Name nm, uint64_t id, const void* domain, uint32_t category, uint32_t color, RangeSource source,
          bool force = false) {
  return emit_note<false>(kind, nm, id, domain, category, color, source, force, {}, 0);
}
bool emit_payload(RawKind kind, Name nm, uint64_t id, const void* domain, uint32_t category, uint32_t color,
                  RangeSource source, Payload pl) {
  return emit_note<true>(kind, nm, id, domain, category, color, source, false, pl, 0);
}
// Records the payload when there is one (an event attribute's), else exactly as emit().
bool emit_maybe_payload(RawKind kind, Name nm, uint64_t id, const void* domain, uint32_t category, uint32_t color,
                        RangeSource source, Payload pl) {
  return pl.type ? emit_payload(kind, nm, id, domain, category, color, source, pl)
                 : emit(kind, nm, id, domain, category, color, source);
}

// An event attribute's message other than a UNICODE one.
Name message(const nvtxEventAttributes_t* a) {
  if (!a) return {};
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
    return stable_name(reinterpret_cast<const char*>(a->message.registered));
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return copied_name(a->message.ascii);
  return {};  // UNICODE: the callers' wide path; unknown types carry no text
}
uint32_t color(const nvtxEventAttributes_t* a) { return a && a->colorType == NVTX_COLOR_ARGB ? a->color : 0; }
uint32_t category(const nvtxEventAttributes_t* a) { return a ? a->category : 0; }
bool is_unicode(const nvtxEventAttributes_t* a) { return a && a->messageType == NVTX_MESSAGE_TYPE_UNICODE; }
Payload payload(const nvtxEventAttributes_t* a) {
  if (!a) return {};
  const auto& v = a->payload;
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: return {uint8_t(trace::PayloadType::U64), v.ullValue};
    case NVTX_PAYLOAD_TYPE_INT64: return {uint8_t(trace::PayloadType::I64), uint64_t(v.llValue)};
    case NVTX_PAYLOAD_TYPE_DOUBLE: {
      uint64_t b;
      memcpy(&b, &v.dValue, sizeof b);
      return {uint8_t(trace::PayloadType::F64), b};
    }
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: return {uint8_t(trace::PayloadType::U32), v.uiValue};
    case NVTX_PAYLOAD_TYPE_INT32: return {uint8_t(trace::PayloadType::I32), uint64_t(int64_t(v.iValue))};
    case NVTX_PAYLOAD_TYPE_FLOAT: {
      uint32_t b;
      memcpy(&b, &v.fValue, sizeof b);
      return {uint8_t(trace::PayloadType::F32), b};
    }
    default: return {};
  }
}

// Push/pop nest per (thread, domain). A push record carries its level in `id`, a pop the level it
// ends: the collector pairs them by level (a pop whose push was not captured closes nothing).
// kPayload: the range has a payload `pl` (push<false>: the code of a push without one).
template <bool kPayload = false>
int push(Name nm, const void* domain, uint32_t cat, uint32_t col, RangeSource src, Payload pl = {}) {
  ThreadState* ts = t_in_shim ? nullptr : thread_state();
  NvtxLevels* l = ts ? ts->nvtx.find(domain) : nullptr;
  const int depth = l ? l->depth : 0;
  // May open a capture window (CUTRACE_CAPTURE_RANGE=nvtx); a converted wide name is NUL-terminated.
  capture_nvtx_push(nm.s, domain, l ? depth : -1);
  bool recorded = kPayload ? emit_payload(RawKind::RangePush, nm, uint64_t(depth), domain, cat, col, src, pl)
                           : emit(RawKind::RangePush, nm, uint64_t(depth), domain, cat, col, src);
  if (!l) return depth;
  l->set(depth, recorded);  // false (no memory): the pop is not recorded, the range stays open
  l->depth = depth + 1;
  return depth;
}
int pop(const void* domain, RangeSource src) {
  ThreadState* ts = t_state;
  NvtxLevels* l = ts && !t_in_shim ? ts->nvtx.find(domain) : nullptr;
  if (!l || l->depth == 0) return -1;  // nothing open in this domain: ends nothing
  const int depth = --l->depth;
  if (l->recorded(depth)) emit(RawKind::RangePop, {}, uint64_t(depth), domain, 0, 0, src, /*force=*/true);
  capture_nvtx_pop(domain, depth);  // may close the window
  return depth;
}
template <bool kPayload = false>
uint64_t start(Name nm, const void* domain, uint32_t cat, uint32_t col, RangeSource src, Payload pl = {}) {
  uint64_t id = g_range_ids.fetch_add(1, std::memory_order_relaxed);
  if (kPayload) emit_payload(RawKind::RangeStart, nm, id, domain, cat, col, src, pl);
  else emit(RawKind::RangeStart, nm, id, domain, cat, col, src);
  return id;
}
void end(uint64_t id, RangeSource src) { emit(RawKind::RangeEnd, {}, id, nullptr, 0, 0, src); }

// ---- NVTX callbacks (domain module; the core Ex callbacks are its default domain) ----
// A UNICODE message needs a conversion buffer: those calls take the out-of-line wide path.
__attribute__((noinline)) void mark_wide(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  WideText w;
  emit_maybe_payload(RawKind::Mark, w.name(a->message.unicode), 0, d, category(a), color(a), RangeSource::Nvtx,
                     payload(a));
}
__attribute__((noinline)) uint64_t start_wide(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  WideText w;
  const Payload pl = payload(a);
  return pl.type ? start<true>(w.name(a->message.unicode), d, category(a), color(a), RangeSource::Nvtx, pl)
                 : start(w.name(a->message.unicode), d, category(a), color(a), RangeSource::Nvtx);
}
__attribute__((noinline)) int push_wide(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  WideText w;
  const Payload pl = payload(a);
  return pl.type ? push<true>(w.name(a->message.unicode), d, category(a), color(a), RangeSource::Nvtx, pl)
                 : push(w.name(a->message.unicode), d, category(a), color(a), RangeSource::Nvtx);
}
void NVTX_API DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  if (is_unicode(a)) return mark_wide(d, a);
  emit_maybe_payload(RawKind::Mark, message(a), 0, d, category(a), color(a), RangeSource::Nvtx, payload(a));
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  if (is_unicode(a)) return start_wide(d, a);
  const Payload pl = payload(a);
  return pl.type ? start<true>(message(a), d, category(a), color(a), RangeSource::Nvtx, pl)
                 : start(message(a), d, category(a), color(a), RangeSource::Nvtx);
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id, RangeSource::Nvtx); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  if (is_unicode(a)) return push_wide(d, a);
  const Payload pl = payload(a);
  return pl.type ? push<true>(message(a), d, category(a), color(a), RangeSource::Nvtx, pl)
                 : push(message(a), d, category(a), color(a), RangeSource::Nvtx);
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t d) { return pop(d, RangeSource::Nvtx); }
// Names (categories, threads) hold for the whole trace: recorded outside capture windows too.
void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t id, const char* name) {
  emit(RawKind::CategoryName, copied_name(name), id, d, 0, 0, RangeSource::Nvtx, /*force=*/true);
}
void NVTX_API DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t id, const wchar_t* name) {
  WideText w;
  emit(RawKind::CategoryName, w.name(name), id, d, 0, 0, RangeSource::Nvtx, /*force=*/true);
}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(stable_copy(s)));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(stable_copy(utf8(s).c_str())));
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  // The handle is the domain's stable name: the collector interns it as the domain's string.
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(stable_copy(name)));
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(stable_copy(utf8(name).c_str())));
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}
void NVTX_API Initialize(const void*) {}

// ---- NVTX callbacks (core module) ----
void NVTX_API MarkEx(const nvtxEventAttributes_t* a) { DomainMarkEx(nullptr, a); }
void NVTX_API MarkA(const char* m) { emit(RawKind::Mark, copied_name(m), 0, nullptr, 0, 0, RangeSource::Nvtx); }
void NVTX_API MarkW(const wchar_t* m) {
  WideText w;
  emit(RawKind::Mark, w.name(m), 0, nullptr, 0, 0, RangeSource::Nvtx);
}
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) { return DomainRangeStartEx(nullptr, a); }
nvtxRangeId_t NVTX_API RangeStartA(const char* m) { return start(copied_name(m), nullptr, 0, 0, RangeSource::Nvtx); }
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) {
  WideText w;
  return start(w.name(m), nullptr, 0, 0, RangeSource::Nvtx);
}
void NVTX_API RangeEnd(nvtxRangeId_t id) { end(id, RangeSource::Nvtx); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) { return DomainRangePushEx(nullptr, a); }
int NVTX_API RangePushA(const char* m) { return push(copied_name(m), nullptr, 0, 0, RangeSource::Nvtx); }
int NVTX_API RangePushW(const wchar_t* m) {
  WideText w;
  return push(w.name(m), nullptr, 0, 0, RangeSource::Nvtx);
}
int NVTX_API RangePop() { return pop(nullptr, RangeSource::Nvtx); }
void NVTX_API NameCategoryA(uint32_t id, const char* name) { DomainNameCategoryA(nullptr, id, name); }
void NVTX_API NameCategoryW(uint32_t id, const wchar_t* name) { DomainNameCategoryW(nullptr, id, name); }
void NVTX_API NameOsThreadA(uint32_t tid, const char* name) {
  emit(RawKind::ThreadName, copied_name(name), tid, nullptr, 0, 0, RangeSource::Nvtx, /*force=*/true);
}
void NVTX_API NameOsThreadW(uint32_t tid, const wchar_t* name) {
  WideText w;
  emit(RawKind::ThreadName, w.name(name), tid, nullptr, 0, 0, RangeSource::Nvtx, /*force=*/true);
}

// ---- Sync-user objects (module SYNC) and nvtxDomainResourceCreate ----
// Each event becomes a mark in the object's domain named "<name>: <event>" (a resource's also
// carries its identifier as a u64 payload). Handles point to stable structs made at creation
// (rare: allocation is fine there) holding every mark name; they are never freed, as names
// handed out are not.
enum SyncEvent {
  kSyncAcquireStart,
  kSyncAcquireFailed,
  kSyncAcquireSuccess,
  kSyncReleasing,
  kSyncDestroyed,
  kSyncEvents
};
const char* const kSyncEventNames[kSyncEvents] = {"acquire start", "acquire failed", "acquire success", "releasing",
                                                  "destroyed"};
struct SyncUser {
  const void* domain;
  const char* names[kSyncEvents];
};
struct Resource {
  const void* domain;
  const char* created;
  const char* destroyed;
  uint64_t id;
};
// The UTF-8 text of a message (registration only).
std::string message_text(int32_t type, const nvtxMessageValue_t& m) {
  if (type == NVTX_MESSAGE_TYPE_ASCII) return m.ascii ? m.ascii : "";
  if (type == NVTX_MESSAGE_TYPE_UNICODE) return utf8(m.unicode);
  if (type == NVTX_MESSAGE_TYPE_REGISTERED && m.registered) return reinterpret_cast<const char*>(m.registered);
  return "";
}
nvtxSyncUser_t NVTX_API SyncUserCreate(nvtxDomainHandle_t d, const nvtxSyncUserAttributes_t* a) {
  std::string name = a ? message_text(a->messageType, a->message) : "";
  auto* u = new SyncUser{d, {}};
  for (int e = 0; e < kSyncEvents; ++e) u->names[e] = stable_copy((name + ": " + kSyncEventNames[e]).c_str());
  return reinterpret_cast<nvtxSyncUser_t>(u);
}
void sync_event(nvtxSyncUser_t h, SyncEvent e) {
  auto* u = reinterpret_cast<SyncUser*>(h);
  if (u) emit(RawKind::Mark, stable_name(u->names[e]), 0, u->domain, 0, 0, RangeSource::Nvtx);
}
void NVTX_API SyncUserDestroy(nvtxSyncUser_t h) {  // the handle ends here; its names are stable copies
  sync_event(h, kSyncDestroyed);
  delete reinterpret_cast<SyncUser*>(h);
}
void NVTX_API SyncUserAcquireStart(nvtxSyncUser_t h) { sync_event(h, kSyncAcquireStart); }
void NVTX_API SyncUserAcquireFailed(nvtxSyncUser_t h) { sync_event(h, kSyncAcquireFailed); }
void NVTX_API SyncUserAcquireSuccess(nvtxSyncUser_t h) { sync_event(h, kSyncAcquireSuccess); }
void NVTX_API SyncUserReleasing(nvtxSyncUser_t h) { sync_event(h, kSyncReleasing); }
nvtxResourceHandle_t NVTX_API DomainResourceCreate(nvtxDomainHandle_t d, nvtxResourceAttributes_t* a) {
  std::string name = a ? message_text(a->messageType, a->message) : "";
  auto* r = new Resource{d, stable_copy((name + ": resource created").c_str()),
                         stable_copy((name + ": resource destroyed").c_str()), a ? a->identifier.ullValue : 0};
  emit_payload(RawKind::Mark, stable_name(r->created), 0, d, 0, 0, RangeSource::Nvtx,
               {uint8_t(trace::PayloadType::U64), r->id});
  return reinterpret_cast<nvtxResourceHandle_t>(r);
}
void NVTX_API DomainResourceDestroy(nvtxResourceHandle_t h) {
  auto* r = reinterpret_cast<Resource*>(h);
  if (r)
    emit_payload(RawKind::Mark, stable_name(r->destroyed), 0, r->domain, 0, 0, RangeSource::Nvtx,
                 {uint8_t(trace::PayloadType::U64), r->id});
  delete r;
}

// ---- CUDA resource names (modules CUDA and CUDART) ----
// Names hold for the whole trace: recorded outside capture windows too. A CategoryName record
// with the resource's kind in `sub` and the handle (a device: its ordinal) in `id`.
template <class H>
uint64_t handle_bits(H h) {
  if constexpr (std::is_pointer_v<H>) return reinterpret_cast<uintptr_t>(h);
  else return uint64_t(uint32_t(h));
}
template <NvtxResource K, class H>
void NVTX_API name_a(H h, const char* name) {
  emit_note<false>(RawKind::CategoryName, copied_name(name), handle_bits(h), nullptr, 0, 0, RangeSource::Nvtx, true, {},
                   uint8_t(K));
}
template <NvtxResource K, class H>
void NVTX_API name_w(H h, const wchar_t* name) {
  WideText w;
  emit_note<false>(RawKind::CategoryName, w.name(name), handle_bits(h), nullptr, 0, 0, RangeSource::Nvtx, true, {},
                   uint8_t(K));
}

template <class F>
void set(NvtxFunctionTable table, unsigned size, unsigned id, F fn) {
  if (table && id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace
}  // namespace cutrace

using namespace cutrace;

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  if (!get || !config().enabled) return 0;
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable t = nullptr;
  unsigned n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n)) {
    set(t, n, NVTX_CBID_CORE_MarkEx, MarkEx);
    set(t, n, NVTX_CBID_CORE_MarkA, MarkA);
    set(t, n, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
    set(t, n, NVTX_CBID_CORE_RangeStartA, RangeStartA);
    set(t, n, NVTX_CBID_CORE_RangeEnd, RangeEnd);
    set(t, n, NVTX_CBID_CORE_RangePushEx, RangePushEx);
    set(t, n, NVTX_CBID_CORE_RangePushA, RangePushA);
    set(t, n, NVTX_CBID_CORE_RangePop, RangePop);
    set(t, n, NVTX_CBID_CORE_NameCategoryA, NameCategoryA);
    set(t, n, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
    set(t, n, NVTX_CBID_CORE_MarkW, MarkW);
    set(t, n, NVTX_CBID_CORE_RangeStartW, RangeStartW);
    set(t, n, NVTX_CBID_CORE_RangePushW, RangePushW);
    set(t, n, NVTX_CBID_CORE_NameCategoryW, NameCategoryW);
    set(t, n, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  }
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n)) {
    set(t, n, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
    set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
    set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
    set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
    set(t, n, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
    set(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, DomainNameCategoryA);
    set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
    set(t, n, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
    set(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, DomainNameCategoryW);
    set(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
    set(t, n, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
    set(t, n, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
    set(t, n, NVTX_CBID_CORE2_Initialize, Initialize);
    set(t, n, NVTX_CBID_CORE2_DomainResourceCreate, DomainResourceCreate);
    set(t, n, NVTX_CBID_CORE2_DomainResourceDestroy, DomainResourceDestroy);
  }
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_SYNC, &t, &n)) {
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserCreate, SyncUserCreate);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserDestroy, SyncUserDestroy);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserAcquireStart, SyncUserAcquireStart);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserAcquireFailed, SyncUserAcquireFailed);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserAcquireSuccess, SyncUserAcquireSuccess);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserReleasing, SyncUserReleasing);
  }
  using R = NvtxResource;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CUDA, &t, &n)) {
    set(t, n, NVTX_CBID_CUDA_NameCuDeviceA, name_a<R::Device, CUdevice>);
    set(t, n, NVTX_CBID_CUDA_NameCuDeviceW, name_w<R::Device, CUdevice>);
    set(t, n, NVTX_CBID_CUDA_NameCuContextA, name_a<R::Context, CUcontext>);
    set(t, n, NVTX_CBID_CUDA_NameCuContextW, name_w<R::Context, CUcontext>);
    set(t, n, NVTX_CBID_CUDA_NameCuStreamA, name_a<R::Stream, CUstream>);
    set(t, n, NVTX_CBID_CUDA_NameCuStreamW, name_w<R::Stream, CUstream>);
    set(t, n, NVTX_CBID_CUDA_NameCuEventA, name_a<R::Event, CUevent>);
    set(t, n, NVTX_CBID_CUDA_NameCuEventW, name_w<R::Event, CUevent>);
  }
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CUDART, &t, &n)) {  // cudaStream_t is CUstream, ...
    set(t, n, NVTX_CBID_CUDART_NameCudaDeviceA, name_a<R::Device, int>);
    set(t, n, NVTX_CBID_CUDART_NameCudaDeviceW, name_w<R::Device, int>);
    set(t, n, NVTX_CBID_CUDART_NameCudaStreamA, name_a<R::Stream, cudaStream_t>);
    set(t, n, NVTX_CBID_CUDART_NameCudaStreamW, name_w<R::Stream, cudaStream_t>);
    set(t, n, NVTX_CBID_CUDART_NameCudaEventA, name_a<R::Event, cudaEvent_t>);
    set(t, n, NVTX_CBID_CUDART_NameCudaEventW, name_w<R::Event, cudaEvent_t>);
  }
  return 1;
}

// ---- cutrace's own annotation API (cutrace_api.h) ----
#define CUTRACE_API extern "C" __attribute__((visibility("default")))
CUTRACE_API int cutrace_api_version(void) { return 1; }
CUTRACE_API void cutrace_range_push(const char* name) { push(copied_name(name), nullptr, 0, 0, RangeSource::Api); }
CUTRACE_API void cutrace_range_pop(void) { pop(nullptr, RangeSource::Api); }
CUTRACE_API uint64_t cutrace_range_start(const char* name) {
  return start(copied_name(name), nullptr, 0, 0, RangeSource::Api);
}
CUTRACE_API void cutrace_range_end(uint64_t h) {
  if (h) end(h, RangeSource::Api);
}
CUTRACE_API void cutrace_mark(const char* name) {
  emit(RawKind::Mark, copied_name(name), 0, nullptr, 0, 0, RangeSource::Api);
}
CUTRACE_API void cutrace_capture_start(void) { capture_begin_from_app("api"); }
CUTRACE_API void cutrace_capture_stop(void) { capture_end_from_app("api"); }
CUTRACE_API int cutrace_capture_by_api(void) { return capture_by_api() ? 1 : 0; }
CUTRACE_API int cutrace_capturing(void) { return capture_on() ? 1 : 0; }
