// NVTX injection: every NVTX copy in the process (each library embeds its own) finds this
// library through NVTX_INJECTION64_PATH, calls InitializeInjectionNvtx2 once, and from then on
// sends its push/pop, start/end, marks, domains, registered strings and thread names here.
// The same records are produced by cutrace's own C API (cutrace_api.h), used by the Python module.
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include "collector/format.h"
#include "nvtx_bridge/cutrace_api.h"
#include "shim/capture.h"
#include "shim/config.h"
#include "shim/op.h"
#include "shim/thread_state.h"
#include "shim/ticks.h"

namespace cutrace {
namespace {

using fmt::RangeSource;

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

// One annotation record. `name` is copied into the record unless it is stable. Returns whether
// it was recorded. `force` records even outside a capture window (the pop of a range whose push
// was recorded).
bool emit(RawKind kind, const char* name, bool stable, uint64_t id, const void* domain, uint32_t category,
          uint32_t color, RangeSource source, bool force = false) {
  if ((!force && !capture_on()) || t_in_shim) return false;
  ThreadState* ts = thread_state();
  if (!ts || !enter_record(ts, kind, force)) return false;
  const bool copy = name && !stable;
  const size_t full = copy ? strlen(name) : 0;
  const uint32_t n = copy ? inline_name_len(name, full) : 0;
  const bool end = kind == RawKind::RangePop || kind == RawKind::RangeEnd;
  uint8_t* p = ts->reserve(end ? 33 : copy ? kNoteFixedBytes + n : kNoteFixedBytes + 6);
  if (!p) {
    ts->count_lost(kind);
    leave_record(ts);
    return false;
  }
  RawRecord r;
  r.kind = kind;
  r.sub = 0;
  r.api = 0;
  r.flags = uint16_t((copy ? kRawNameSlot : 0) | (n < full ? kRawNameCut : 0));
  r.nvtx.name = copy ? nullptr : name;
  r.nvtx.id = id, r.nvtx.domain = domain, r.nvtx.category = category, r.nvtx.color = color;
  r.nvtx.source = uint8_t(source);
  r.t0 = ticks();
  ts->commit(pack_note(r, name, n, p));
  leave_record(ts);
  return true;
}

// Resolves an event attribute's message: returns the text and whether it is stable.
const char* message(const nvtxEventAttributes_t* a, bool* stable) {
  *stable = false;
  if (!a) return nullptr;
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
    *stable = true;
    return reinterpret_cast<const char*>(a->message.registered);
  }
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return a->message.ascii;
  if (a->messageType == NVTX_MESSAGE_TYPE_UNICODE) {
    *stable = true;
    return "<unicode message>";
  }
  return nullptr;
}
uint32_t color(const nvtxEventAttributes_t* a) { return a && a->colorType == NVTX_COLOR_ARGB ? a->color : 0; }
uint32_t category(const nvtxEventAttributes_t* a) { return a ? a->category : 0; }

int push(const char* name, bool stable, const void* domain, uint32_t cat, uint32_t col, RangeSource src) {
  capture_nvtx_push(name);  // may open a capture window (CUTRACE_CAPTURE_RANGE=nvtx)
  bool recorded = emit(RawKind::RangePush, name, stable, 0, domain, cat, col, src);
  ThreadState* ts = t_state;
  if (!ts) return 0;
  int depth = ts->nvtx_depth++;
  // Remember which pushes were recorded, so that exactly their pops are (a dropped push must
  // not let its pop close the enclosing range).
  if (depth < 64) ts->nvtx_recorded = recorded ? ts->nvtx_recorded | (1ull << depth) : ts->nvtx_recorded & ~(1ull << depth);
  return depth;
}
int pop(const void* domain, RangeSource src) {
  ThreadState* ts = t_state;
  int depth = ts ? ts->nvtx_depth - 1 : -1;
  if (depth >= 0 && depth < 64 && (ts->nvtx_recorded >> depth & 1))
    emit(RawKind::RangePop, nullptr, true, 0, domain, 0, 0, src, /*force=*/true);
  capture_nvtx_pop();  // may close the window
  if (depth < 0) return -1;
  ts->nvtx_depth = depth;
  return depth;
}
uint64_t start(const char* name, bool stable, const void* domain, uint32_t cat, uint32_t col, RangeSource src) {
  uint64_t id = g_range_ids.fetch_add(1, std::memory_order_relaxed);
  emit(RawKind::RangeStart, name, stable, id, domain, cat, col, src);
  return id;
}
void end(uint64_t id, RangeSource src) { emit(RawKind::RangeEnd, nullptr, true, id, nullptr, 0, 0, src); }

// ---- NVTX callbacks (domain module; the core Ex callbacks are its default domain) ----
void NVTX_API DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  bool st;
  const char* m = message(a, &st);
  emit(RawKind::Mark, m, st, 0, d, category(a), color(a), RangeSource::Nvtx);
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  bool st;
  const char* m = message(a, &st);
  return start(m, st, d, category(a), color(a), RangeSource::Nvtx);
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id, RangeSource::Nvtx); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  bool st;
  const char* m = message(a, &st);
  return push(m, st, d, category(a), color(a), RangeSource::Nvtx);
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t d) { return pop(d, RangeSource::Nvtx); }
void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t, uint32_t, const char*) {}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(stable_copy(s)));
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  // The handle is the domain's stable name: the collector interns it as the domain's string.
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(stable_copy(name)));
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}
void NVTX_API Initialize(const void*) {}

// ---- NVTX callbacks (core module) ----
void NVTX_API MarkEx(const nvtxEventAttributes_t* a) { DomainMarkEx(nullptr, a); }
void NVTX_API MarkA(const char* m) { emit(RawKind::Mark, m, false, 0, nullptr, 0, 0, RangeSource::Nvtx); }
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) { return DomainRangeStartEx(nullptr, a); }
nvtxRangeId_t NVTX_API RangeStartA(const char* m) { return start(m, false, nullptr, 0, 0, RangeSource::Nvtx); }
void NVTX_API RangeEnd(nvtxRangeId_t id) { end(id, RangeSource::Nvtx); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) { return DomainRangePushEx(nullptr, a); }
int NVTX_API RangePushA(const char* m) { return push(m, false, nullptr, 0, 0, RangeSource::Nvtx); }
int NVTX_API RangePop() { return pop(nullptr, RangeSource::Nvtx); }
void NVTX_API NameCategoryA(uint32_t, const char*) {}
void NVTX_API NameOsThreadA(uint32_t tid, const char* name) {
  emit(RawKind::ThreadName, name, false, tid, nullptr, 0, 0, RangeSource::Nvtx);
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
    set(t, n, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
    set(t, n, NVTX_CBID_CORE2_Initialize, Initialize);
  }
  return 1;
}

// ---- cutrace's own annotation API (cutrace_api.h) ----
#define CUTRACE_API extern "C" __attribute__((visibility("default")))
CUTRACE_API int cutrace_api_version(void) { return 1; }
CUTRACE_API void cutrace_range_push(const char* name) { push(name, false, nullptr, 0, 0, RangeSource::Api); }
CUTRACE_API void cutrace_range_pop(void) { pop(nullptr, RangeSource::Api); }
CUTRACE_API uint64_t cutrace_range_start(const char* name) { return start(name, false, nullptr, 0, 0, RangeSource::Api); }
CUTRACE_API void cutrace_range_end(uint64_t h) {
  if (h) end(h, RangeSource::Api);
}
CUTRACE_API void cutrace_mark(const char* name) { emit(RawKind::Mark, name, false, 0, nullptr, 0, 0, RangeSource::Api); }
CUTRACE_API void cutrace_capture_start(void) { capture_begin_from_app("api"); }
CUTRACE_API void cutrace_capture_stop(void) { capture_end_from_app("api"); }
CUTRACE_API int cutrace_capturing(void) { return capture_on() ? 1 : 0; }
