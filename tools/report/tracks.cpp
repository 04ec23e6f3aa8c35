// Reads a job into the report's track tree (tools/report/tracks.h).
#include "tools/report/tracks.h"
#include "tools/analysis/losses.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

#include "tools/analysis/align.h"
#include "tools/analysis/stacks.h"
#include "tools/analysis/summary_model.h"  // sat_add, sat_sub: damaged times must not overflow
#include "tools/common/format_util.h"
#include "tools/common/nvtx_names.h"
#include "tools/common/payload.h"
#include "tools/export/counter_series.h"
#include "trace/reader.h"

namespace cutrace::report {

uint32_t StringTable::id(const std::string& s) {
  if (s.empty()) return 0;
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  uint32_t id = uint32_t(strings_.size());
  strings_.push_back(s);
  ids_.emplace(s, id);
  return id;
}

namespace {

constexpr uint16_t kApiRow = 0xFFFF;  // placeholder until the thread's range depth is known
constexpr int kBusyBins = 600;        // GPU busy counter: bins over the job's extent

bool has_gpu_time(const trace::OpCommon& op) {
  return !(op.flags & trace::kOpNoGpuTime) && !(op.flags & trace::kOpCaptured) && op.gpu_start > 0 &&
         op.gpu_end >= op.gpu_start;
}

struct MemEvent {
  int64_t ts;
  uint16_t device;
  uint8_t op;
  uint64_t address, bytes;
};

struct Sample {
  int64_t ts;
  double a, b;
};

// One file's events before they become tracks.
constexpr size_t kMaxCoreTracks = 64;  // more cores: no per-core tracks (one track each)

struct FileEvents {
  FileInfo info;
  std::map<uint32_t, std::string> thread_names;
  std::map<uint32_t, EventColumns> threads;  // by tid
  std::map<uint32_t, int> max_depth;         // by tid: deepest range row
  std::map<uint32_t, EventColumns> streams;  // by stream id
  std::map<uint32_t, uint16_t> stream_device;
  std::map<uint32_t, std::string> stream_labels;  // "stream 7 (dataloader)"
  std::map<uint16_t, std::string> device_names;
  std::map<uint16_t, std::vector<std::pair<int64_t, int64_t>>> busy;  // GPU intervals per device
  std::vector<MemEvent> mem;
  std::vector<Sample> cpu;                       // host %, process % (of one core)
  std::map<uint16_t, std::vector<Sample>> nvml;  // util %, mem_used bytes
  struct Clocks {
    int64_t ts;
    double sm_mhz, power_w, temp_c;  // 0: NVML gave none
  };
  std::map<uint16_t, std::vector<Clocks>> clocks;              // by device
  std::vector<std::vector<std::pair<int64_t, double>>> cores;  // per core: (ts, utilisation %)
  tools::CounterSet counters;                                  // CPU performance counters (times as recorded)
  int64_t offset_ns = 0;                                       // added to the counters' times
};

}  // namespace

// One file of a TimelineIndex.
struct IndexFile {
  struct Block {
    uint64_t offset;  // of its header in the file
    int64_t lo, hi;   // earliest start and latest end of its events (job clock)
    bool timed;       // holds an event
  };
  std::unique_ptr<TraceReader> reader;  // closed between pieces; its metadata is the whole file's
  int64_t offset_ns = 0;
  std::vector<Block> blocks;
  StackTable stacks;
  std::unordered_map<uint64_t, uint32_t> op_stacks;  // corr -> stack id of every OpStack record
  std::map<uint32_t, std::pair<int, int>> threads;   // tid -> (track id, range depth)
  std::map<uint32_t, int> streams;                   // stream id -> track id
};

struct TimelineIndex::Impl {
  std::vector<std::unique_ptr<IndexFile>> files;
  std::string clock;
  int64_t t0_ns = 0, t1_ns = 0;
  Symbolizer sym;  // ELF symbols, cached across pieces
  std::mutex mu;
  uint64_t blocks = 0, last_read = 0;
};

namespace {

class Loader {
 public:
  Loader(Timeline* tl, int64_t t0, int64_t t1) : tl_(tl), t0_(t0), t1_(t1) {}

  // Records, along the full read, each block's time span and every OpStack link into `ix`.
  void index_into(IndexFile* ix) { build_ = ix; }
  StackTable take_stacks() { return std::move(stacks_); }

  // Only the blocks at `offsets` of an indexed file, with its stacks and symbols.
  void read_piece(IndexFile& ix, const std::vector<uint64_t>& offsets, FileEvents& f, Symbolizer* sym) {
    f_ = &f;
    off_ = ix.offset_ns;
    r_ = ix.reader.get();
    piece_ = &ix;
    sym_ = sym;
    stack_text_.clear();
    r_->read_blocks(offsets, [&](const Record& rec) { visit(rec); });
    if (!r_->error().empty()) tl_->errors.push_back(r_->path() + ": " + r_->error());
    r_->close();
    piece_ = nullptr;
    sym_ = &own_sym_;
  }

  // offset_ns: added to every time of the file (the job's common clock, tools/analysis/align.h).
  void read(TraceReader& r, FileEvents& f, int64_t offset_ns) {
    f_ = &f;
    off_ = offset_ns;
    f.offset_ns = offset_ns;
    r_ = &r;
    f.info.path = r.path();
    f.info.host = std::string(r.meta("host"));
    f.info.cmdline = std::string(r.meta("cmdline"));
    f.info.rank = r.meta_int("rank", -1);
    f.info.pid = r.meta_int("pid", 0);
    stacks_ = StackTable();  // stack and module ids are per file
    op_stacks_.clear();
    stack_text_.clear();
    payloads_ = PayloadJoin();
    if (build_) {
      r.read([&](const Record& rec) {
        uint64_t at = r.block_offset();
        if (build_->blocks.empty() || build_->blocks.back().offset != at)
          build_->blocks.push_back(
              {at, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), false});
        visit(rec);
      });
    } else {
      r.read([&](const Record& rec) { visit(rec); });
    }
    for (const auto& [tid, name] : r.threads()) f.thread_names[tid] = std::string(r.str(name));
    for (const auto& [id, s] : r.streams())
      f.stream_device[id] = s.device, f.stream_labels[id] = tools::stream_label(r, id);
    for (const auto& [id, d] : r.devices()) f.device_names[id] = std::string(r.str(d.name_id));
    if (!r.error().empty()) tl_->errors.push_back(r.path() + ": " + r.error());
  }

 private:
  void extent(int64_t s, int64_t e) {
    if (s <= 0) return;
    tl_->t0_ns = std::min(tl_->t0_ns, s);
    tl_->t1_ns = std::max(tl_->t1_ns, std::max(s, e));
  }
  int64_t at(int64_t t) const { return t > 0 ? sat_add(t, off_) : t; }  // 0 stays "unknown"
  bool keep(int64_t s, int64_t e) {
    if (build_) {
      IndexFile::Block& b = build_->blocks.back();
      b.lo = std::min(b.lo, s), b.hi = std::max(b.hi, e), b.timed = true;
    }
    return e >= t0_ && s < t1_;
  }
  uint32_t str(std::string_view s) { return tl_->strings.id(std::string(s)); }

  // The call stack recorded for the operation `corr` (an OpStack record precedes its operation),
  // symbolised once per stack: a string id of one frame per line, innermost first; 0 = none.
  uint32_t backtrace_of(uint64_t corr) {
    uint32_t stack = 0;
    if (piece_) {
      auto it = corr ? piece_->op_stacks.find(corr) : piece_->op_stacks.end();
      stack = it == piece_->op_stacks.end() ? 0 : it->second;
    } else {
      stack = corr ? op_stacks_.take(corr) : 0;
    }
    if (!stack) return 0;
    auto [t, fresh] = stack_text_.emplace(stack, 0);
    if (fresh) {
      std::string text;
      for (const SymFrame& f : sym_->stack(piece_ ? piece_->stacks : stacks_, stack))
        text += (text.empty() ? "" : "\n") + frame_text(f);
      t->second = text.empty() ? 0 : str(text);
    }
    return t->second;
  }

  void cpu_event(uint32_t tid, int64_t b, int64_t e, uint32_t name, EventKind k, uint64_t corr, uint64_t bytes,
                 uint32_t detail) {
    extent(b, e);
    uint32_t bt = backtrace_of(corr);
    if (!keep(b, e)) return;
    EventColumns& c = f_->threads[tid];
    c.add(b, sat_sub(e, b), name, k, kApiRow, corr, bytes, detail);
    c.backtrace.back() = bt;
    ++tl_->events;
  }
  void gpu_event(const trace::OpCommon& op, uint32_t name, EventKind k, uint64_t bytes, uint32_t detail) {
    if (!has_gpu_time(op)) return;
    int64_t gs = at(op.gpu_start), ge = at(op.gpu_end);
    extent(gs, ge);
    if (!keep(gs, ge)) return;
    f_->streams[+op.stream].add(gs, sat_sub(ge, gs), name, k, 0, op.corr, bytes, detail);
    f_->stream_device.emplace(+op.stream, +op.device);
    f_->busy[+op.device].emplace_back(gs, ge);
    ++tl_->events;
  }
  // A GPU operation: its launch call on the thread (with its call stack when one was recorded:
  // --backtrace all, or a blocking copy), its execution on the stream (same corr).
  // A graph replay's node is GPU work only (its call is the graph launch's record); a graph launch
  // whose nodes follow is its call only (the nodes draw the replay).
  void op(const trace::OpCommon& op, uint32_t gpu_name, EventKind k, uint64_t bytes, uint32_t detail,
          uint32_t launched) {
    if (op.flags & trace::kOpCaptured) detail = str("captured into a CUDA graph (did not run then)");
    if (trace::is_call(op.flags))
      cpu_event(op.tid, at(op.cpu_begin), at(op.cpu_end), str(r_->api_name(op.api)), EventKind::Api, op.corr, bytes,
                launched);
    if (trace::is_gpu_work(op.flags)) gpu_event(op, gpu_name, k, bytes, detail);
  }

  // Record fields are packed (unaligned): `+f` passes a copy where a reference would bind to one
  // (map keys, fmt::format arguments, emplace); binding it directly is undefined behaviour.
  void visit(const Record& rec) {
    using T = trace::RecType;
    payloads_.see(rec);
    // A piece keeps the call stacks of the job's index: their records are skipped.
    if (piece_
            ? rec.type() == T::Module || rec.type() == T::Stack || rec.type() == T::PyCode || rec.type() == T::PyStack
            : stacks_.absorb(rec, *r_))
      return;
    switch (rec.type()) {
      case T::OpStack: {
        const auto& o = rec.as<trace::OpStackRec>();
        if (build_) build_->op_stacks[uint64_t(o.corr)] = o.stack;
        if (!piece_) op_stacks_.link(o);
        break;
      }
      case T::Kernel: {
        const auto& k = rec.as<trace::KernelRec>();
        uint32_t name = str(r_->str(k.name_id));
        std::string geo = ::fmt::format("grid {}x{}x{}  block {}x{}x{}  regs {}  smem {}+{} B", +k.grid[0], +k.grid[1],
                                        +k.grid[2], +k.block[0], +k.block[1], +k.block[2], +k.regs, +k.static_smem,
                                        +k.dyn_smem);  // +: copies of packed fields
        if (k.kind != 0) geo = std::string(kernel_kind_name(k.kind)) + "  " + geo;
        if (!trace::is_call(+k.op.flags)) geo = "in graph #" + std::to_string(+k.graph_id) + "  " + geo;
        const uint32_t launched =
            (k.op.flags & trace::kOpPendingExit)
                ? str(std::string(r_->str(k.name_id)) + "  pending at exit: not complete when the process ended")
                : name;
        op(k.op, name, EventKind::Kernel, 0, str(geo), launched);
        break;
      }
      case T::Memcpy: {
        const auto& m = rec.as<trace::MemcpyRec>();
        std::string kind = copy_kind_name(m.copy_kind);
        std::string d = ::fmt::format("{} {} -> {}", kind, mem_kind_name(m.src_kind), mem_kind_name(m.dst_kind));
        op(m.op, str("Memcpy " + kind), EventKind::Memcpy, m.bytes, str(d), str(d));
        break;
      }
      case T::Memset: {
        const auto& m = rec.as<trace::MemsetRec>();
        std::string d = m.element_size ? ::fmt::format("value {} element {} B", +m.value, unsigned(m.element_size))
                                       : ::fmt::format("value {}", +m.value);  // a graph's memset: size unknown
        op(m.op, str("Memset"), EventKind::Memset, m.bytes, str(d), str(d));
        break;
      }
      case T::Sync: {
        const auto& s = rec.as<trace::SyncRec>();
        cpu_event(s.tid, at(s.cpu_begin), at(s.cpu_end), str(r_->api_name(s.api)), EventKind::Sync, s.corr, 0,
                  str(std::string("synchronisation: ") + sync_kind_name(s.kind) +
                      (trace::sync_open(s) ? "  pending: still blocked when the process ended" : "")));
        break;
      }
      case T::Memory: {
        const auto& m = rec.as<trace::MemoryRec>();
        std::string d = ::fmt::format("{} {} at 0x{:x}", m.op == uint8_t(trace::MemOp::Alloc) ? "alloc" : "free",
                                      mem_kind_name(m.mem_kind), +m.address);
        cpu_event(m.tid, at(m.cpu_begin), at(m.cpu_end), str(r_->api_name(m.api)), EventKind::Memory, 0, m.bytes,
                  str(d));
        if (m.result == 0 && m.mem_kind == uint8_t(trace::MemKind::Device))
          f_->mem.push_back({at(m.cpu_end), m.device, m.op, m.address, m.bytes});
        break;
      }
      case T::Api: {
        const auto& a = rec.as<trace::ApiRec>();
        cpu_event(a.tid, at(a.cpu_begin), at(a.cpu_end), str(r_->api_name(a.api)), EventKind::Api, a.corr, 0,
                  a.result ? str(::fmt::format("returned error {}", +a.result)) : 0);
        break;
      }
      case T::Range: {
        const auto& g = rec.as<trace::RangeRec>();
        int64_t gb = at(g.cpu_begin), gend = at(trace::range_end(g));
        extent(gb, gend);
        if (!keep(gb, gend)) break;
        std::string d = ::fmt::format("GPU ops launched inside {}", +g.gpu_ops);
        if (g.gpu_start > 0 && g.gpu_end >= g.gpu_start)
          d += ::fmt::format("  GPU projection {}", tools::human_ns(sat_sub(g.gpu_end, g.gpu_start)));
        if (g.domain_id) d += ::fmt::format("  domain {}", r_->str(g.domain_id));
        if (trace::range_open(g)) d += "  open: not ended when the trace ended";
        if (const trace::PayloadRec* p = payloads_.range(g)) d += "  payload " + tools::payload_text(*p);
        f_->threads[+g.tid].add(gb, sat_sub(gend, gb), str(r_->str(g.name_id)), EventKind::Range, g.depth, 0, 0,
                                str(d));
        int& md = f_->max_depth[+g.tid];
        md = std::max(md, int(g.depth) + 1);
        ++tl_->events;
        break;
      }
      case T::Mark: {
        const auto& m = rec.as<trace::MarkRec>();
        int64_t ts = at(m.ts);
        extent(ts, ts);
        if (!keep(ts, ts)) break;
        const trace::PayloadRec* p = payloads_.mark(m);
        f_->threads[+m.tid].add(ts, 0, str(r_->str(m.name_id)), EventKind::Mark, 0, 0, 0,
                                str(p ? "mark  payload " + tools::payload_text(*p) : std::string("mark")));
        f_->max_depth[+m.tid] = std::max(f_->max_depth[+m.tid], 1);
        ++tl_->events;
        break;
      }
      case T::Loss: {
        const auto& l = rec.as<trace::LossRec>();
        const int64_t lb = l.begin_ns, le = l.end_ns;  // copies: packed fields
        int64_t b = at(lb), e = at(std::max(le, lb));
        extent(b, e);
        if (!keep(b, e)) break;
        tools::LossFacts f;
        for (int k = 0; k < trace::kLossKinds; ++k) f.by_kind[k] = l.count[k], f.dropped += l.count[k];
        std::string d = tools::loss_kinds_text(f) + (l.reason == uint8_t(trace::LossReason::Exit)
                                                         ? ": in progress when the process ended"
                                                         : ": buffer budget in use");
        f_->threads[+l.tid].add(b, sat_sub(e, b),
                                str(::fmt::format("{} records missing", tools::human_count(f.dropped))),
                                EventKind::Missing, 0, 0, 0, str(d));
        f_->max_depth[+l.tid] = std::max(f_->max_depth[+l.tid], 1);
        ++tl_->events;
        break;
      }
      case T::CpuSample: {
        const auto& c = rec.as<trace::CpuSampleRec>();
        extent(at(c.ts), at(c.ts));
        f_->cpu.push_back({at(c.ts), c.total_util / 100.0, c.process_util / 100.0});
        std::string_view tail = rec.tail(sizeof(trace::CpuSampleRec));
        size_t n = std::min<size_t>(c.ncores, tail.size() / 2);
        if (n <= kMaxCoreTracks && f_->cores.size() < n) f_->cores.resize(n);
        for (size_t i = 0; i < n && i < f_->cores.size(); ++i) {
          uint16_t v;
          std::memcpy(&v, tail.data() + 2 * i, sizeof v);
          f_->cores[i].push_back({at(c.ts), v / 100.0});
        }
        break;
      }
      case T::CounterDef:
      case T::CounterMissing: f_->counters.add(rec, *r_); break;
      case T::CounterSample: {
        const int64_t ts = rec.as<trace::CounterSampleRec>().ts;
        extent(at(ts), at(ts));
        f_->counters.add(rec, *r_);
        break;
      }
      case T::GpuSample: {
        const auto& g = rec.as<trace::GpuSampleRec>();
        extent(at(g.ts), at(g.ts));
        f_->nvml[+g.device].push_back({at(g.ts), double(g.util), double(g.mem_used)});
        f_->clocks[+g.device].push_back({at(g.ts), double(g.sm_clock_mhz), g.power_mw / 1000.0, double(g.temp_c)});
        break;
      }
      default: break;
    }
  }

  Timeline* tl_;
  int64_t t0_, t1_;
  FileEvents* f_ = nullptr;
  TraceReader* r_ = nullptr;
  int64_t off_ = 0;
  StackTable stacks_;   // this file's Module and Stack records
  Symbolizer own_sym_;  // ELF symbols, cached per module
  Symbolizer* sym_ = &own_sym_;
  IndexFile* build_ = nullptr;  // the index being built by this read
  IndexFile* piece_ = nullptr;  // the indexed file a piece reads
  OpStacks op_stacks_;
  PayloadJoin payloads_;  // this file's Payload records, each joined to the Range or Mark after it
  std::unordered_map<uint32_t, uint32_t> stack_text_;  // stack id -> string id of its frames
};

std::string program(const std::string& cmdline) {
  std::string argv0 = cmdline.substr(0, cmdline.find(' '));
  size_t slash = argv0.find_last_of('/');
  return slash == std::string::npos ? argv0 : argv0.substr(slash + 1);
}

// Sorts a track's events by start (the page binary-searches them).
void sort_events(EventColumns& c) {
  std::vector<uint32_t> idx(c.size());
  for (uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return c.start[a] < c.start[b]; });
  auto permute = [&](auto& v) {
    auto copy = v;
    for (size_t i = 0; i < idx.size(); ++i) v[i] = copy[idx[i]];
  };
  permute(c.start), permute(c.dur), permute(c.name), permute(c.kind), permute(c.row);
  permute(c.corr), permute(c.bytes), permute(c.detail), permute(c.backtrace);
}

// Fraction of each bin of [t0, t1) covered by the union of the intervals, in percent.
CounterSeries busy_counter(std::vector<std::pair<int64_t, int64_t>>& iv, int64_t t0, int64_t t1) {
  CounterSeries c;
  c.unit = "%";
  if (t1 <= t0 || iv.empty()) return c;
  std::sort(iv.begin(), iv.end());
  double width = double(t1 - t0) / kBusyBins;
  std::vector<double> covered(kBusyBins, 0.0);
  auto add = [&](int64_t s, int64_t e) {  // one union piece
    s = std::max(s, t0), e = std::min(e, t1);
    while (s < e) {
      int b = std::min(kBusyBins - 1, int(double(s - t0) / width));
      int64_t bend = b == kBusyBins - 1 ? t1 : t0 + int64_t(width * (b + 1));
      int64_t piece = std::min(e, std::max(bend, s + 1)) - s;
      covered[size_t(b)] += double(piece);
      s += piece;
    }
  };
  int64_t cs = iv[0].first, ce = iv[0].second;
  for (const auto& [s, e] : iv) {
    if (s > ce) {
      add(cs, ce);
      cs = s, ce = e;
    } else {
      ce = std::max(ce, e);
    }
  }
  add(cs, ce);
  for (int b = 0; b < kBusyBins; ++b) {
    c.ts.push_back(t0 + int64_t(width * b));
    c.value.push_back(std::min(100.0, 100.0 * covered[size_t(b)] / width));
  }
  return c;
}

// Device memory in use from the allocation calls, in time order (a Free without a size takes
// the size of the Alloc at its address).
std::map<uint16_t, CounterSeries> memory_counters(std::vector<MemEvent>& mem) {
  std::stable_sort(mem.begin(), mem.end(), [](const MemEvent& a, const MemEvent& b) { return a.ts < b.ts; });
  std::map<uint16_t, CounterSeries> out;
  std::map<uint16_t, int64_t> used;
  std::map<std::pair<uint16_t, uint64_t>, uint64_t> live;
  for (const MemEvent& m : mem) {
    int64_t& u = used[+m.device];
    if (m.op == uint8_t(trace::MemOp::Alloc)) {
      live[{m.device, m.address}] = m.bytes;
      u += int64_t(m.bytes);
    } else {
      auto it = live.find({m.device, m.address});
      if (it == live.end()) continue;
      u -= int64_t(it->second);
      live.erase(it);
    }
    CounterSeries& c = out[+m.device];
    c.unit = "bytes";
    c.ts.push_back(m.ts);
    c.value.push_back(double(u));
  }
  return out;
}

int add_track(Timeline* tl, int parent, std::string kind, std::string name, int file) {
  Track t;
  t.id = int(tl->tracks.size());
  t.parent = parent;
  t.kind = std::move(kind);
  t.name = std::move(name);
  t.file = file;
  tl->tracks.push_back(std::move(t));
  return tl->tracks.back().id;
}

void add_counter(Timeline* tl, int parent, const std::string& name, int file, const char* series, int device,
                 CounterSeries c) {
  if (c.ts.empty()) return;
  int id = add_track(tl, parent, "counter", name, file);
  Track& t = tl->tracks[size_t(id)];
  t.counter = std::move(c);
  t.series = series;
  t.device = device;
}

// index: when given, gets each file's thread and stream track ids.
void assemble(Timeline* tl, std::vector<FileEvents>& files, TimelineIndex::Impl* index = nullptr) {
  std::vector<std::string> hosts;
  for (const FileEvents& f : files) {
    if (std::find(hosts.begin(), hosts.end(), f.info.host) == hosts.end()) hosts.push_back(f.info.host);
  }
  for (const std::string& host : hosts) {
    int h = add_track(tl, -1, "host", "host " + (host.empty() ? std::string("(unknown)") : host), -1);
    for (size_t fi = 0; fi < files.size(); ++fi) {
      FileEvents& f = files[fi];
      if (f.info.host != host) continue;
      std::string pname = f.info.rank >= 0 ? ::fmt::format("rank {}", f.info.rank) : std::string("process");
      pname += ::fmt::format("  pid {}  {}", f.info.pid, program(f.info.cmdline));
      int p = add_track(tl, h, "process", pname, int(fi));
      // CPU threads: the main thread (tid == pid) first, then by tid.
      std::vector<uint32_t> tids;
      for (const auto& [tid, ev] : f.threads) tids.push_back(tid);
      std::stable_sort(tids.begin(), tids.end(),
                       [&](uint32_t a, uint32_t b) { return (int64_t(a) == f.info.pid) > (int64_t(b) == f.info.pid); });
      for (uint32_t tid : tids) {
        std::string name = ::fmt::format("thread {}", tid);
        auto tn = f.thread_names.find(tid);
        if (tn != f.thread_names.end() && !tn->second.empty()) name += " (" + tn->second + ")";
        int t = add_track(tl, p, "thread", name, int(fi));
        Track& tr = tl->tracks[size_t(t)];
        tr.events = std::move(f.threads[tid]);
        int depth = f.max_depth.count(tid) ? f.max_depth[tid] : 0;
        tr.rows = depth + 1;
        if (index) index->files[fi]->threads[tid] = {t, depth};
        for (uint16_t& r : tr.events.row)
          if (r == kApiRow) r = uint16_t(depth);
        sort_events(tr.events);
      }
      // GPUs and their streams.
      std::map<uint16_t, std::vector<uint32_t>> by_device;
      for (const auto& [sid, ev] : f.streams) by_device[f.stream_device[sid]].push_back(sid);
      for (const auto& [dev, _] : f.nvml) by_device[dev];
      std::map<uint16_t, CounterSeries> mem = memory_counters(f.mem);
      for (auto& [dev, c] : mem) {
        by_device[dev];
        // Allocations made once (a caching allocator's) hold to the end: the chart spans the trace.
        if (!c.ts.empty() && c.ts.back() < tl->t1_ns) c.ts.push_back(tl->t1_ns), c.value.push_back(c.value.back());
      }
      for (auto& [dev, sids] : by_device) {
        std::string dn = ::fmt::format("GPU {}", dev);
        auto it = f.device_names.find(dev);
        if (it != f.device_names.end() && !it->second.empty()) dn += " (" + it->second + ")";
        int g = add_track(tl, p, "gpu", dn, int(fi));
        tl->tracks[size_t(g)].device = dev;
        for (uint32_t sid : sids) {
          auto label = f.stream_labels.find(sid);
          int s = add_track(tl, g, "stream",
                            label != f.stream_labels.end() ? label->second : ::fmt::format("stream {}", sid), int(fi));
          tl->tracks[size_t(s)].device = dev;
          if (index) index->files[fi]->streams[sid] = s;
          tl->tracks[size_t(s)].events = std::move(f.streams[sid]);
          sort_events(tl->tracks[size_t(s)].events);
        }
        add_counter(tl, g, "GPU busy % (from the trace)", int(fi), "gpu_busy", dev,
                    busy_counter(f.busy[dev], tl->t0_ns, tl->t1_ns));
        CounterSeries util, used;
        util.unit = "%", used.unit = "bytes";
        for (const Sample& s : f.nvml[dev]) {
          util.ts.push_back(s.ts), util.value.push_back(s.a);
          used.ts.push_back(s.ts), used.value.push_back(s.b);
        }
        add_counter(tl, g, "GPU utilisation % (NVML)", int(fi), "gpu_util", dev, std::move(util));
        add_counter(tl, g, "device memory used (NVML)", int(fi), "gpu_mem_used", dev, std::move(used));
        add_counter(tl, g, "device memory allocated (cuMemAlloc*)", int(fi), "gpu_mem_alloc", dev, std::move(mem[dev]));
        // SM clock, power and temperature: a track each where NVML gave a value at least once.
        const std::vector<FileEvents::Clocks>& ck = f.clocks[dev];
        const auto device = dev;  // C++17: a lambda cannot capture a structured binding
        auto clock_track = [&](const char* name, const char* series, const char* unit, double FileEvents::Clocks::*v) {
          CounterSeries c;
          c.unit = unit;
          bool any = false;
          for (const FileEvents::Clocks& x : ck) c.ts.push_back(x.ts), c.value.push_back(x.*v), any |= x.*v > 0;
          if (any) add_counter(tl, g, name, int(fi), series, device, std::move(c));
        };
        clock_track("SM clock MHz (NVML)", "gpu_sm_clock", "MHz", &FileEvents::Clocks::sm_mhz);
        clock_track("power W (NVML)", "gpu_power", "W", &FileEvents::Clocks::power_w);
        clock_track("temperature C (NVML)", "gpu_temp", "C", &FileEvents::Clocks::temp_c);
      }
      CounterSeries host, proc;
      host.unit = "%", proc.unit = "% of one core";
      for (const Sample& s : f.cpu) {
        host.ts.push_back(s.ts), host.value.push_back(s.a);
        proc.ts.push_back(s.ts), proc.value.push_back(s.b);
      }
      add_counter(tl, p, "CPU utilisation % (host)", int(fi), "cpu_host", -1, std::move(host));
      add_counter(tl, p, "CPU utilisation % (process)", int(fi), "cpu_process", -1, std::move(proc));
      for (size_t core = 0; core < f.cores.size(); ++core) {
        CounterSeries c;
        c.unit = "%";
        for (const auto& [ts, v] : f.cores[core]) c.ts.push_back(ts), c.value.push_back(v);
        add_counter(tl, p, ::fmt::format("CPU {} utilisation % (host core)", core), int(fi), "cpu_core", -1,
                    std::move(c));
      }
      // CPU performance counters: rates per interval, the process's then per CPU, and IPC.
      for (const exporter::CounterSeries& cs : exporter::counter_series(f.counters)) {
        CounterSeries c;
        c.unit = cs.unit;
        for (const tools::CounterSeriesPoint& pt : cs.points)
          c.ts.push_back(sat_add(pt.ts, f.offset_ns)), c.value.push_back(pt.value);
        add_counter(tl, p, cs.name, int(fi), cs.cpu >= 0 ? "cpu_counter_cpu" : "cpu_counter", -1, std::move(c));
      }
      tl->files.push_back(f.info);
    }
  }
  // files[] is indexed by the order of `files`, which hosts may have reordered: restore it.
  tl->files.clear();
  for (const FileEvents& f : files) tl->files.push_back(f.info);
}

}  // namespace

bool load_timeline(const std::string& job_path, int64_t t0_ns, int64_t t1_ns, Timeline* out, std::string* err,
                   TimelineIndex* index) {
  *out = Timeline{};
  TraceSet set(job_path);
  // Several files (ranks, possibly on several hosts): one clock for all, as `cutrace export`.
  Alignment align;
  out->stragglers.why_not = "one rank";
  if (set.files().size() > 1) {
    std::vector<RankProfile> profiles;
    align = align_traces(set.files(), AlignOptions{}, &profiles);
    out->stragglers = find_stragglers(profiles, align);
    out->clock_warnings = align.warnings;
  }
  std::vector<FileEvents> files;
  Loader loader(out, t0_ns, t1_ns);
  TimelineIndex::Impl* ix = nullptr;
  if (index) {
    index->impl = std::make_unique<TimelineIndex::Impl>();
    ix = index->impl.get();
  }
  auto one = [&](TraceReader& r, IndexFile* f) {
    files.emplace_back();
    int64_t offset = set.files().size() > 1 ? align.offset_of(r.path()) : 0;
    loader.index_into(f);
    loader.read(r, files.back(), offset);
    if (!f) return;
    f->offset_ns = offset;
    f->stacks = loader.take_stacks();
    ix->blocks += f->blocks.size();
    r.close();  // the fd and buffers; a piece opens the file again
  };
  if (ix) {
    for (const std::string& path : set.files()) {  // set.for_each's readers do not outlive the call
      auto f = std::make_unique<IndexFile>();
      f->reader = std::make_unique<TraceReader>();
      std::string e;
      if (!f->reader->open(path, &e)) {
        out->errors.push_back(e);
        continue;
      }
      one(*f->reader, f.get());
      ix->files.push_back(std::move(f));
    }
    if (set.files().empty()) out->errors.push_back(job_path + ": no *.cutrace files");
  } else {
    set.for_each([&](TraceReader& r) { one(r, nullptr); });
    for (const std::string& e : set.errors()) out->errors.push_back(e);
  }
  out->clock = set.files().size() > 1 ? align.method : "monotonic";
  if (files.empty()) {
    *err = out->errors.empty() ? job_path + ": nothing to read" : out->errors.front();
    if (index) index->impl.reset();
    return false;
  }
  if (out->t0_ns > out->t1_ns) out->t0_ns = out->t1_ns = 0;  // no timed record at all
  assemble(out, files, ix);
  if (ix) ix->clock = out->clock, ix->t0_ns = out->t0_ns, ix->t1_ns = out->t1_ns;
  return true;
}

TimelineIndex::TimelineIndex() = default;
TimelineIndex::~TimelineIndex() = default;

uint64_t TimelineIndex::blocks() const { return impl ? impl->blocks : 0; }
uint64_t TimelineIndex::last_blocks_read() const { return impl ? impl->last_read : 0; }

bool TimelineIndex::piece(int64_t t0_ns, int64_t t1_ns, Timeline* out, std::string* err) {
  *out = Timeline{};
  if (!impl) {
    *err = "no index";
    return false;
  }
  std::lock_guard<std::mutex> lock(impl->mu);
  Loader loader(out, t0_ns, t1_ns);
  std::vector<FileEvents> files(impl->files.size());
  uint64_t read = 0;
  for (size_t fi = 0; fi < impl->files.size(); ++fi) {
    IndexFile& ix = *impl->files[fi];
    std::vector<uint64_t> offsets;
    for (const IndexFile::Block& b : ix.blocks) {
      if (b.timed && b.hi >= t0_ns && b.lo < t1_ns) offsets.push_back(b.offset);
    }
    read += offsets.size();
    if (!offsets.empty()) loader.read_piece(ix, offsets, files[fi], &impl->sym);
  }
  impl->last_read = read;
  // The tracks of the whole job's tree, by id (tree order), whatever this range holds.
  std::vector<std::pair<int, Track>> tracks;
  for (size_t fi = 0; fi < impl->files.size(); ++fi) {
    IndexFile& ix = *impl->files[fi];
    FileEvents& f = files[fi];
    for (const auto& [tid, id_depth] : ix.threads) {
      Track t;
      t.id = id_depth.first, t.kind = "thread", t.file = int(fi), t.rows = id_depth.second + 1;
      auto it = f.threads.find(tid);
      if (it != f.threads.end()) t.events = std::move(it->second);
      for (uint16_t& r : t.events.row)
        if (r == kApiRow) r = uint16_t(id_depth.second);
      sort_events(t.events);
      tracks.emplace_back(t.id, std::move(t));
    }
    for (const auto& [sid, id] : ix.streams) {
      Track t;
      t.id = id, t.kind = "stream", t.file = int(fi);
      auto it = f.streams.find(sid);
      if (it != f.streams.end()) t.events = std::move(it->second);
      sort_events(t.events);
      tracks.emplace_back(t.id, std::move(t));
    }
  }
  std::sort(tracks.begin(), tracks.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [id, t] : tracks) out->tracks.push_back(std::move(t));
  out->clock = impl->clock;
  out->t0_ns = impl->t0_ns, out->t1_ns = impl->t1_ns;
  out->blocks_read = read, out->blocks_indexed = impl->blocks;
  if (impl->files.empty()) {
    *err = "nothing to read";
    return false;
  }
  return true;
}

}  // namespace cutrace::report
