// `cutrace export --format perfetto`: every rank in one Perfetto native trace (protobuf), the
// format ui.perfetto.dev and trace_processor load fastest. No protobuf library: the few messages
// used are hand-encoded.
//
// Encoding. Protobuf wire format: a field is a key varint (field_number << 3 | wire_type) then
// its value; wire type 0 = varint, 1 = fixed64 (8 bytes little-endian), 2 = length-delimited
// (varint length, then bytes: strings and nested messages). Field numbers, as in Perfetto's
// protos/perfetto/trace/ (trace.proto, trace_packet.proto, track_event/*.proto,
// interned_data/interned_data.proto):
//   Trace            { repeated TracePacket packet = 1; }
//   TracePacket      { timestamp = 8 (ns); trusted_packet_sequence_id = 10; track_event = 11;
//                      interned_data = 12; sequence_flags = 13 (1 INCREMENTAL_STATE_CLEARED,
//                      2 NEEDS_INCREMENTAL_STATE); track_descriptor = 60 }
//   TrackDescriptor  { uuid = 1; name = 2; process = 3; thread = 4; parent_uuid = 5; counter = 8 }
//   ProcessDescriptor{ pid = 1; process_name = 6 }
//   ThreadDescriptor { pid = 1; tid = 2; thread_name = 5 }
//   CounterDescriptor{ unit = 3 (2 COUNT, 3 SIZE_BYTES); unit_name = 6 (free-form, "%") }
//   TrackEvent       { category_iids = 3; debug_annotations = 4; type = 9 (1 SLICE_BEGIN,
//                      2 SLICE_END, 3 INSTANT, 4 COUNTER); name_iid = 10; track_uuid = 11;
//                      counter_value = 30 (int64); double_counter_value = 44 (double);
//                      flow_ids = 47 (fixed64); terminating_flow_ids = 48 (fixed64) }
//   DebugAnnotation  { name_iid = 1; int_value = 4; double_value = 5; string_value = 6 }
//   InternedData     { event_categories = 1; event_names = 2; debug_annotation_names = 3 },
//                      each entry { iid = 1; name = 2 }
//
// Layout. Each trace file becomes one packet sequence (trusted_packet_sequence_id = file index
// + 1): first its TrackDescriptors (a process per rank with its threads, a "GPU N" process per
// device with one track per stream plus one for ranges' GPU projections, counter tracks for CPU
// and GPU utilisation and GPU memory), each with the timestamp of the sequence's first event,
// then its TrackEvents in time order. The first TrackEvent
// packet clears the incremental state and carries every interned name of the sequence; all
// TrackEvent packets say they need it. Slices are BEGIN/END pairs: per track they are sorted by
// begin (longest first on ties) and must nest, so a slice that would overlap another without
// nesting in it (clock jitter between records, a start/end range) moves to an extra "overlap"
// track under the same parent rather than corrupting the stack. Events are sorted by time with
// ties kept in the order generated (END before a BEGIN at the same instant); trace_processor
// keeps that order for equal timestamps. Launch -> GPU flows: the host slice lists the flow id
// in flow_ids, the GPU slice in terminating_flow_ids.
//
// Memory: one file's events are held while they are sorted, about 140 bytes per slice (1.3 GB
// for a trace of 5 million records); files are done one after the other.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <deque>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collector/nvtx_meta.h"
#include "tools/common/nvtx_names.h"
#include "tools/export/common.h"
#include "tools/export/counter_series.h"
#include "tools/export/exports.h"
#include "tools/export/protobuf_writer.h"
#include "trace/reader.h"

namespace cutrace {
namespace {

using exporter::OutFile;

// Field numbers (see the header comment).
namespace f {
constexpr uint32_t kTracePacket = 1;
constexpr uint32_t kTimestamp = 8, kSeqId = 10, kTrackEvent = 11, kInterned = 12, kSeqFlags = 13, kTrackDescriptor = 60;
constexpr uint32_t kTdUuid = 1, kTdName = 2, kTdProcess = 3, kTdThread = 4, kTdParent = 5, kTdCounter = 8;
constexpr uint32_t kPdPid = 1, kPdName = 6;
constexpr uint32_t kThPid = 1, kThTid = 2, kThName = 5;
constexpr uint32_t kCdUnit = 3, kCdUnitName = 6;
constexpr uint32_t kTeCategoryIids = 3, kTeDebug = 4, kTeType = 9, kTeNameIid = 10, kTeTrack = 11, kTeCounter = 30,
                   kTeDoubleCounter = 44, kTeFlow = 47, kTeTerminatingFlow = 48;
constexpr uint32_t kDaNameIid = 1, kDaInt = 4, kDaDouble = 5, kDaString = 6;
constexpr uint32_t kIdCategories = 1, kIdNames = 2, kIdAnnotationNames = 3;
constexpr uint32_t kInternIid = 1, kInternName = 2;
}  // namespace f

enum EventType : uint8_t { kBegin = 1, kEnd = 2, kInstant = 3, kCounter = 4 };
enum SeqFlags : uint32_t { kCleared = 1, kNeeds = 2 };

// Interned categories and debug-annotation names: fixed tables, iid = index + 1.
enum Cat : uint8_t {
  kCatDriver = 1,
  kCatKernel,
  kCatMemcpy,
  kCatMemset,
  kCatSync,
  kCatAnnotation,
  kCatGpuAnnotation,
  kCatCutrace
};
const char* const kCategories[] = {"cuda_driver", "kernel",          "gpu_memcpy",          "gpu_memset",
                                   "cuda_sync",   "user_annotation", "gpu_user_annotation", "cutrace"};
enum Ann : uint8_t {
  kAnnDevice = 1,
  kAnnStream,
  kAnnCorrelation,
  kAnnGrid,
  kAnnBlock,
  kAnnRegs,
  kAnnSmem,
  kAnnCbid,
  kAnnBytes,
  kAnnBandwidth,
  kAnnResult,
  kAnnDomain,
  kAnnGpuOps,
  kAnnAddress,
  kAnnCount,
  kAnnKind,
  kAnnInferred,
  kAnnRangeId,
  kAnnOpen,
  kAnnCategory,
  kAnnCategoryName,
  kAnnColor,
  kAnnPayload,
};
const char* const kAnnotationNames[] = {"device",         "stream",
                                        "correlation",    "grid",
                                        "block",          "registers per thread",
                                        "shared memory",  "cbid",
                                        "bytes",          "memory bandwidth (GB/s)",
                                        "result",         "domain",
                                        "gpu ops",        "address",
                                        "count",          "kind",
                                        "inferred start", "range id",
                                        "open",           "category",
                                        "category name",  "color",
                                        "payload"};

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// ---- one file ------------------------------------------------------------------------------------

struct Track {
  uint64_t uuid = 0;
  uint64_t parent = 0;
  std::string name;
  enum Kind { Process, Thread, Plain, Counter } kind = Plain;
  int64_t pid = 0, tid = 0;
  uint32_t unit = 0;                // counters: CounterDescriptor.Unit
  const char* unit_name = nullptr;  // counters with a unit the enum lacks ("%")
  bool used = false;                // has events (descriptors are written only for used tracks and parents)
};

struct Slice {
  int64_t b, e;
  uint64_t off;  // BEGIN body in the arena
  uint32_t len;
  uint32_t track;
};

struct Instant {
  int64_t ts;
  uint64_t off;
  uint32_t len;
  uint32_t track;
};

struct CounterValue {
  int64_t ts;
  uint32_t track;
  bool is_double;
  double d;
  int64_t i;
};

struct Ev {
  int64_t ts;
  uint32_t ord;
  uint32_t track;  // for BEGIN/END: the lane's track
  uint32_t ref;    // slice, instant or counter index
  uint8_t type;
};

struct Projection {
  int64_t start, end;
  uint32_t tid;
  uint64_t body_off;
  uint32_t body_len;
};

struct GpuSampleLite {
  int64_t ts;
  uint16_t device;
  uint16_t util;
  uint64_t mem_used;
};

struct Shared {  // state across the files of one export
  uint64_t next_uuid = 0x10000;
  std::set<int64_t> pids;
  int64_t next_synthetic_tid = 0x7D000000;
  size_t nfiles = 1;
};

class PerfettoFile {
  template <class E>
  friend void exporter::dispatch_record(const Record&, E&);  // calls the per-type handlers

 public:
  PerfettoFile(TraceReader& r, OutFile& out, Shared& sh, size_t index, int64_t offset)
      : r_(r), out_(out), sh_(sh), index_(index), seq_(uint32_t(index + 1)), offset_(offset) {
    info_ = exporter::process_info(r);
    pid_ = info_.pid;
    if (pid_ <= 0 || sh_.pids.count(pid_)) {  // another file has this pid (other host): keep them apart
      pid_ = 0x7E000000 + int64_t(index);
      remap_tids_ = true;
    }
    sh_.pids.insert(pid_);
    Track p;
    p.kind = Track::Process;
    p.pid = pid_;
    p.name = info_.program + " (rank " + std::to_string(info_.rank) +
             (remap_tids_ && info_.pid > 0 ? ", pid " + std::to_string(info_.pid) : "") + ")";
    process_track_ = add_track(std::move(p));
  }

  uint64_t write() {
    r_.read([&](const Record& rec) { record(rec); });
    finish_collect();
    build_events();
    write_descriptors();
    write_events();
    return packets_;
  }

 private:
  // -- tracks
  uint32_t add_track(Track t) {
    t.uuid = sh_.next_uuid++;
    tracks_.push_back(std::move(t));
    return uint32_t(tracks_.size() - 1);
  }
  int64_t tid_of(uint32_t os_tid) {
    if (!remap_tids_) return os_tid;
    auto it = tid_map_.find(os_tid);
    if (it != tid_map_.end()) return it->second;
    return tid_map_[os_tid] = sh_.next_synthetic_tid++;
  }
  uint32_t thread_track(uint32_t tid) {
    auto it = threads_.find(tid);
    if (it != threads_.end()) return it->second;
    Track t;
    t.kind = Track::Thread;
    t.pid = pid_;
    t.tid = tid_of(tid);
    t.parent = tracks_[process_track_].uuid;
    uint32_t idx = add_track(std::move(t));
    threads_[tid] = idx;
    thread_os_tid_[idx] = tid;
    return idx;
  }
  uint32_t gpu_track(uint16_t device) {
    auto it = gpus_.find(device);
    if (it != gpus_.end()) return it->second;
    Track t;
    t.kind = Track::Process;
    t.pid = 0x7F000000 + (int64_t(index_ & 0xFFF) << 12) + (device & 0xFFF);
    t.name = "GPU " + std::to_string(device);
    if (sh_.nfiles > 1) t.name += " (rank " + std::to_string(info_.rank) + ")";
    return gpus_[device] = add_track(std::move(t));
  }
  uint32_t child_track(std::map<std::pair<uint32_t, uint32_t>, uint32_t>& cache, uint32_t parent, uint32_t key,
                       std::string name, Track::Kind kind = Track::Plain, uint32_t unit = 0,
                       const char* unit_name = nullptr) {
    auto k = std::make_pair(parent, key);
    auto it = cache.find(k);
    if (it != cache.end()) return it->second;
    Track t;
    t.kind = kind;
    t.parent = tracks_[parent].uuid;
    t.name = std::move(name);
    t.unit = unit;
    t.unit_name = unit_name;
    return cache[k] = add_track(std::move(t));
  }
  uint32_t stream_track(uint16_t device, uint32_t stream) {
    return child_track(children_, gpu_track(device), stream, "stream " + std::to_string(stream));
  }

  // -- interning
  uint64_t intern(std::string_view s) {
    auto it = name_iids_.find(s);
    if (it != name_iids_.end()) return it->second;
    names_.emplace_back(s);
    uint64_t iid = names_.size();
    name_iids_.emplace(names_.back(), iid);
    return iid;
  }
  uint64_t name_iid(uint32_t string_id) {
    if (string_id >= (1u << 24)) return intern(r_.str(string_id));
    if (string_id >= by_string_.size()) by_string_.resize(std::max<size_t>(string_id + 1, by_string_.size() * 2));
    uint64_t& v = by_string_[string_id];
    if (!v) v = intern(r_.str(string_id));
    return v;
  }
  uint64_t api_iid(uint16_t api) {
    uint64_t& v = by_api_[api];
    if (!v) v = intern(r_.api_name(api));
    return v;
  }

  // -- event bodies (TrackEvent fields other than type and track), appended to the arena
  void body_begin(uint64_t name, Cat cat) {
    body_start_ = arena_.size();
    pb::u64(arena_, f::kTeNameIid, name);
    pb::u64(arena_, f::kTeCategoryIids, cat);
  }
  // DebugAnnotation {name_iid, value} as TrackEvent.debug_annotations, in one append.
  void ann_int(Ann a, int64_t v) {
    char b[40];
    size_t inner = 2 * pb::key_size(f::kDaNameIid) + pb::varint_size(a) + pb::varint_size(uint64_t(v));
    char* p = pb::put_varint(pb::put_key(b, f::kTeDebug, pb::kBytes), inner);
    p = pb::put_u64(p, f::kDaNameIid, a);
    p = pb::put_u64(p, f::kDaInt, uint64_t(v));
    arena_.append(b, size_t(p - b));
  }
  void ann_double(Ann a, double v) {
    char b[40];
    uint64_t bits;
    if (!std::isfinite(v)) v = 0.0;
    std::memcpy(&bits, &v, 8);
    size_t inner = pb::key_size(f::kDaNameIid) + pb::varint_size(a) + pb::key_size(f::kDaDouble) + 8;
    char* p = pb::put_varint(pb::put_key(b, f::kTeDebug, pb::kBytes), inner);
    p = pb::put_u64(p, f::kDaNameIid, a);
    p = pb::put_fixed64(p, f::kDaDouble, bits);
    arena_.append(b, size_t(p - b));
  }
  void ann_str(Ann a, std::string_view v) {
    char b[40];
    size_t inner = pb::key_size(f::kDaNameIid) + pb::varint_size(a) + pb::key_size(f::kDaString) +
                   pb::varint_size(v.size()) + v.size();
    char* p = pb::put_varint(pb::put_key(b, f::kTeDebug, pb::kBytes), inner);
    p = pb::put_u64(p, f::kDaNameIid, a);
    p = pb::put_varint(pb::put_key(p, f::kDaString, pb::kBytes), v.size());
    arena_.append(b, size_t(p - b));
    arena_.append(v.data(), v.size());
  }
  void slice(uint32_t track, int64_t b, int64_t e) {
    tracks_[track].used = true;
    slices_.push_back({exporter::wrap_add(b, offset_), exporter::wrap_add(std::max(b, e), offset_), body_start_,
                       uint32_t(arena_.size() - body_start_), track});
  }
  void instant(uint32_t track, int64_t ts) {
    tracks_[track].used = true;
    instants_.push_back({exporter::wrap_add(ts, offset_), body_start_, uint32_t(arena_.size() - body_start_), track});
  }
  void counter_d(uint32_t track, int64_t ts, double v) {
    tracks_[track].used = true;
    counters_.push_back({exporter::wrap_add(ts, offset_), track, true, std::isfinite(v) ? v : 0.0, 0});
  }
  void counter_i(uint32_t track, int64_t ts, int64_t v) {
    tracks_[track].used = true;
    counters_.push_back({exporter::wrap_add(ts, offset_), track, false, 0.0, v});
  }

  uint64_t flow_id(uint64_t corr) const {
    uint64_t id = splitmix64(corr ^ (uint64_t(index_ + 1) << 48));
    return id ? id : 1;
  }

  // -- records
  void host_call(Cat cat, uint16_t api, uint64_t corr, int32_t result) {
    body_begin(api_iid(api), cat);
    ann_int(kAnnCbid, api);
    ann_int(kAnnCorrelation, int64_t(corr));
    if (result) ann_int(kAnnResult, result);
  }

  // Host slice of a GPU operation; true when the GPU side is drawn too.
  bool op_host(const trace::OpCommon& op) {
    bool gpu = exporter::has_gpu_time(op);
    host_call(kCatDriver, op.api, op.corr, op.result);
    if (gpu) pb::fixed64(arena_, f::kTeFlow, flow_id(op.corr));
    slice(thread_track(op.tid), op.cpu_begin, op.cpu_end);
    votes_.op(op.tid, op.device);
    return gpu;
  }
  void gpu_common(const trace::OpCommon& op) {
    ann_int(kAnnDevice, op.device);
    ann_int(kAnnStream, op.stream);
    ann_int(kAnnCorrelation, int64_t(op.corr));
    if (op.flags & trace::kOpInferredStart) ann_int(kAnnInferred, 1);
  }
  void gpu_slice(const trace::OpCommon& op) {
    if (trace::is_call(op.flags)) pb::fixed64(arena_, f::kTeTerminatingFlow, flow_id(op.corr));  // from its call
    slice(stream_track(op.device, op.stream), op.gpu_start, op.gpu_end);
  }

  // The host slice of a GPU operation's call, if it stands for one (a graph replay's node does not:
  // its launch is the graph's record); true when its GPU slice is to be drawn. A graph launch whose
  // nodes follow draws none of its own (and no flow).
  bool op_sides(trace::OpCommon& op) {
    if (!trace::is_call(op.flags)) return exporter::has_gpu_time(op);
    if (!trace::is_gpu_work(op.flags)) op.gpu_start = op.gpu_end = 0;
    return op_host(op);
  }

  void kernel(const trace::KernelRec& k) {
    trace::OpCommon op = k.op;
    if (!op_sides(op)) return;
    body_begin(name_iid(k.name_id), kCatKernel);
    gpu_common(op);
    ann_str(kAnnGrid, dims(k.grid[0], k.grid[1], k.grid[2]));
    ann_str(kAnnBlock, dims(k.block[0], k.block[1], k.block[2]));
    ann_int(kAnnRegs, k.regs);
    ann_int(kAnnSmem, int64_t(uint64_t(k.static_smem) + k.dyn_smem));
    gpu_slice(op);
  }
  // "[x, y, z]"
  std::string_view dims(uint32_t x, uint32_t y, uint32_t z) {
    char* p = dims_;
    char* end = dims_ + sizeof dims_;
    *p++ = '[';
    p = std::to_chars(p, end, x).ptr;
    *p++ = ',', *p++ = ' ';
    p = std::to_chars(p, end, y).ptr;
    *p++ = ',', *p++ = ' ';
    p = std::to_chars(p, end, z).ptr;
    *p++ = ']';
    return std::string_view(dims_, size_t(p - dims_));
  }

  void copy_like(const trace::OpCommon& op, uint64_t name, Cat cat, uint64_t bytes) {
    body_begin(name, cat);
    gpu_common(op);
    ann_int(kAnnBytes, int64_t(bytes));
    int64_t dur = op.gpu_end - op.gpu_start;
    ann_double(kAnnBandwidth, dur > 0 ? double(bytes) / double(dur) : 0.0);
    gpu_slice(op);
  }
  void memcpy(const trace::MemcpyRec& m) {
    trace::OpCommon op = m.op;
    if (!op_sides(op)) return;
    uint32_t key = uint32_t(m.copy_kind) << 16 | uint32_t(m.src_kind) << 8 | m.dst_kind;
    uint64_t& iid = memcpy_names_[key];
    if (!iid) iid = intern(exporter::memcpy_name(m));
    copy_like(op, iid, kCatMemcpy, m.bytes);
  }
  void memset(const trace::MemsetRec& m) {
    trace::OpCommon op = m.op;
    if (!op_sides(op)) return;
    if (!memset_name_) memset_name_ = intern(exporter::memset_name());
    copy_like(op, memset_name_, kCatMemset, m.bytes);
  }
  void sync(const trace::SyncRec& s) {
    host_call(kCatSync, s.api, s.corr, s.result);
    ann_int(kAnnDevice, s.device);
    ann_int(kAnnStream, s.stream);
    ann_str(kAnnKind, sync_kind_name(s.kind));
    slice(thread_track(s.tid), s.cpu_begin, s.cpu_end);
  }
  void api_call(const trace::ApiRec& a) {
    host_call(kCatDriver, a.api, a.corr, a.result);
    if (a.stream) ann_int(kAnnStream, a.stream);
    slice(thread_track(a.tid), a.cpu_begin, a.cpu_end);
  }
  void memory(const trace::MemoryRec& m) {
    body_begin(api_iid(m.api), kCatDriver);
    ann_int(kAnnCbid, m.api);
    ann_int(kAnnBytes, int64_t(m.bytes));
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(m.address));
    ann_str(kAnnAddress, b);
    if (m.result) ann_int(kAnnResult, m.result);
    slice(thread_track(m.tid), m.cpu_begin, m.cpu_end);
  }
  void range_body(uint32_t name_id, uint32_t domain_id, uint32_t gpu_ops, uint64_t id, Cat cat) {
    body_begin(name_iid(name_id), cat);
    if (domain_id) ann_str(kAnnDomain, r_.str(domain_id));
    ann_int(kAnnGpuOps, gpu_ops);
    ann_int(kAnnRangeId, int64_t(id));
  }
  // NVTX category (and its name, when the trace has one) and ARGB colour.
  void category_color(uint32_t domain_id, uint32_t category, uint32_t color) {
    if (category) {
      ann_int(kAnnCategory, category);
      std::string_view n = r_.meta(category_meta_key(category, domain_id ? r_.str(domain_id) : ""));
      if (!n.empty()) ann_str(kAnnCategoryName, n);
    }
    if (color) {
      char c[16];
      std::snprintf(c, sizeof c, "#%08x", color);
      ann_str(kAnnColor, c);
    }
  }
  // An NVTX payload as a number (a u64 above INT64_MAX, a NaN or an infinity: its text).
  void payload(const trace::PayloadRec* p) {
    if (!p) return;
    const uint64_t bits = p->bits;
    if (tools::payload_is_float(p->type) ? !std::isfinite(tools::payload_double(*p))
                                         : p->type == uint8_t(trace::PayloadType::U64) && bits > uint64_t(INT64_MAX))
      ann_str(kAnnPayload, tools::payload_value(*p));
    else if (tools::payload_is_float(p->type)) ann_double(kAnnPayload, tools::payload_double(*p));
    else ann_int(kAnnPayload, int64_t(bits));
  }
  void range(const trace::RangeRec& g) {
    range_body(g.name_id, g.domain_id, g.gpu_ops, g.id, kCatAnnotation);
    category_color(g.domain_id, g.category, g.color);
    payload(payloads_.range(g));
    if (trace::range_open(g)) ann_int(kAnnOpen, 1);  // not ended when the trace ended
    uint32_t track = thread_track(g.tid);
    if (trace::range_kind(g) == trace::RangeKind::StartEnd)  // not nested in the thread's stack
      track = child_track(children_, process_track_, kStartEndKey, "NVTX start/end ranges");
    slice(track, g.cpu_begin, trace::range_end(g));
    if (g.gpu_start > 0 && g.gpu_end >= g.gpu_start) {
      range_body(g.name_id, g.domain_id, g.gpu_ops, g.id, kCatGpuAnnotation);
      projections_.push_back({g.gpu_start, g.gpu_end, g.tid, body_start_, uint32_t(arena_.size() - body_start_)});
    }
  }
  void mark(const trace::MarkRec& m) {
    body_begin(name_iid(m.name_id), kCatAnnotation);
    if (m.domain_id) ann_str(kAnnDomain, r_.str(m.domain_id));
    category_color(m.domain_id, m.category, m.color);
    payload(payloads_.mark(m));
    instant(thread_track(m.tid), m.ts);
  }
  void cpu_sample(const trace::CpuSampleRec& c) {
    counter_d(child_track(children_, process_track_, kCpuHostKey, "CPU utilization (host, %)", Track::Counter, 0, "%"),
              c.ts, c.total_util / 100.0);
    counter_d(
        child_track(children_, process_track_, kCpuProcKey, "CPU utilization (process, %)", Track::Counter, 0, "%"),
        c.ts, c.process_util / 100.0);
  }

  void record(const Record& rec) {
    if (rec.type() >= trace::RecType::CounterDef && rec.type() <= trace::RecType::CounterMissing)
      cpu_counters_.add(rec, r_);
    else exporter::dispatch_record(rec, *this);
  }

  void gpu_sample(const trace::GpuSampleRec& g) { gpu_samples_.push_back({g.ts, g.device, g.util, g.mem_used}); }

  void window(const trace::WindowRec& w) {
    std::string n = exporter::window_label(r_, w);
    body_begin(intern(n), kCatCutrace);
    instant(process_track_, w.ts);
  }

  void loss(const trace::LossRec& l) {
    uint64_t total = 0;
    for (uint64_t n : l.count) total += n;
    body_begin(intern("records missing"), kCatCutrace);
    ann_int(kAnnCount, int64_t(total));
    instant(thread_track(l.tid), l.begin_ns);
  }

  void dropped(const trace::DroppedRec& d) {
    body_begin(intern("records dropped"), kCatCutrace);
    ann_int(kAnnCount, int64_t(d.count));
    instant(thread_track(d.tid), d.ts);
  }

  // GPU projections and samples go to devices known only now; threads get their names.
  void finish_collect() {
    for (const Projection& p : projections_) {
      uint16_t dev = votes_.device_for(p.tid, r_);
      uint32_t track = child_track(children_, gpu_track(dev), kAnnotationsKey, "NVTX ranges (GPU projection)");
      tracks_[track].used = true;
      slices_.push_back(
          {exporter::wrap_add(p.start, offset_), exporter::wrap_add(p.end, offset_), p.body_off, p.body_len, track});
    }
    for (const GpuSampleLite& g : gpu_samples_) {
      if (votes_.any() && !votes_.used(g.device)) continue;  // NVML samples every GPU of the host
      uint32_t gpu = gpu_track(g.device);
      counter_d(child_track(children_, gpu, kGpuUtilKey, "GPU utilization (%)", Track::Counter, 0, "%"), g.ts, g.util);
      counter_i(child_track(children_, gpu, kGpuMemKey, "GPU memory used", Track::Counter, 3), g.ts,
                int64_t(g.mem_used));
    }
    uint32_t key = kCounterKey0;  // one track per counter series, under the process
    for (const exporter::CounterSeries& c : exporter::counter_series(cpu_counters_)) {
      uint32_t track = child_track(children_, process_track_, key++, c.name + " (" + c.unit + ")", Track::Counter);
      for (const tools::CounterSeriesPoint& p : c.points) counter_d(track, p.ts, p.value);
    }
    for (auto& [idx, tid] : thread_os_tid_) {
      auto it = r_.threads().find(tid);
      std::string n = it != r_.threads().end() ? std::string(r_.str(it->second)) : std::string();
      tracks_[idx].name = n.empty() ? "thread " + std::to_string(tid) : n + " (" + std::to_string(tid) + ")";
    }
    for (const auto& [dev, gpu] : gpus_)  // "stream 7 (dataloader)": NVTX names may come late in the file
      for (const auto& [sid, st] : r_.streams()) {
        auto it = children_.find({gpu, sid});
        if (it != children_.end()) tracks_[it->second].name = tools::stream_label(r_, sid);
      }
  }

  // Lanes: per track, slices sorted by begin (longest first); each goes to the first lane where
  // it nests, a new overlap track if none. Emits BEGIN/END events in a valid order per lane.
  void build_events() {
    std::vector<std::vector<uint32_t>> by_track(tracks_.size());
    for (uint32_t i = 0; i < slices_.size(); ++i) by_track[slices_[i].track].push_back(i);
    evs_.reserve(slices_.size() * 2 + instants_.size() + counters_.size());
    uint32_t ord = 0;
    size_t ntracks = tracks_.size();  // lanes appended below are not themselves scanned
    for (uint32_t t = 0; t < ntracks; ++t) {
      std::vector<uint32_t>& v = by_track[t];
      if (v.empty()) continue;
      std::sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) {
        const Slice& x = slices_[a];
        const Slice& y = slices_[b];
        if (x.b != y.b) return x.b < y.b;
        if (x.e != y.e) return x.e > y.e;
        return a < b;
      });
      std::vector<std::vector<uint32_t>> stacks;  // per lane: open slices
      std::vector<uint32_t> lane_track;
      auto pop_until = [&](size_t lane, int64_t ts) {
        std::vector<uint32_t>& st = stacks[lane];
        while (!st.empty() && slices_[st.back()].e <= ts) {
          evs_.push_back({slices_[st.back()].e, ord++, lane_track[lane], st.back(), kEnd});
          st.pop_back();
        }
      };
      for (uint32_t s : v) {
        const Slice& sl = slices_[s];
        size_t lane = 0;
        for (;; ++lane) {
          if (lane == stacks.size()) {
            stacks.emplace_back();
            if (lane == 0) {
              lane_track.push_back(t);
            } else {
              Track o;
              o.parent = tracks_[t].uuid;
              o.name = (tracks_[t].name.empty() ? std::string("track") : tracks_[t].name) + " (overlap " +
                       std::to_string(lane) + ")";
              o.used = true;
              lane_track.push_back(add_track(std::move(o)));
            }
            break;
          }
          pop_until(lane, sl.b);
          if (stacks[lane].empty() || slices_[stacks[lane].back()].e >= sl.e) break;
        }
        evs_.push_back({sl.b, ord++, lane_track[lane], s, kBegin});
        stacks[lane].push_back(s);
      }
      for (size_t lane = 0; lane < stacks.size(); ++lane) pop_until(lane, INT64_MAX);
    }
    for (uint32_t i = 0; i < instants_.size(); ++i)
      evs_.push_back({instants_[i].ts, ord++, instants_[i].track, i, kInstant});
    for (uint32_t i = 0; i < counters_.size(); ++i)
      evs_.push_back({counters_[i].ts, ord++, counters_[i].track, i, kCounter});
    std::sort(evs_.begin(), evs_.end(),
              [](const Ev& a, const Ev& b) { return a.ts != b.ts ? a.ts < b.ts : a.ord < b.ord; });
  }

  void emit_packet(const std::string& body) {
    std::string& o = out_.buf();
    pb::bytes(o, f::kTracePacket, body);
    ++packets_;
    out_.maybe_flush();
  }

  void write_descriptors() {
    // Parents of used tracks are written too.
    for (size_t i = tracks_.size(); i-- > 0;) {
      if (!tracks_[i].used) continue;
      for (size_t j = 0; j < tracks_.size(); ++j)
        if (tracks_[j].uuid == tracks_[i].parent) tracks_[j].used = true;
    }
    tracks_[process_track_].used = true;
    std::string pkt, td, sub;
    for (const Track& t : tracks_) {
      if (!t.used) continue;
      td.clear();
      pb::u64(td, f::kTdUuid, t.uuid);
      if (t.parent) pb::u64(td, f::kTdParent, t.parent);
      switch (t.kind) {
        case Track::Process:
          sub.clear();
          pb::i64(sub, f::kPdPid, t.pid);
          pb::bytes(sub, f::kPdName, t.name);
          pb::bytes(td, f::kTdProcess, sub);
          break;
        case Track::Thread:
          sub.clear();
          pb::i64(sub, f::kThPid, t.pid);
          pb::i64(sub, f::kThTid, t.tid);
          pb::bytes(sub, f::kThName, t.name);
          pb::bytes(td, f::kTdThread, sub);
          break;
        case Track::Counter:
          pb::bytes(td, f::kTdName, t.name);
          sub.clear();
          if (t.unit) pb::u64(sub, f::kCdUnit, t.unit);
          if (t.unit_name) pb::bytes(sub, f::kCdUnitName, t.unit_name);
          pb::bytes(td, f::kTdCounter, sub);
          break;
        case Track::Plain: pb::bytes(td, f::kTdName, t.name); break;
      }
      pkt.clear();
      // At the sequence's first event: trace_processor orders descriptor packets with the rest.
      if (!evs_.empty()) pb::u64(pkt, f::kTimestamp, uint64_t(evs_.front().ts));
      pb::u64(pkt, f::kSeqId, seq_);
      pb::bytes(pkt, f::kTrackDescriptor, td);
      emit_packet(pkt);
    }
  }

  std::string interned_data() const {
    std::string id, e;
    for (size_t i = 0; i < std::size(kCategories); ++i) {
      e.clear();
      pb::u64(e, f::kInternIid, i + 1);
      pb::bytes(e, f::kInternName, kCategories[i]);
      pb::bytes(id, f::kIdCategories, e);
    }
    for (size_t i = 0; i < names_.size(); ++i) {
      e.clear();
      pb::u64(e, f::kInternIid, i + 1);
      pb::bytes(e, f::kInternName, names_[i]);
      pb::bytes(id, f::kIdNames, e);
    }
    for (size_t i = 0; i < std::size(kAnnotationNames); ++i) {
      e.clear();
      pb::u64(e, f::kInternIid, i + 1);
      pb::bytes(e, f::kInternName, kAnnotationNames[i]);
      pb::bytes(id, f::kIdAnnotationNames, e);
    }
    return id;
  }

  // One packet per event, written straight into the output buffer: the sizes of the nested
  // messages are computed first, so nothing is encoded twice.
  void write_events() {
    const std::string interned = interned_data();
    std::string& o = out_.buf();
    bool first = true;
    for (const Ev& ev : evs_) {
      uint64_t uuid = tracks_[ev.track].uuid;
      const char* body = nullptr;
      size_t body_len = 0;
      char value[24];  // a counter's value field
      switch (ev.type) {
        case kBegin:
          body = arena_.data() + slices_[ev.ref].off;
          body_len = slices_[ev.ref].len;
          break;
        case kInstant:
          body = arena_.data() + instants_[ev.ref].off;
          body_len = instants_[ev.ref].len;
          break;
        case kCounter: {
          const CounterValue& c = counters_[ev.ref];
          uint64_t bits;
          std::memcpy(&bits, &c.d, 8);
          char* p = c.is_double ? pb::put_fixed64(value, f::kTeDoubleCounter, bits)
                                : pb::put_u64(value, f::kTeCounter, uint64_t(c.i));
          body = value;
          body_len = size_t(p - value);
          break;
        }
        default: break;
      }
      uint32_t flags = first ? kCleared | kNeeds : kNeeds;
      size_t te_len = pb::key_size(f::kTeType) + pb::varint_size(ev.type) + pb::key_size(f::kTeTrack) +
                      pb::varint_size(uuid) + body_len;
      size_t pkt_len = pb::key_size(f::kTimestamp) + pb::varint_size(uint64_t(ev.ts)) + pb::key_size(f::kSeqId) +
                       pb::varint_size(seq_) + pb::key_size(f::kSeqFlags) + pb::varint_size(flags) +
                       pb::key_size(f::kTrackEvent) + pb::varint_size(te_len) + te_len;
      if (first) pkt_len += pb::key_size(f::kInterned) + pb::varint_size(interned.size()) + interned.size();
      char h[96];
      char* p = pb::put_varint(pb::put_key(h, f::kTracePacket, pb::kBytes), pkt_len);
      p = pb::put_u64(p, f::kTimestamp, uint64_t(ev.ts));
      p = pb::put_u64(p, f::kSeqId, seq_);
      p = pb::put_u64(p, f::kSeqFlags, flags);
      if (first) {
        o.append(h, size_t(p - h));
        pb::bytes(o, f::kInterned, interned);
        p = h;
        first = false;
      }
      p = pb::put_varint(pb::put_key(p, f::kTrackEvent, pb::kBytes), te_len);
      p = pb::put_u64(p, f::kTeType, ev.type);
      p = pb::put_u64(p, f::kTeTrack, uuid);
      o.append(h, size_t(p - h));
      o.append(body, body_len);
      ++packets_;
      out_.maybe_flush();
    }
  }

  // child_track keys under one parent
  static constexpr uint32_t kStartEndKey = 0xFFFFFFF0u, kCpuHostKey = 0xFFFFFFF1u, kCpuProcKey = 0xFFFFFFF2u,
                            kAnnotationsKey = 0xFFFFFFF3u, kGpuUtilKey = 0xFFFFFFF4u, kGpuMemKey = 0xFFFFFFF5u,
                            kCounterKey0 = 0xFFFF0000u;

  TraceReader& r_;
  OutFile& out_;
  Shared& sh_;
  size_t index_;
  uint32_t seq_;
  int64_t offset_;
  exporter::ProcessInfo info_;
  int64_t pid_ = 0;
  bool remap_tids_ = false;
  std::unordered_map<uint32_t, int64_t> tid_map_;
  uint64_t packets_ = 0;

  std::vector<Track> tracks_;
  uint32_t process_track_ = 0;
  std::unordered_map<uint32_t, uint32_t> threads_;  // OS tid -> track
  std::map<uint32_t, uint32_t> thread_os_tid_;      // track -> OS tid
  std::map<uint16_t, uint32_t> gpus_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> children_;

  std::deque<std::string> names_;  // iid - 1 -> name (a deque: name_iids_ holds views into it)
  std::unordered_map<std::string_view, uint64_t> name_iids_;
  std::vector<uint64_t> by_string_;
  std::unordered_map<uint16_t, uint64_t> by_api_;
  std::unordered_map<uint32_t, uint64_t> memcpy_names_;
  uint64_t memset_name_ = 0;

  std::string arena_;
  char dims_[48];
  uint64_t body_start_ = 0;
  std::vector<Slice> slices_;
  std::vector<Instant> instants_;
  std::vector<CounterValue> counters_;
  std::vector<Projection> projections_;
  std::vector<GpuSampleLite> gpu_samples_;
  tools::CounterSet cpu_counters_;
  std::vector<Ev> evs_;
  exporter::DeviceVotes votes_;
  PayloadJoin payloads_;
};

}  // namespace

bool export_perfetto(const std::vector<std::string>& all_files, const Alignment& a, const std::string& out,
                     std::string* err) {
  exporter::ExportStats& st = exporter::g_stats;
  st.clear();
  if (all_files.empty()) {
    *err = "no trace files to export";
    return false;
  }
  // A file that does not open is skipped (st.skipped); when none opens, no output file is created.
  const std::vector<std::string> files = exporter::readable_files(all_files, err);
  if (files.empty()) return false;
  std::string path = out;
  struct stat sb;
  if (::stat(out.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode)) path = out + "/trace.pftrace";
  OutFile o;
  if (!o.open(path, err)) return false;
  Shared sh;
  sh.nfiles = files.size();
  for (size_t i = 0; i < files.size(); ++i) {
    TraceReader r;
    std::string e;
    if (!r.open(files[i], &e)) {
      st.skipped.push_back(e);
      continue;
    }
    PerfettoFile pf(r, o, sh, i, exporter::offset_for(a, files[i]));
    st.events += pf.write();
    if (!r.error().empty()) st.warnings.push_back(files[i] + ": read error: " + r.error());
    const ReadStatus& rs = r.status();
    if (!rs.complete) st.warnings.push_back(files[i] + ": truncated (no End record): exported what it holds");
    exporter::damage_warnings(files[i], rs, &st.warnings);
  }
  if (!o.close(err)) return false;
  st.bytes = o.written();
  st.outputs.push_back(path);
  return true;
}

}  // namespace cutrace
