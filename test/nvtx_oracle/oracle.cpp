// The NVTX oracle: an injection library (NVTX_INJECTION64_PATH) that takes every call NVTX hands a
// tool and keeps exactly what it received, pairing pushes and pops per (thread, domain) and starts
// and ends by id as the NVTX specification defines them. At exit it writes one JSON line per
// range, mark, thread name, category name and CUDA resource name to $NVTX_ORACLE_LOG, in the order of their begin;
// test/e2e/nvtx_checks.py compares that with what `cutrace record` wrote for the same program.
// Strings are written as hex of their UTF-8 bytes (wide ones converted), so no text is reinterpreted.
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <nvtx3/nvToolsExtSync.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace {

struct Range {
  std::string kind, name, domain;
  uint32_t category = 0, color = 0;
  std::string payload;  // "" or TYPE:VALUE (payload_text)
  int depth = 0;
  long long begin = 0, end = -1;
  uint32_t tid = 0;
};
std::mutex mu;
std::vector<Range> ranges;                                               // in begin order
std::map<std::pair<uint32_t, std::string>, std::vector<size_t>> stacks;  // (tid, domain) -> open
std::map<uint64_t, size_t> started;
std::vector<std::string> lines;  // marks, thread and category names, as received
uint64_t next_id = 1;

long long now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
uint32_t tid() { return uint32_t(syscall(SYS_gettid)); }
std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string o;
  for (unsigned char c : s) o += d[c >> 4], o += d[c & 15];
  return o;
}
std::string utf8(const wchar_t* w) {
  std::string o;
  for (; w && *w; ++w) {
    uint32_t c = uint32_t(*w);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    if (c < 0x80) o += char(c);
    else if (c < 0x800) o += char(0xC0 | c >> 6), o += char(0x80 | (c & 63));
    else if (c < 0x10000) o += char(0xE0 | c >> 12), o += char(0x80 | (c >> 6 & 63)), o += char(0x80 | (c & 63));
    else
      o += char(0xF0 | c >> 18), o += char(0x80 | (c >> 12 & 63)), o += char(0x80 | (c >> 6 & 63)),
          o += char(0x80 | (c & 63));
  }
  return o;
}
// Handles are pointers to strings that live as long as the process (a deque never moves them).
const char* keep(const std::string& s) {
  static auto* kept = new std::deque<std::string>;
  return kept->emplace_back(s).c_str();
}
std::string dom(const void* d) { return d ? static_cast<const char*>(d) : ""; }
std::string text(const nvtxEventAttributes_t* a) {
  if (!a) return "";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE: return utf8(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered ? reinterpret_cast<const char*>(a->message.registered) : "";
    default: return "";
  }
}
uint32_t color(const nvtxEventAttributes_t* a) { return a && a->colorType == NVTX_COLOR_ARGB ? a->color : 0; }
uint32_t cat(const nvtxEventAttributes_t* a) { return a ? a->category : 0; }
// A scalar payload as `cutrace dump` writes it: u64/i64/u32/i32 decimal, f64 %.17g, f32 %.9g.
std::string payload_text(const nvtxEventAttributes_t* a) {
  char b[64];
  if (!a) return "";
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
      snprintf(b, sizeof b, "u64:%llu", (unsigned long long)a->payload.ullValue);
      break;
    case NVTX_PAYLOAD_TYPE_INT64: snprintf(b, sizeof b, "i64:%lld", (long long)a->payload.llValue); break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: snprintf(b, sizeof b, "f64:%.17g", a->payload.dValue); break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: snprintf(b, sizeof b, "u32:%u", a->payload.uiValue); break;
    case NVTX_PAYLOAD_TYPE_INT32: snprintf(b, sizeof b, "i32:%d", a->payload.iValue); break;
    case NVTX_PAYLOAD_TYPE_FLOAT: snprintf(b, sizeof b, "f32:%.9g", double(a->payload.fValue)); break;
    default: return "";
  }
  return b;
}

int push(const void* d, const std::string& name, uint32_t c, uint32_t col, const std::string& pl = "") {
  std::lock_guard<std::mutex> l(mu);
  auto& st = stacks[{tid(), dom(d)}];
  Range r{"push_pop", name, dom(d), c, col, pl, int(st.size()), now(), -1, tid()};
  st.push_back(ranges.size());
  ranges.push_back(r);
  return r.depth;
}
int pop(const void* d) {
  long long t = now();
  std::lock_guard<std::mutex> l(mu);
  auto& st = stacks[{tid(), dom(d)}];
  if (st.empty()) return -1;
  ranges[st.back()].end = t;
  st.pop_back();
  return int(st.size());
}
uint64_t start(const void* d, const std::string& name, uint32_t c, uint32_t col, const std::string& pl = "") {
  std::lock_guard<std::mutex> l(mu);
  started[next_id] = ranges.size();
  ranges.push_back({"start_end", name, dom(d), c, col, pl, 0, now(), -1, tid()});
  return next_id++;
}
void end(uint64_t id) {
  long long t = now();
  std::lock_guard<std::mutex> l(mu);
  auto it = started.find(id);
  if (it == started.end()) return;
  ranges[it->second].end = t;
  started.erase(it);
}
void line(const std::string& s) {
  std::lock_guard<std::mutex> l(mu);
  lines.push_back(s);
}
void mark(const void* d, const std::string& name, uint32_t c, uint32_t col, const std::string& pl = "") {
  char b[160];
  snprintf(b, sizeof b, "\",\"domain\":\"%s\",\"category\":%u,\"color\":%u,\"payload\":\"%s\"}", hex(dom(d)).c_str(), c,
           col, pl.c_str());
  line("{\"type\":\"mark\",\"name\":\"" + hex(name) + b);
}
void thread_name(uint32_t t, const std::string& name) {
  line("{\"type\":\"thread\",\"tid\":" + std::to_string(t) + ",\"name\":\"" + hex(name) + "\"}");
}
void category(const void* d, uint32_t id, const std::string& name) {
  line("{\"type\":\"category\",\"domain\":\"" + hex(dom(d)) + "\",\"id\":" + std::to_string(id) + ",\"name\":\"" +
       hex(name) + "\"}");
}

// A CUDA resource named: its kind and handle as cutrace's Meta key writes them (a device: decimal).
void resource(const char* kind, unsigned long long handle, const std::string& name) {
  char b[64];
  snprintf(b, sizeof b, strcmp(kind, "device") ? "0x%llx" : "%llu", handle);
  line(std::string("{\"type\":\"resource\",\"kind\":\"") + kind + "\",\"handle\":\"" + b + "\",\"name\":\"" +
       hex(name) + "\"}");
}
template <class H>
unsigned long long bits(H h) {
  if constexpr (std::is_pointer_v<H>) return reinterpret_cast<uintptr_t>(h);
  else return unsigned(h);
}
template <const char* K, class H>
void NVTX_API NameA(H h, const char* n) {
  resource(K, bits(h), n ? n : "");
}
template <const char* K, class H>
void NVTX_API NameW(H h, const wchar_t* n) {
  resource(K, bits(h), utf8(n));
}
constexpr char kDevice[] = "device", kContext[] = "context", kStream[] = "stream", kEvent[] = "event";

// Sync-user objects and generic resources: each event logged as the mark "<name>: <event>" in
// the object's domain (a resource's with its identifier as a u64 payload), as cutrace records them.
struct Obj {
  const void* domain;
  std::string name;
  unsigned long long id;
};
std::string msg(int32_t type, const nvtxMessageValue_t& m) {
  if (type == NVTX_MESSAGE_TYPE_ASCII) return m.ascii ? m.ascii : "";
  if (type == NVTX_MESSAGE_TYPE_UNICODE) return utf8(m.unicode);
  if (type == NVTX_MESSAGE_TYPE_REGISTERED && m.registered) return reinterpret_cast<const char*>(m.registered);
  return "";
}
void obj_mark(const void* h, const char* event, bool with_id) {
  const Obj* o = static_cast<const Obj*>(h);
  if (o) mark(o->domain, o->name + ": " + event, 0, 0, with_id ? "u64:" + std::to_string(o->id) : "");
}
nvtxSyncUser_t NVTX_API SyncCreate(nvtxDomainHandle_t d, const nvtxSyncUserAttributes_t* a) {
  return reinterpret_cast<nvtxSyncUser_t>(new Obj{d, a ? msg(a->messageType, a->message) : "", 0});
}
void NVTX_API SyncDestroy(nvtxSyncUser_t h) {
  obj_mark(h, "destroyed", false);
  delete reinterpret_cast<Obj*>(h);
}
void NVTX_API SyncStart(nvtxSyncUser_t h) { obj_mark(h, "acquire start", false); }
void NVTX_API SyncFailed(nvtxSyncUser_t h) { obj_mark(h, "acquire failed", false); }
void NVTX_API SyncSuccess(nvtxSyncUser_t h) { obj_mark(h, "acquire success", false); }
void NVTX_API SyncReleasing(nvtxSyncUser_t h) { obj_mark(h, "releasing", false); }
nvtxResourceHandle_t NVTX_API ResCreate(nvtxDomainHandle_t d, nvtxResourceAttributes_t* a) {
  auto* o = new Obj{d, a ? msg(a->messageType, a->message) : "", a ? (unsigned long long)a->identifier.ullValue : 0};
  obj_mark(o, "resource created", true);
  return reinterpret_cast<nvtxResourceHandle_t>(o);
}
void NVTX_API ResDestroy(nvtxResourceHandle_t h) {
  obj_mark(h, "resource destroyed", true);
  delete reinterpret_cast<Obj*>(h);
}

struct Writer {
  ~Writer() {
    const char* path = getenv("NVTX_ORACLE_LOG");
    FILE* f = path ? fopen(path, "w") : nullptr;
    if (!f) return;
    std::lock_guard<std::mutex> l(mu);
    long long last = now();
    for (const Range& r : ranges)
      fprintf(f,
              "{\"type\":\"range\",\"kind\":\"%s\",\"name\":\"%s\",\"domain\":\"%s\",\"category\":%u,"
              "\"color\":%u,\"payload\":\"%s\",\"depth\":%d,\"tid\":%u,\"dur_ns\":%lld,\"open\":%s}\n",
              r.kind.c_str(), hex(r.name).c_str(), hex(r.domain).c_str(), r.category, r.color, r.payload.c_str(),
              r.depth, r.tid, (r.end < 0 ? last : r.end) - r.begin, r.end < 0 ? "true" : "false");
    for (const std::string& s : lines) fprintf(f, "%s\n", s.c_str());
    fclose(f);
  }
} writer;

// ---- the callbacks ----
void NVTX_API MarkEx(const nvtxEventAttributes_t* a) { mark(nullptr, text(a), cat(a), color(a), payload_text(a)); }
void NVTX_API MarkA(const char* m) { mark(nullptr, m ? m : "", 0, 0); }
void NVTX_API MarkW(const wchar_t* m) { mark(nullptr, utf8(m), 0, 0); }
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) {
  return start(nullptr, text(a), cat(a), color(a), payload_text(a));
}
nvtxRangeId_t NVTX_API RangeStartA(const char* m) { return start(nullptr, m ? m : "", 0, 0); }
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) { return start(nullptr, utf8(m), 0, 0); }
void NVTX_API RangeEnd(nvtxRangeId_t id) { end(id); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) {
  return push(nullptr, text(a), cat(a), color(a), payload_text(a));
}
int NVTX_API RangePushA(const char* m) { return push(nullptr, m ? m : "", 0, 0); }
int NVTX_API RangePushW(const wchar_t* m) { return push(nullptr, utf8(m), 0, 0); }
int NVTX_API RangePop() { return pop(nullptr); }
void NVTX_API NameCategoryA(uint32_t id, const char* n) { category(nullptr, id, n ? n : ""); }
void NVTX_API NameCategoryW(uint32_t id, const wchar_t* n) { category(nullptr, id, utf8(n)); }
void NVTX_API NameOsThreadA(uint32_t t, const char* n) { thread_name(t, n ? n : ""); }
void NVTX_API NameOsThreadW(uint32_t t, const wchar_t* n) { thread_name(t, utf8(n)); }
void NVTX_API DMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  mark(d, text(a), cat(a), color(a), payload_text(a));
}
nvtxRangeId_t NVTX_API DStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start(d, text(a), cat(a), color(a), payload_text(a));
}
void NVTX_API DEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }
int NVTX_API DPushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return push(d, text(a), cat(a), color(a), payload_text(a));
}
int NVTX_API DPop(nvtxDomainHandle_t d) { return pop(d); }
void NVTX_API DNameCategoryA(nvtxDomainHandle_t d, uint32_t id, const char* n) { category(d, id, n ? n : ""); }
void NVTX_API DNameCategoryW(nvtxDomainHandle_t d, uint32_t id, const wchar_t* n) { category(d, id, utf8(n)); }
nvtxStringHandle_t NVTX_API DRegA(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(keep(s ? s : "")));
}
nvtxStringHandle_t NVTX_API DRegW(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(keep(utf8(s))));
}
nvtxDomainHandle_t NVTX_API DCreateA(const char* n) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(keep(n ? n : "")));
}
nvtxDomainHandle_t NVTX_API DCreateW(const wchar_t* n) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(keep(utf8(n))));
}
void NVTX_API DDestroy(nvtxDomainHandle_t) {}
void NVTX_API Init(const void*) {}

template <class F>
void set(NvtxFunctionTable t, unsigned n, unsigned id, F fn) {
  if (t && id < n && t[id]) *t[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  auto* cb = get ? static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS)) : nullptr;
  if (!cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable t = nullptr;
  unsigned n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n)) {
    set(t, n, NVTX_CBID_CORE_MarkEx, MarkEx), set(t, n, NVTX_CBID_CORE_MarkA, MarkA),
        set(t, n, NVTX_CBID_CORE_MarkW, MarkW);
    set(t, n, NVTX_CBID_CORE_RangeStartEx, RangeStartEx), set(t, n, NVTX_CBID_CORE_RangeStartA, RangeStartA);
    set(t, n, NVTX_CBID_CORE_RangeStartW, RangeStartW), set(t, n, NVTX_CBID_CORE_RangeEnd, RangeEnd);
    set(t, n, NVTX_CBID_CORE_RangePushEx, RangePushEx), set(t, n, NVTX_CBID_CORE_RangePushA, RangePushA);
    set(t, n, NVTX_CBID_CORE_RangePushW, RangePushW), set(t, n, NVTX_CBID_CORE_RangePop, RangePop);
    set(t, n, NVTX_CBID_CORE_NameCategoryA, NameCategoryA), set(t, n, NVTX_CBID_CORE_NameCategoryW, NameCategoryW);
    set(t, n, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA), set(t, n, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  }
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n)) {
    set(t, n, NVTX_CBID_CORE2_DomainMarkEx, DMarkEx), set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, DStartEx);
    set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, DEnd), set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, DPushEx);
    set(t, n, NVTX_CBID_CORE2_DomainRangePop, DPop), set(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, DNameCategoryA);
    set(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, DNameCategoryW),
        set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, DRegA);
    set(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, DRegW), set(t, n, NVTX_CBID_CORE2_DomainCreateA, DCreateA);
    set(t, n, NVTX_CBID_CORE2_DomainCreateW, DCreateW), set(t, n, NVTX_CBID_CORE2_DomainDestroy, DDestroy);
    set(t, n, NVTX_CBID_CORE2_Initialize, Init);
    set(t, n, NVTX_CBID_CORE2_DomainResourceCreate, ResCreate);
    set(t, n, NVTX_CBID_CORE2_DomainResourceDestroy, ResDestroy);
  }
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_SYNC, &t, &n)) {
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserCreate, SyncCreate);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserDestroy, SyncDestroy);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserAcquireStart, SyncStart);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserAcquireFailed, SyncFailed);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserAcquireSuccess, SyncSuccess);
    set(t, n, NVTX_CBID_SYNC_DomainSyncUserReleasing, SyncReleasing);
  }
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CUDA, &t, &n)) {
    set(t, n, NVTX_CBID_CUDA_NameCuDeviceA, NameA<kDevice, CUdevice>);
    set(t, n, NVTX_CBID_CUDA_NameCuDeviceW, NameW<kDevice, CUdevice>);
    set(t, n, NVTX_CBID_CUDA_NameCuContextA, NameA<kContext, CUcontext>);
    set(t, n, NVTX_CBID_CUDA_NameCuContextW, NameW<kContext, CUcontext>);
    set(t, n, NVTX_CBID_CUDA_NameCuStreamA, NameA<kStream, CUstream>);
    set(t, n, NVTX_CBID_CUDA_NameCuStreamW, NameW<kStream, CUstream>);
    set(t, n, NVTX_CBID_CUDA_NameCuEventA, NameA<kEvent, CUevent>);
    set(t, n, NVTX_CBID_CUDA_NameCuEventW, NameW<kEvent, CUevent>);
  }
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CUDART, &t, &n)) {
    set(t, n, NVTX_CBID_CUDART_NameCudaDeviceA, NameA<kDevice, int>);
    set(t, n, NVTX_CBID_CUDART_NameCudaDeviceW, NameW<kDevice, int>);
    set(t, n, NVTX_CBID_CUDART_NameCudaStreamA, NameA<kStream, cudaStream_t>);
    set(t, n, NVTX_CBID_CUDART_NameCudaStreamW, NameW<kStream, cudaStream_t>);
    set(t, n, NVTX_CBID_CUDART_NameCudaEventA, NameA<kEvent, cudaEvent_t>);
    set(t, n, NVTX_CBID_CUDART_NameCudaEventW, NameW<kEvent, cudaEvent_t>);
  }
  return 1;
}
