// `cutrace export --format chrome`: one Chrome trace JSON per rank in the shape PyTorch's
// profiler (Kineto) writes, which Holistic Trace Analysis, Perfetto and chrome://tracing load
// (docs/EXPORT.md lists each rule; test/unit/export_kineto_test.cpp checks them).
//
// Layout of a file (top-level keys first, then one event per line):
//   {"schemaVersion": 1, "deviceProperties": [...], "distributedInfo": {"backend": "nccl",
//    "rank": N, "world_size": W}, "displayTimeUnit": "ms", "baseTimeNanoseconds": B,
//    "traceName": "...", "traceEvents": [ ... ]}
// distributedInfo only when world_size > 1. `"rank": N` keeps the space after the colon: HTA
// finds the rank with `"rank":\s+(\d+)`. ts/dur are microseconds with 3 decimals, relative to
// baseTimeNanoseconds (wall-clock ns on the common clock of tools/analysis/align.h; the same base for
// every rank, so ranks line up).
//
// Events: host side of each traced call on pid = process id, tid = OS thread (cat cuda_runtime
// under the runtime name for calls that have one, cuda_driver otherwise; args cbid,
// correlation, External id, no stream or device: HTA takes an event with a stream for a GPU
// op); GPU side of kernels/copies/sets (cat kernel, gpu_memcpy, gpu_memset) on pid = device,
// tid = stream; GPU side of synchronisations (cat cuda_sync, zero-length, tid stream + 1000000
// or 1000000); launch -> GPU flows (ph s/f, cat "ac2g", id = correlation, at the middle of
// both slices); NVTX/annotation ranges (user_annotation: complete events on the thread for
// push/pop ranges, async b/e pairs for start/end ranges, which need not nest); per stream, the
// span of the work each push/pop range was the innermost range of (gpu_user_annotation, none
// for ProfilerStep#N); marks (ph i); capture windows and dropped records (ph i, cat cutrace);
// counters (ph C) from CPU/GPU samples; metadata (ph M).
//
// Two passes over each file: the first (tools/export/plan.h) nests each host thread's slices
// and collects ranges and event records; the second writes events as the records stream by
// (no document is built in memory). GPU samples and GPU annotations are held until the end of
// a file. Strings are escaped once per string id and cached.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "collector/nvtx_meta.h"
#include "tools/analysis/losses.h"
#include "tools/common/nvtx_names.h"
#include "tools/export/chrome_stacks.h"
#include "tools/export/common.h"
#include "tools/export/counter_series.h"
#include "tools/export/exports.h"
#include "tools/export/kineto.h"
#include "tools/export/plan.h"
#include "trace/reader.h"

namespace cutrace {

namespace {

using exporter::ChromePlan;
using exporter::OutFile;
using namespace chrome_text;

// ---- one trace file -> one JSON file -----------------------------------------------------------

struct GpuSampleLite {
  int64_t ts;
  uint16_t device;
  uint16_t util;
  uint64_t mem_used;
};

// A range's GPU span on one stream: the work launched while it was the innermost range open on
// the launching thread (Kineto's gpu_user_annotation).
struct AnnotationKey {
  uint64_t range_ord;  // ChromePlan::Range::ord
  uint16_t device;
  uint32_t stream;
  bool operator<(const AnnotationKey& o) const {
    return std::tie(range_ord, device, stream) < std::tie(o.range_ord, o.device, o.stream);
  }
};
struct AnnotationSpan {
  int64_t start, end;
  uint32_t name_id;
  uint64_t range_id;
};

// A traced call as written: Kineto's category, name, cbid, and the driver name when renamed.
struct CallText {
  const char* cat;
  std::string quoted_name;
  int cbid;
  std::string quoted_driver;  // empty when the name is the driver's
};

class ChromeFile {
  template <class E>
  friend void exporter::dispatch_record(const Record&, E&);  // calls the per-type handlers

 public:
  ChromeFile(TraceReader& r, OutFile& out, int64_t offset, int64_t base, const ChromePlan& plan)
      : r_(r), out_(out), o_(out.buf()), offset_(offset), base_(base), plan_(plan) {
    info_ = exporter::process_info(r);
    pid_ = info_.pid;
  }

  // Writes the whole document; returns events written.
  uint64_t write(const std::string& trace_name) {
    header(trace_name);
    r_.read([&](const Record& rec) {
      record(rec);
      ++ord_;
    });
    finish();
    return events_;
  }

 private:
  using Range = ChromePlan::Range;

  // -- helpers
  int64_t rel(int64_t t) const { return exporter::wrap_sub(exporter::wrap_add(t, offset_), base_); }
  static int64_t mid(int64_t b, int64_t e) { return e > b ? b + int64_t((uint64_t(e) - uint64_t(b)) / 2) : b; }

  void begin_event() {
    o_ += events_ ? ",\n{" : "\n{";
    ++events_;
  }
  void end_event() {
    o_ += '}';
    out_.maybe_flush();
  }

  // Escaped (quoted) string of a string id, cached per id.
  const std::string& name(uint32_t id) {
    if (id >= kMaxCachedId) {
      scratch_.clear();
      append_json_string(scratch_, r_.str(id));
      return scratch_;
    }
    if (id >= names_.size()) names_.resize(std::max<size_t>(id + 1, names_.size() * 2));
    std::string& s = names_[id];
    if (s.empty()) append_json_string(s, id ? r_.str(id) : exporter::kUnknownKernel);
    return s;
  }
  const CallText& call(uint16_t api) {
    auto it = calls_.find(api);
    if (it != calls_.end()) return it->second;
    std::string_view driver = r_.api_name(api);
    kineto::CallName k = kineto::call_name(driver);
    CallText c{k.runtime ? "cuda_runtime" : "cuda_driver", {}, k.cbid, {}};
    append_json_string(c.quoted_name, k.name);
    if (k.runtime) append_json_string(c.quoted_driver, driver);
    return calls_.emplace(api, std::move(c)).first->second;
  }

  // {"ph":"X","cat":<cat>,"name":<quoted name>,"pid":P,"tid":T,"ts":..,"dur":..  (args follow)
  void x_head(const char* cat, const std::string& quoted_name, int64_t pid, int64_t tid, int64_t t0, int64_t t1) {
    begin_event();
    o_ += "\"ph\":\"X\",\"cat\":\"";
    o_ += cat;
    o_ += "\",\"name\":";
    o_ += quoted_name;
    o_ += ",\"pid\":";
    put_i64(o_, pid);
    o_ += ",\"tid\":";
    put_i64(o_, tid);
    o_ += ",\"ts\":";
    put_us(o_, rel(t0));
    o_ += ",\"dur\":";
    put_us(o_, t1 > t0 ? exporter::wrap_sub(t1, t0) : 0);
  }
  void external_id(const Range* in) {
    if (!in || !in->id) return;
    o_ += ",\"External id\":";
    put_u64(o_, in->id);
  }

  // The host event of a traced call, on the caller's thread, at the times the plan gives it
  // (nested with its neighbours). Opens the args object: {"cbid":..,"correlation":..
  void host_call(uint32_t tid, uint16_t api_id, int64_t t0, int64_t t1, uint64_t corr, int32_t result, bool has_corr,
                 const Range* in, uint32_t stack = 0) {
    host_tids_.insert(tid);
    plan_.host_times(ord_, &t0, &t1);
    call_b_ = t0, call_e_ = t1;
    python_functions(stack, tid, t0, t1);
    const CallText& c = call(api_id);
    x_head(c.cat, c.quoted_name, pid_, tid, t0, t1);
    o_ += ",\"args\":{\"cbid\":";
    put_i64(o_, c.cbid);
    if (has_corr) {
      o_ += ",\"correlation\":";
      put_u64(o_, corr);
    }
    external_id(in);
    if (!c.quoted_driver.empty()) {
      o_ += ",\"driver api\":";
      o_ += c.quoted_driver;
    }
    if (result) {
      o_ += ",\"result\":";
      put_i64(o_, result);
    }
  }

  // Launch -> GPU flow. Both ends sit at the middle of their slice: a flow end binds to the
  // slice enclosing its time, and a zero-length slice at another's start would take it.
  void flow(const trace::OpCommon& op, int64_t gpu_at) {
    begin_event();
    o_ += "\"ph\":\"s\",\"id\":";
    put_u64(o_, op.corr);
    o_ += ",\"pid\":";
    put_i64(o_, pid_);
    o_ += ",\"tid\":";
    put_u64(o_, op.tid);
    o_ += ",\"ts\":";
    put_us(o_, rel(mid(call_b_, call_e_)));
    o_ += ",\"cat\":\"ac2g\",\"name\":\"ac2g\"";
    end_event();
    begin_event();
    o_ += "\"ph\":\"f\",\"id\":";
    put_u64(o_, op.corr);
    o_ += ",\"pid\":";
    put_u64(o_, op.device);
    o_ += ",\"tid\":";
    put_u64(o_, op.stream);
    o_ += ",\"ts\":";
    put_us(o_, rel(gpu_at));
    o_ += ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"";
    end_event();
  }

  // The host event of a GPU operation's call, if it stands for one (a graph replay's node does
  // not: its launch is the graph's record); true when its GPU event is to be drawn. A graph launch
  // whose nodes follow has no GPU event of its own: its flow ends at the replay's start.
  bool op_sides(const trace::OpCommon& op, const Range* in) {
    bool is_call = trace::is_call(op.flags);
    if (is_call) {
      uint32_t stack = stacks_.take(op.corr);
      host_call(op.tid, op.api, op.cpu_begin, op.cpu_end, op.corr, op.result, true, in, stack);
      o_ += stacks_.backtrace_arg(stack);
      o_ += "}";
      end_event();
      votes_.op(op.tid, op.device);
    }
    if (!exporter::has_gpu_time(op)) return false;
    streams_.insert({op.device, op.stream});
    if (!is_call || trace::is_gpu_work(op.flags)) return true;
    flow(op, op.gpu_start);
    return false;
  }

  // A GPU operation flagged PendingExit (launched, not complete when the process ended): an
  // instant on its stream at its launch's return, args pending, instead of a GPU slice.
  void pending_gpu(const trace::OpCommon& op, const char* cat, const std::string& quoted_name) {
    if (!(op.flags & trace::kOpPendingExit)) return;
    streams_.insert({op.device, op.stream});
    begin_event();
    o_ += "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"";
    o_ += cat;
    o_ += "\",\"name\":";
    o_ += quoted_name;
    o_ += ",\"pid\":";
    put_u64(o_, op.device);
    o_ += ",\"tid\":";
    put_u64(o_, op.stream);
    o_ += ",\"ts\":";
    put_us(o_, rel(trace::is_call(op.flags) ? call_e_ : op.cpu_end));
    o_ += ",\"args\":{\"pending\":true,\"correlation\":";
    put_u64(o_, op.corr);
    o_ += "}";
    end_event();
  }

  // After a GPU event: its flow, and its share of the innermost range's GPU span on its stream.
  void op_done(const trace::OpCommon& op, const Range* in) {
    o_ += "}";
    end_event();
    if (trace::is_call(op.flags)) flow(op, mid(op.gpu_start, op.gpu_end));
    if (!in || in->profiler_step) return;
    auto [it, fresh] = annotations_.try_emplace({in->ord, op.device, op.stream},
                                                AnnotationSpan{op.gpu_start, op.gpu_end, in->name_id, in->id});
    if (fresh) return;
    it->second.start = std::min(it->second.start, int64_t(op.gpu_start));
    it->second.end = std::max(it->second.end, int64_t(op.gpu_end));
  }

  // {"External id":..,"device":..,"stream":..,"correlation":..  (GPU events only)
  void gpu_args_head(const trace::OpCommon& op, const Range* in) {
    o_ += ",\"args\":{";
    if (in && in->id) {
      o_ += "\"External id\":";
      put_u64(o_, in->id);
      o_ += ',';
    }
    o_ += "\"device\":";
    put_u64(o_, op.device);
    o_ += ",\"stream\":";
    put_u64(o_, op.stream);
    o_ += ",\"correlation\":";
    put_u64(o_, op.corr);
    o_ += ",\"context\":0";
  }

  void dims(const char* key, const uint32_t* d) {
    o_ += key;
    for (int i = 0; i < 3; ++i) {
      o_ += i ? ',' : '[';
      put_u64(o_, d[i]);
    }
    o_ += ']';
  }

  void kernel(const trace::KernelRec& k) {
    trace::OpCommon op = k.op;
    const Range* in = plan_.innermost(op.tid, op.cpu_begin);
    if (!op_sides(op, in)) return pending_gpu(op, "kernel", name(k.name_id));
    x_head("kernel", name(k.name_id), op.device, op.stream, op.gpu_start, op.gpu_end);
    gpu_args_head(op, in);
    o_ += ",\"queued\":0";
    dims(",\"grid\":", k.grid);
    dims(",\"block\":", k.block);
    o_ += ",\"registers per thread\":";
    put_u64(o_, k.regs);
    o_ += ",\"shared memory\":";
    put_u64(o_, uint64_t(k.static_smem) + k.dyn_smem);
    auto dev = r_.devices().find(op.device);
    kineto::Occupancy occ = kineto::occupancy(k, dev == r_.devices().end() ? nullptr : &dev->second);
    if (occ.blocks_per_sm >= 0) {
      o_ += ",\"blocks per SM\":";
      put_double(o_, occ.blocks_per_sm, 6);
      o_ += ",\"warps per SM\":";
      put_double(o_, occ.warps_per_sm, 6);
    }
    if (occ.est_occupancy_pct >= 0) {
      o_ += ",\"est. achieved occupancy %\":";
      put_i64(o_, occ.est_occupancy_pct);
    }
    collective_args(k.name_id);
    if (k.kind == uint8_t(trace::KernelKind::Graph)) o_ += ",\"graph launch\":1";
    if (!trace::is_call(op.flags)) {
      o_ += ",\"graph id\":";
      put_u64(o_, k.graph_id);
    }
    if (op.flags & trace::kOpInferredStart) o_ += ",\"inferred start\":1";
    op_done(op, in);
  }

  // An NCCL kernel's collective, as Kineto writes it from PyTorch's record_param_comms.
  void collective_args(uint32_t name_id) {
    if (name_id >= kMaxCachedId) return;
    if (name_id >= collectives_.size()) collectives_.resize(std::max<size_t>(name_id + 1, collectives_.size() * 2));
    std::string& s = collectives_[name_id];
    if (s.empty()) {
      kineto::Collective c;
      s = " ";  // looked up: not a collective
      if (kineto::nccl_collective(r_.str(name_id), &c)) {
        s = ",\"Collective name\":";
        append_json_string(s, c.name);
        if (!c.dtype.empty()) {
          s += ",\"dtype\":";
          append_json_string(s, c.dtype);
        }
        if (info_.world_size > 1) {
          s += ",\"Group size\":";
          put_i64(s, info_.world_size);
        }
      }
    }
    if (s.size() > 1) o_ += s;
  }

  void copy_args(const trace::OpCommon& op, const Range* in, uint64_t bytes) {
    gpu_args_head(op, in);
    o_ += ",\"bytes\":";
    put_u64(o_, bytes);
    o_ += ",\"memory bandwidth (GB/s)\":";
    int64_t dur = exporter::wrap_sub(op.gpu_end, op.gpu_start);
    put_double(o_, dur > 0 ? double(bytes) / double(dur) : 0.0, 3);
    o_ += ",\"queued\":0";
    if (op.flags & trace::kOpInferredStart) o_ += ",\"inferred start\":1";
    op_done(op, in);
  }

  void memcpy(const trace::MemcpyRec& m) {
    trace::OpCommon op = m.op;
    const Range* in = plan_.innermost(op.tid, op.cpu_begin);
    const bool gpu = op_sides(op, in);
    scratch_.clear();
    append_json_string(scratch_, exporter::memcpy_name(m));
    if (!gpu) return pending_gpu(op, "gpu_memcpy", scratch_);
    x_head("gpu_memcpy", scratch_, op.device, op.stream, op.gpu_start, op.gpu_end);
    copy_args(op, in, m.bytes);
  }

  void memset(const trace::MemsetRec& m) {
    trace::OpCommon op = m.op;
    const Range* in = plan_.innermost(op.tid, op.cpu_begin);
    static const std::string kName = "\"Memset (Device)\"";
    if (!op_sides(op, in)) return pending_gpu(op, "gpu_memset", kName);
    x_head("gpu_memset", kName, op.device, op.stream, op.gpu_start, op.gpu_end);
    copy_args(op, in, m.bytes);
  }

  void sync(const trace::SyncRec& s) {
    uint32_t stack = stacks_.take(s.corr);
    host_call(s.tid, s.api, s.cpu_begin, s.cpu_end, s.corr, s.result, true, plan_.innermost(s.tid, s.cpu_begin), stack);
    if (trace::sync_open(s)) o_ += ",\"pending\":true";  // blocked in it when the process ended
    o_ += stacks_.backtrace_arg(stack);
    o_ += "}";
    end_event();
    if (exporter::gpu_side_sync(s)) gpu_sync(s);
  }

  // The GPU side of a synchronisation, as CUPTI's synchronization activity in Kineto (cat
  // cuda_sync on the device): zero-length at the call's return, inside the span of the file's GPU
  // work (so that it adds no GPU time to HTA's breakdowns); a stream wait or an event sync names
  // the cuEventRecord it waits on and that record's stream.
  void gpu_sync(const trace::SyncRec& s) {
    auto kind = trace::SyncKind(s.kind);
    const char* what = kind == trace::SyncKind::Context  ? "Context Sync"
                       : kind == trace::SyncKind::Stream ? "Stream Sync"
                       : kind == trace::SyncKind::Event  ? "Event Sync"
                                                         : "Stream Wait Event";
    int64_t t = call_e_;
    if (plan_.gpu_last()) t = std::max(plan_.gpu_first(), std::min(t, plan_.gpu_last()));
    int64_t row = exporter::sync_row(s);
    sync_rows_.insert({s.device, row});
    scratch_ = '"';
    scratch_ += what;
    scratch_ += '"';
    x_head("cuda_sync", scratch_, s.device, row, t, t);
    o_ += ",\"args\":{\"cuda_sync_kind\":";
    o_ += scratch_;
    if (kind == trace::SyncKind::Event || kind == trace::SyncKind::StreamWait) {
      const ChromePlan::EventRecord* rec = plan_.record_before(s.event, s.cpu_begin);
      o_ += ",\"wait_on_stream\":";
      put_i64(o_, rec ? int64_t(rec->stream) : -1);
      o_ += ",\"wait_on_cuda_event_record_corr_id\":";
      put_i64(o_, rec ? int64_t(rec->corr) : -1);
    }
    o_ += ",\"stream\":";
    put_i64(o_, row == exporter::kSyncRow ? -1 : int64_t(s.stream));
    o_ += ",\"correlation\":";
    put_u64(o_, s.corr);
    o_ += ",\"device\":";
    put_u64(o_, s.device);
    o_ += ",\"context\":0}";
    end_event();
  }

  void api_call(const trace::ApiRec& a) {
    host_call(a.tid, a.api, a.cpu_begin, a.cpu_end, a.corr, a.result, true, plan_.innermost(a.tid, a.cpu_begin));
    o_ += "}";
    end_event();
  }

  void memory(const trace::MemoryRec& m) {
    host_call(m.tid, m.api, m.cpu_begin, m.cpu_end, 0, m.result, false, plan_.innermost(m.tid, m.cpu_begin));
    o_ += ",\"bytes\":";
    put_u64(o_, m.bytes);
    char b[32];
    std::snprintf(b, sizeof b, "\"0x%llx\"", static_cast<unsigned long long>(m.address));
    o_ += ",\"address\":";
    o_ += b;
    o_ += "}";
    end_event();
  }

  // NVTX category (with its name, when the trace has one) and ARGB colour, as args.
  void category_color(uint32_t domain_id, uint32_t category, uint32_t color) {
    if (category) {
      o_ += ",\"category\":";
      put_u64(o_, category);
      std::string_view n = r_.meta(category_meta_key(category, domain_id ? r_.str(domain_id) : ""));
      if (!n.empty()) {
        o_ += ",\"category name\":";
        append_json_string(o_, n);
      }
    }
    if (color) {
      char c[16];
      std::snprintf(c, sizeof c, "\"#%08x\"", color);
      o_ += ",\"color\":";
      o_ += c;
    }
  }
  void range_args(uint64_t id, uint32_t domain_id, uint32_t gpu_ops, bool open = false, uint32_t category = 0,
                  uint32_t color = 0, const trace::PayloadRec* payload = nullptr) {
    o_ += ",\"args\":{\"gpu ops\":";
    put_u64(o_, gpu_ops);
    exporter::payload_args(o_, payload);
    if (open) o_ += ",\"open\":true";  // not ended when the trace ended
    category_color(domain_id, category, color);
    if (id) {
      o_ += ",\"External id\":";
      put_u64(o_, id);
    }
    if (domain_id) {
      o_ += ",\"domain\":";
      o_ += name(domain_id);
    }
    o_ += '}';
  }

  // Push/pop ranges nest on their thread: complete events. A start/end range may overlap them
  // (and end on another thread): an async pair (ph b/e) keyed by its range id, which viewers
  // draw on a track of its own. GPU copies (gpu_user_annotation) are written at the end.
  void range(const trace::RangeRec& g) {
    host_tids_.insert(uint32_t(g.tid));  // a copy: the packed field may be misaligned
    const int64_t end = trace::range_end(g);
    const bool open = trace::range_open(g);
    if (trace::range_kind(g) == trace::RangeKind::StartEnd) {
      char id[24];
      std::snprintf(id, sizeof id, "\"0x%llx\"", static_cast<unsigned long long>(g.id));
      for (int edge = 0; edge < 2; ++edge) {
        begin_event();
        o_ += edge ? "\"ph\":\"e\"" : "\"ph\":\"b\"";
        o_ += ",\"cat\":\"user_annotation\",\"name\":";
        o_ += name(g.name_id);
        o_ += ",\"id\":";
        o_ += id;
        o_ += ",\"pid\":";
        put_i64(o_, pid_);
        o_ += ",\"tid\":";
        put_u64(o_, edge ? g.end_tid : g.tid);
        o_ += ",\"ts\":";
        put_us(o_, rel(edge ? end : g.cpu_begin));
        if (!edge) range_args(g.id, g.domain_id, g.gpu_ops, open, g.category, g.color, payloads_.range(g));
        end_event();
      }
      return;
    }
    int64_t b = g.cpu_begin, e = end;
    plan_.host_times(ord_, &b, &e);
    x_head("user_annotation", name(g.name_id), pid_, g.tid, b, e);
    range_args(g.id, g.domain_id, g.gpu_ops, open, g.category, g.color, payloads_.range(g));
    end_event();
  }

  void instant(const char* cat, const std::string& quoted_name, char scope, int64_t tid, int64_t t) {
    begin_event();
    o_ += "\"ph\":\"i\",\"s\":\"";
    o_ += scope;
    o_ += "\",\"cat\":\"";
    o_ += cat;
    o_ += "\",\"name\":";
    o_ += quoted_name;
    o_ += ",\"pid\":";
    put_i64(o_, pid_);
    o_ += ",\"tid\":";
    put_i64(o_, tid);
    o_ += ",\"ts\":";
    put_us(o_, rel(t));
  }

  void mark(const trace::MarkRec& m) {
    host_tids_.insert(uint32_t(m.tid));
    instant("user_annotation", name(m.name_id), 't', m.tid, m.ts);
    if (m.domain_id || m.category || m.color || payloads_.mark(m)) {
      o_ += ",\"args\":{\"domain\":";
      o_ += m.domain_id ? name(m.domain_id) : std::string("\"\"");
      category_color(m.domain_id, m.category, m.color);
      exporter::payload_args(o_, payloads_.mark(m));
      o_ += '}';
    }
    end_event();
  }

  void counter(const char* quoted_name, int64_t pid, int64_t t) {
    begin_event();
    o_ += "\"ph\":\"C\",\"name\":";
    o_ += quoted_name;
    o_ += ",\"pid\":";
    put_i64(o_, pid);
    o_ += ",\"tid\":0,\"ts\":";
    put_us(o_, rel(t));
    o_ += ",\"args\":{";
  }

  void cpu_sample(const trace::CpuSampleRec& c) {
    counter("\"CPU utilization\"", pid_, c.ts);
    o_ += "\"host %\":";
    put_double(o_, c.total_util / 100.0, 2);
    o_ += ",\"process %\":";
    put_double(o_, c.process_util / 100.0, 2);
    o_ += "}";
    end_event();
  }

  void record(const Record& rec) {
    switch (rec.type()) {
      case trace::RecType::Module:
      case trace::RecType::Stack:
      case trace::RecType::PyCode:
      case trace::RecType::PyStack:
      case trace::RecType::OpStack: stacks_.absorb(rec, r_); break;
      case trace::RecType::CounterDef:
      case trace::RecType::CounterSample:
      case trace::RecType::CounterMissing: counters_.add(rec, r_); break;
      default: exporter::dispatch_record(rec, *this);
    }
  }

  // Kineto's python_function events of a call's Python frames, outermost first, each spanning
  // the call (the frames' own extents are not recorded): viewers nest them above the call.
  void python_functions(uint32_t stack, uint32_t tid, int64_t t0, int64_t t1) {
    uint64_t parent = 0;
    for (const std::string& name : stacks_.python_names(stack)) {
      x_head("python_function", name, pid_, tid, t0, t1);
      o_ += ",\"args\":{\"Python id\":";
      put_u64(o_, ++python_ids_);
      if (parent) {
        o_ += ",\"Python parent id\":";
        put_u64(o_, parent);
      }
      o_ += "}";
      end_event();
      parent = python_ids_;
    }
  }

  void gpu_sample(const trace::GpuSampleRec& g) { gpu_samples_.push_back({g.ts, g.device, g.util, g.mem_used}); }

  void window(const trace::WindowRec& w) {
    std::string n = exporter::window_label(r_, w);
    scratch_.clear();
    append_json_string(scratch_, n);
    instant("cutrace", scratch_, 'p', 0, w.ts);
    end_event();
  }

  // Records the trace is missing on a thread: an instant at the interval's start, its end and
  // counts in args (a slice would overlap the thread's calls).
  void loss(const trace::LossRec& l) {
    host_tids_.insert(l.tid);
    instant("cutrace", "\"records missing\"", 't', l.tid, l.begin_ns);
    o_ += ",\"args\":{\"count\":";
    uint64_t total = 0;
    for (uint64_t n : l.count) total += n;
    put_u64(o_, total);
    o_ += ",\"until_us\":";
    const int64_t lb = l.begin_ns, le = l.end_ns;  // copies: packed fields
    put_us(o_, rel(std::max(le, lb)));
    o_ += ",\"reason\":";
    o_ += l.reason == uint8_t(trace::LossReason::Exit) ? "\"in progress at exit\"" : "\"buffer budget\"";
    for (int k = 0; k < trace::kLossKinds; ++k) {
      if (!l.count[k]) continue;
      o_ += ",\"";
      o_ += tools::loss_kind_name(k);
      o_ += "\":";
      put_u64(o_, l.count[k]);
    }
    o_ += "}";
    end_event();
  }

  void dropped(const trace::DroppedRec& d) {
    host_tids_.insert(d.tid);
    instant("cutrace", "\"records dropped\"", 't', d.tid, d.ts);
    o_ += ",\"args\":{\"count\":";
    put_u64(o_, d.count);
    o_ += "}";
    end_event();
  }

  void header(const std::string& trace_name) {
    o_ += "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [";
    bool first = true;
    for (const auto& [id, d] : r_.devices()) {
      o_ += first ? "\n    {" : ",\n    {";
      first = false;
      o_ += "\"id\": ";
      put_u64(o_, id);
      o_ += ", \"name\": ";
      append_json_string(o_, r_.str(d.name_id));
      o_ += ", \"totalGlobalMem\": ";
      put_u64(o_, d.total_mem);
      o_ += ", \"computeMajor\": ";
      put_u64(o_, d.cc_major);
      o_ += ", \"computeMinor\": ";
      put_u64(o_, d.cc_minor);
      o_ += ", \"numSms\": ";
      put_u64(o_, d.sm_count);
      o_ += '}';
    }
    o_ += first ? "],\n" : "\n  ],\n";
    // Only a distributed job has distributedInfo, as Kineto writes it.
    if (info_.world_size > 1) {
      o_ += "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": ";
      put_i64(o_, info_.rank);
      o_ += ", \"world_size\": ";
      put_i64(o_, info_.world_size);
      o_ += "},\n";
    }
    o_ += "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ";
    put_i64(o_, base_);
    o_ += ",\n  \"traceName\": ";
    append_json_string(o_, trace_name);
    o_ += ",\n  \"cutrace\": {\"host\": ";
    append_json_string(o_, info_.host);
    o_ += ", \"pid\": ";
    put_i64(o_, info_.pid);
    o_ += ", \"cmdline\": ";
    append_json_string(o_, info_.cmdline);
    o_ += ", \"source\": ";
    append_json_string(o_, r_.path());
    o_ += ", \"clock_offset_ns\": ";
    put_i64(o_, offset_);
    o_ += "},\n  \"traceEvents\": [";
  }

  void meta_event(const char* what, int64_t pid, int64_t tid, const char* key, const std::string& quoted_value) {
    begin_event();
    o_ += "\"ph\":\"M\",\"name\":\"";
    o_ += what;
    o_ += "\",\"pid\":";
    put_i64(o_, pid);
    o_ += ",\"tid\":";
    put_i64(o_, tid);
    o_ += ",\"args\":{\"";
    o_ += key;
    o_ += "\":";
    o_ += quoted_value;
    o_ += "}";
    end_event();
  }
  static std::string quoted(std::string_view s) {
    std::string q;
    append_json_string(q, s);
    return q;
  }

  // GPU annotations, per stream: nested like every other track (two threads' ranges can
  // interleave their work on one stream).
  void annotations() {
    std::map<std::pair<uint16_t, uint32_t>, std::vector<exporter::Slice>> tracks;
    std::vector<const std::pair<const AnnotationKey, AnnotationSpan>*> spans;
    for (const auto& a : annotations_) {
      tracks[{a.first.device, a.first.stream}].push_back({a.second.start, a.second.end, spans.size(), false});
      spans.push_back(&a);
    }
    for (auto& [track, slices] : tracks) {
      exporter::nest_slices(slices);
      for (const exporter::Slice& s : slices) {
        const auto& [key, span] = *spans[s.ord];
        x_head("gpu_user_annotation", name(span.name_id), key.device, key.stream, s.b, s.e);
        o_ += ",\"args\":{";
        if (span.range_id) {
          o_ += "\"External id\":";
          put_u64(o_, span.range_id);
        }
        o_ += '}';
        end_event();
      }
    }
  }

  void finish() {
    annotations();
    // GPU samples: only devices this process used (NVML samples every GPU of the host).
    std::set<uint16_t> sampled;
    for (const GpuSampleLite& g : gpu_samples_) {
      if (votes_.any() && !votes_.used(g.device)) continue;
      sampled.insert(g.device);
      counter("\"GPU utilization\"", g.device, g.ts);
      o_ += "\"util %\":";
      put_u64(o_, g.util);
      o_ += "}";
      end_event();
      counter("\"GPU memory used\"", g.device, g.ts);
      o_ += "\"GiB\":";
      put_double(o_, double(g.mem_used) / double(1ull << 30), 3);
      o_ += "}";
      end_event();
    }
    for (const exporter::CounterSeries& c : exporter::counter_series(counters_))
      for (const tools::CounterSeriesPoint& p : c.points) {
        scratch_.clear();
        append_json_string(scratch_, c.name);
        counter(scratch_.c_str(), pid_, p.ts);
        append_json_string(o_, c.unit);
        o_ += ':';
        put_double(o_, p.value, 4);
        o_ += '}';
        end_event();
      }
    // Metadata: names and order of processes and threads.
    std::string label = info_.program + " (rank " + std::to_string(info_.rank) + ")";
    meta_event("process_name", pid_, 0, "name", quoted(label));
    meta_event("process_labels", pid_, 0, "labels",
               quoted("rank " + std::to_string(info_.rank) + (info_.host.empty() ? "" : ", host " + info_.host)));
    meta_event("process_sort_index", pid_, 0, "sort_index", "0");
    for (uint32_t tid : host_tids_) {
      auto it = r_.threads().find(tid);
      std::string n = it != r_.threads().end() ? std::string(r_.str(it->second)) : std::string();
      n = n.empty() ? "thread " + std::to_string(tid) : n + " (" + std::to_string(tid) + ")";
      meta_event("thread_name", pid_, tid, "name", quoted(n));
      meta_event("thread_sort_index", pid_, tid, "sort_index", std::to_string(tid == uint32_t(pid_) ? 0 : tid));
    }
    std::set<uint16_t> gpus = sampled;
    for (const auto& s : streams_) gpus.insert(s.first);
    for (const auto& s : sync_rows_) gpus.insert(s.first);
    for (uint16_t d : gpus) {
      meta_event("process_name", d, 0, "name", quoted("GPU " + std::to_string(d)));
      meta_event("process_sort_index", d, 0, "sort_index", std::to_string(100 + int(d)));
    }
    for (const auto& [dev, stream] : streams_) {
      meta_event("thread_name", dev, stream, "name", quoted(tools::stream_label(r_, stream)));
      meta_event("thread_sort_index", dev, stream, "sort_index", std::to_string(stream));
    }
    for (const auto& [dev, row] : sync_rows_) {
      std::string n =
          row == exporter::kSyncRow ? "device sync" : tools::stream_label(r_, row - exporter::kSyncRow) + " (sync)";
      meta_event("thread_name", dev, row, "name", quoted(n));
      meta_event("thread_sort_index", dev, row, "sort_index", std::to_string(row));
    }
    o_ += "\n]}\n";
  }

  static constexpr uint32_t kMaxCachedId = 1u << 24;

  TraceReader& r_;
  OutFile& out_;
  std::string& o_;
  int64_t offset_;
  int64_t base_;
  const ChromePlan& plan_;
  uint64_t ord_ = 0;                 // ordinal of the record being written (ChromePlan's)
  int64_t call_b_ = 0, call_e_ = 0;  // times of the last host call written
  exporter::ProcessInfo info_;
  int64_t pid_ = 0;
  uint64_t events_ = 0;
  std::vector<std::string> names_;
  std::vector<std::string> collectives_;  // name id -> NCCL args JSON (" ": none)
  std::unordered_map<uint16_t, CallText> calls_;
  std::string scratch_;
  std::set<uint32_t> host_tids_;
  std::set<std::pair<uint16_t, uint32_t>> streams_;
  std::set<std::pair<uint16_t, int64_t>> sync_rows_;
  std::map<AnnotationKey, AnnotationSpan> annotations_;
  exporter::DeviceVotes votes_;
  std::vector<GpuSampleLite> gpu_samples_;
  tools::CounterSet counters_;
  exporter::ChromeStacks stacks_;
  uint64_t python_ids_ = 0;  // the last python_function event's "Python id"
  PayloadJoin payloads_;
};

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string json_name_for(const std::string& trace_file) {
  std::string b = exporter::base_name(trace_file);
  if (ends_with(b, ".cutrace")) b.resize(b.size() - 8);
  return b + ".json";
}

}  // namespace

bool export_chrome(const std::vector<std::string>& all_files, const Alignment& a, const std::string& out,
                   std::string* err) {
  exporter::ExportStats& st = exporter::g_stats;
  st.clear();
  if (all_files.empty()) {
    *err = "no trace files to export";
    return false;
  }
  // A file that does not open is skipped (said in st.skipped); the others are exported.
  const std::vector<std::string> files = exporter::readable_files(all_files, err);
  if (files.empty()) return false;
  // One base for every rank: the earliest capture start on the common clock, in whole us.
  int64_t base = 0;
  bool have_base = false;
  for (const std::string& f : files) {
    TraceReader r;
    std::string e;
    if (!r.open(f, &e)) continue;
    exporter::ProcessInfo p = exporter::process_info(r);
    if (!p.start_mono) continue;
    int64_t t = p.start_mono + exporter::offset_for(a, f);
    if (!have_base || t < base) base = t;
    have_base = true;
  }
  base -= ((base % 1000) + 1000) % 1000;

  bool single = all_files.size() == 1 && ends_with(out, ".json");
  if (!single && !exporter::make_dirs(out, err)) return false;
  size_t exported = 0;
  for (const std::string& f : files) {
    TraceReader r;
    std::string e;
    if (!r.open(f, &e)) {
      st.skipped.push_back(e);
      continue;
    }
    std::string path = single ? out : out + "/" + json_name_for(f);
    OutFile o;
    if (!o.open(path, err)) return false;
    ChromePlan plan;
    plan.build(r);
    ChromeFile cf(r, o, exporter::offset_for(a, f), base, plan);
    st.events += cf.write(path);
    if (!r.error().empty()) st.warnings.push_back(f + ": read error: " + r.error());
    const ReadStatus& rs = r.status();
    if (!rs.complete) st.warnings.push_back(f + ": truncated (no End record): exported what it holds");
    exporter::damage_warnings(f, rs, &st.warnings);
    if (!o.close(err)) return false;
    st.bytes += o.written();
    st.outputs.push_back(path);
    ++exported;
  }
  if (exported == 0 && err->empty()) *err = "no trace could be exported";
  return exported > 0;
}

}  // namespace cutrace
