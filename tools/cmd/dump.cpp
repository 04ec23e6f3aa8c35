// `cutrace dump FILE [--limit N] [--type NAME]`: the header, the metadata, one line per record
// with every field (names resolved, times in ns plus a column relative to the process start)
// and the file status.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "collector/nvtx_meta.h"
#include "tools/analysis/losses.h"
#include "tools/analysis/stacks.h"
#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"
#include "tools/common/payload.h"
#include "trace/reader.h"

namespace {

namespace tf = cutrace::trace;
using cutrace::Record;
using cutrace::TraceReader;
using cutrace::tools::quote;

// fmt::format binding its arguments by value: fields of packed records may be misaligned, and
// a reference bound to one is undefined behaviour.
template <class... T>
std::string format_copies(fmt::format_string<T...> f, T... args) {
  return fmt::format(f, args...);
}

// b - a without signed overflow: the fields come from the file, and a damaged one may hold any
// value (fuzz_reader: "signed integer overflow" in cpu_dur).
int64_t span(int64_t a, int64_t b) { return int64_t(uint64_t(b) - uint64_t(a)); }

struct Options {
  std::string path;
  uint64_t limit = 0;  // 0: no limit
  std::string type;
  bool stats = false;
};

std::string flag_names(uint32_t flags, const std::pair<uint32_t, const char*>* names, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    if (!(flags & names[i].first)) continue;
    if (!out.empty()) out += '|';
    out += names[i].second;
    flags &= ~names[i].first;
  }
  if (flags) out += format_copies("{}{:#x}", out.empty() ? "" : "|", flags);
  return out.empty() ? "0" : out;
}

std::string op_flags(uint16_t flags) {
  static const std::pair<uint32_t, const char*> names[] = {{tf::kOpInferredStart, "inferred_start"},
                                                           {tf::kOpNoGpuTime, "no_gpu_time"},
                                                           {tf::kOpCaptured, "captured"},
                                                           {tf::kOpError, "error"},
                                                           {tf::kOpAsync, "async"},
                                                           {tf::kOpPerThreadStream, "per_thread_stream"},
                                                           {tf::kOpNotSampled, "not_sampled"},
                                                           {tf::kOpGraphNodes, "graph_nodes"},
                                                           {tf::kOpGraphNode, "graph_node"},
                                                           {tf::kOpPendingExit, "pending_exit"}};
  return flag_names(flags, names, std::size(names));
}

std::string end_flags(uint32_t flags) {
  static const std::pair<uint32_t, const char*> names[] = {
      {tf::kEndClean, "clean"}, {tf::kEndSignal, "signal"}, {tf::kEndWriteError, "write_error"}};
  return flag_names(flags, names, std::size(names));
}

const char* range_kind_name(const tf::RangeRec& g) {
  const bool open = tf::range_open(g);
  switch (tf::range_kind(g)) {
    case tf::RangeKind::PushPop: return open ? "push_pop open" : "push_pop";
    case tf::RangeKind::StartEnd: return open ? "start_end open" : "start_end";
    default: return "unknown";
  }
}

const char* range_source_name(uint8_t source) {
  return source == uint8_t(tf::RangeSource::Nvtx)  ? "nvtx"
         : source == uint8_t(tf::RangeSource::Api) ? "api"
                                                   : "unknown";
}

// Record type names: the reader's, plus the types this tool knows that an older reader may not.
const char* type_name(uint16_t type) {
  if (type == uint16_t(tf::RecType::Range)) return "Range";
  if (type == uint16_t(tf::RecType::Mark)) return "Mark";
  return cutrace::rec_type_name(type);
}

bool parse_type(std::string_view name, uint16_t* type) {
  if (cutrace::parse_rec_type(name, type)) return true;
  for (uint16_t t : {uint16_t(tf::RecType::Range), uint16_t(tf::RecType::Mark)}) {
    std::string_view n = type_name(t);
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      *type = t;
      return true;
    }
  }
  return false;
}

std::string uuid_text(const uint8_t* u) {
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    hex += format_copies("{:02x}", u[i]);
  }
  return "GPU-" + hex;
}

// Formats every field of a record; names come from the reader's string table.
class RecordPrinter {
 public:
  explicit RecordPrinter(const TraceReader& r) : r_(r) {}

  std::string fields(const Record& rec) const;
  // Every record goes through here, printed or not: stacks refer to earlier Module/Stack records.
  void observe(const Record& rec) { stacks_.absorb(rec, r_), payloads_.see(rec); }
  static int64_t timestamp(const Record& rec);  // 0 when the record has none

 private:
  std::string s(uint32_t id) const { return format_copies("#{} {}", id, quote(r_.str(id))); }
  // An NVTX category id, with its name when the trace names it (Meta nvtx_category/...).
  std::string category(uint32_t id, uint32_t domain_id) const {
    std::string_view n = id ? r_.meta(cutrace::category_meta_key(id, domain_id ? r_.str(domain_id) : "")) : "";
    return n.empty() ? std::to_string(id) : format_copies("{} {}", id, quote(n));
  }
  std::string api(uint16_t id) const { return format_copies("#{} {}", id, quote(r_.api_name(id))); }
  // " payload=TYPE:VALUE" at the end of a Range or Mark line (tools/common/payload.h), or "".
  static std::string payload(const tf::PayloadRec* p) {
    return p ? " payload=" + cutrace::tools::payload_text(*p) : "";
  }
  std::string cpu(int64_t b, int64_t e) const { return format_copies("cpu=[{}..{}] cpu_dur={}", b, e, span(b, e)); }
  std::string op(const tf::OpCommon& o) const;
  static std::string short_record(const Record& rec, size_t want) {
    return format_copies("size={} (malformed: shorter than {} bytes)", rec.size(), want);
  }
  std::string metadata(const Record& rec) const;
  std::string operation(const Record& rec) const;
  std::string sample(const Record& rec) const;
  std::string stack(const Record& rec) const;  // Module, Stack, OpStack, PyCode, PyStack (symbolised)

  const TraceReader& r_;
  mutable cutrace::StackTable stacks_;
  mutable cutrace::Symbolizer symbolizer_;
  cutrace::PayloadJoin payloads_;
};

std::string RecordPrinter::stack(const Record& rec) const {
  switch (rec.type()) {
    case tf::RecType::Module: {
      const auto& m = rec.as<tf::ModuleRec>();
      return format_copies("module={} path={} base={:#x} size={} build_id={}", m.module, s(m.path_id), m.base, m.size,
                           m.build_id_id ? s(m.build_id_id) : std::string("0"));
    }
    case tf::RecType::Stack: {
      const auto& st = rec.as<tf::StackRec>();
      std::string out = format_copies("stack={} depth={}", st.stack, st.depth);
      size_t i = 0;
      for (const cutrace::SymFrame& f : symbolizer_.stack(stacks_, st.stack))
        out += format_copies(" [{}] {}", i++, cutrace::frame_text(f));
      return out;
    }
    case tf::RecType::PyCode: {
      const auto& c = rec.as<tf::PyCodeRec>();
      return format_copies("code={} file={} name={} qualname={} first_line={}", c.code, s(c.file_id), s(c.name_id),
                           s(c.qualname_id), c.first_line);
    }
    case tf::RecType::PyStack: {
      const auto& st = rec.as<tf::PyStackRec>();
      std::string out = format_copies("stack={} py_depth={} depth={}", st.stack, st.py_depth, st.depth);
      size_t i = 0;
      for (const cutrace::SymFrame& f : symbolizer_.stack(stacks_, st.stack))
        out += format_copies(" [{}] {}", i++, cutrace::frame_text(f));
      return out;
    }
    case tf::RecType::OpStack: {
      const auto& o = rec.as<tf::OpStackRec>();
      std::vector<cutrace::SymFrame> frames = symbolizer_.stack(stacks_, o.stack);
      return format_copies("corr={} stack={} op={} innermost={}", o.corr, o.stack, type_name(o.op_type),
                           frames.empty() ? std::string("?") : quote(cutrace::frame_text(frames.front())));
    }
    default: return {};
  }
}

std::string RecordPrinter::op(const tf::OpCommon& o) const {
  return format_copies(
      "corr={} tid={} stream={} device={} api={} {} gpu=[{}..{}] gpu_dur={} flags={} result={}", o.corr, o.tid,
      o.stream, o.device, api(o.api), cpu(o.cpu_begin, o.cpu_end), o.gpu_start, o.gpu_end,
      (o.flags & tf::kOpPendingExit) ? std::string("pending")
                                     : std::to_string(o.gpu_start && o.gpu_end ? span(o.gpu_start, o.gpu_end) : 0),
      op_flags(o.flags), o.result);
}

std::string RecordPrinter::metadata(const Record& rec) const {
  switch (rec.type()) {
    case tf::RecType::String:
      return format_copies("id={} text={}", rec.as<tf::StringRec>().id, quote(rec.tail(sizeof(tf::StringRec))));
    case tf::RecType::Meta: {
      const auto& m = rec.as<tf::MetaRec>();
      return format_copies("key={} value={}", s(m.key_id), s(m.value_id));
    }
    case tf::RecType::ApiName: {
      const auto& a = rec.as<tf::ApiNameRec>();
      return format_copies("api={} name={}", a.api, s(a.name_id));
    }
    case tf::RecType::Thread: {
      const auto& t = rec.as<tf::ThreadRec>();
      return format_copies("tid={} name={}", t.tid, s(t.name_id));
    }
    case tf::RecType::Device: {
      const auto& d = rec.as<tf::DeviceRec>();
      return format_copies("device={} name={} cc={}.{} sm_count={} total_mem={} uuid={} pci_bus={}", d.device,
                           s(d.name_id), d.cc_major, d.cc_minor, d.sm_count, d.total_mem, uuid_text(d.uuid), d.pci_bus);
    }
    case tf::RecType::Stream: {
      const auto& st = rec.as<tf::StreamRec>();
      return format_copies("stream={} device={} flags={:#x} handle={:#x}", st.stream, st.device, st.flags, st.handle);
    }
    default: return {};
  }
}

std::string RecordPrinter::operation(const Record& rec) const {
  switch (rec.type()) {
    case tf::RecType::Kernel: {
      const auto& k = rec.as<tf::KernelRec>();
      return format_copies(
          "{} name={} grid=({},{},{}) block=({},{},{}) dyn_smem={} static_smem={} regs={} "
          "kind={} graph_id={}",
          op(k.op), s(k.name_id), k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2], k.dyn_smem,
          k.static_smem, k.regs, cutrace::kernel_kind_name(k.kind), k.graph_id);
    }
    case tf::RecType::Memcpy: {
      const auto& m = rec.as<tf::MemcpyRec>();
      return format_copies(
          "{} bytes={} copy_kind={} src_kind={} dst_kind={} src_device={} "
          "dst_device={}",
          op(m.op), m.bytes, cutrace::copy_kind_name(m.copy_kind), cutrace::mem_kind_name(m.src_kind),
          cutrace::mem_kind_name(m.dst_kind), m.src_device, m.dst_device);
    }
    case tf::RecType::Memset: {
      const auto& m = rec.as<tf::MemsetRec>();
      return format_copies("{} bytes={} value={:#x} element_size={}", op(m.op), m.bytes, m.value, m.element_size);
    }
    case tf::RecType::Sync: {
      const auto& y = rec.as<tf::SyncRec>();
      return format_copies(
          "kind={} corr={} tid={} stream={} device={} api={} {} event={:#x} "
          "result={}{}",
          cutrace::sync_kind_name(y.kind), y.corr, y.tid, y.stream, y.device, api(y.api), cpu(y.cpu_begin, y.cpu_end),
          y.event, y.result, tf::sync_open(y) ? " open=pending_at_exit" : "");
    }
    case tf::RecType::Memory: {
      const auto& m = rec.as<tf::MemoryRec>();
      const char* what = m.op == uint8_t(tf::MemOp::Alloc)  ? "alloc"
                         : m.op == uint8_t(tf::MemOp::Free) ? "free"
                                                            : "unknown";
      return format_copies(
          "op={} mem_kind={} address={:#x} bytes={} tid={} stream={} device={} "
          "api={} {} result={}",
          what, cutrace::mem_kind_name(m.mem_kind), m.address, m.bytes, m.tid, m.stream, m.device, api(m.api),
          cpu(m.cpu_begin, m.cpu_end), m.result);
    }
    case tf::RecType::Api: {
      const auto& a = rec.as<tf::ApiRec>();
      return format_copies("api={} corr={} tid={} stream={} device={} {} arg={:#x} result={}", api(a.api), a.corr,
                           a.tid, a.stream, a.device, cpu(a.cpu_begin, a.cpu_end), a.arg, a.result);
    }
    case tf::RecType::Range: {
      if (rec.size() < sizeof(tf::RangeRec)) return short_record(rec, sizeof(tf::RangeRec));
      const auto& g = rec.as<tf::RangeRec>();
      return format_copies(
          "id={} kind={} source={} tid={} end_tid={} depth={} name={} domain={} category={} "
          "color={:#010x} {} gpu=[{}..{}] gpu_dur={} gpu_ops={}{}",
          g.id, range_kind_name(g), range_source_name(g.source), g.tid, g.end_tid, g.depth, s(g.name_id),
          s(g.domain_id), category(g.category, g.domain_id), g.color, cpu(g.cpu_begin, tf::range_end(g)), g.gpu_start,
          g.gpu_end, g.gpu_start && g.gpu_end ? span(g.gpu_start, g.gpu_end) : 0, g.gpu_ops,
          payload(payloads_.range(g)));
    }
    case tf::RecType::Mark: {
      if (rec.size() < sizeof(tf::MarkRec)) return short_record(rec, sizeof(tf::MarkRec));
      const auto& k = rec.as<tf::MarkRec>();
      return format_copies("ts={} source={} tid={} name={} domain={} category={} color={:#010x}{}", k.ts,
                           range_source_name(k.source), k.tid, s(k.name_id), s(k.domain_id),
                           category(k.category, k.domain_id), k.color, payload(payloads_.mark(k)));
    }
    default: return {};
  }
}

std::string RecordPrinter::sample(const Record& rec) const {
  switch (rec.type()) {
    case tf::RecType::Payload: {
      const auto& p = rec.as<tf::PayloadRec>();
      return format_copies("of={} target={} tid={} ts={}{}", type_name(p.of), p.target, p.tid, p.ts, payload(&p));
    }
    case tf::RecType::CpuSample: {
      const auto& c = rec.as<tf::CpuSampleRec>();
      std::string_view tail = rec.tail(sizeof(tf::CpuSampleRec));
      size_t n = std::min<size_t>(c.ncores, tail.size() / 2);
      std::string cores;
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, tail.data() + 2 * i, sizeof v);
        cores += format_copies("{}{:.2f}", i ? "," : "", v / 100.0);
      }
      return format_copies("ts={} ncores={} total_util={:.2f}% process_util={:.2f}% cores=[{}]", c.ts, c.ncores,
                           c.total_util / 100.0, c.process_util / 100.0, cores);
    }
    case tf::RecType::GpuSample: {
      const auto& g = rec.as<tf::GpuSampleRec>();
      return format_copies(
          "ts={} device={} util={}% mem_util={}% temp_c={} sm_clock_mhz={} "
          "power_mw={} mem_used={} mem_total={}",
          g.ts, g.device, g.util, g.mem_util, g.temp_c, g.sm_clock_mhz, g.power_mw, g.mem_used, g.mem_total);
    }
    case tf::RecType::ClockSync: {
      const auto& c = rec.as<tf::ClockSyncRec>();
      return format_copies("monotonic_ns={} realtime_ns={}", c.monotonic_ns, c.realtime_ns);
    }
    case tf::RecType::Dropped: {
      const auto& d = rec.as<tf::DroppedRec>();
      return format_copies("ts={} tid={} count={}", d.ts, d.tid, d.count);
    }
    case tf::RecType::Loss: {
      const auto& l = rec.as<tf::LossRec>();
      std::string counts;
      for (int k = 0; k < tf::kLossKinds; ++k)
        if (l.count[k]) counts += format_copies(" {}={}", cutrace::tools::loss_kind_name(k), l.count[k]);
      const char* why = l.reason == uint8_t(tf::LossReason::Budget) ? "budget"
                        : l.reason == uint8_t(tf::LossReason::Exit) ? "exit"
                                                                    : "unknown";
      return format_copies("begin={} end={} tid={} reason={}{}", l.begin_ns, l.end_ns, l.tid, why, counts);
    }
    case tf::RecType::Window: {
      const auto& w = rec.as<tf::WindowRec>();
      const char* edge = w.edge == uint8_t(tf::WindowEdge::Begin) ? "begin"
                         : w.edge == uint8_t(tf::WindowEdge::End) ? "end"
                                                                  : "unknown";
      return format_copies("ts={} index={} reason={} edge={}", w.ts, w.index, s(w.reason_id), edge);
    }
    case tf::RecType::End: {
      const auto& e = rec.as<tf::EndRec>();
      return format_copies("ts={} records={} dropped={} flags={}", e.ts, e.records, e.dropped, end_flags(e.flags));
    }
    case tf::RecType::Hang: {
      const auto& h = rec.as<tf::HangRec>();
      return format_copies("ts={} hang={} since={} timeout_ns={} ops={} threads={} collectives={}/{} report={}", h.ts,
                           h.hang, h.since, h.timeout_ns, h.ops, h.threads, h.collectives_done, h.collectives_launched,
                           s(h.report_id));
    }
    case tf::RecType::HangItem: {
      const auto& i = rec.as<tf::HangItemRec>();
      static const char* const kinds[] = {"unknown", "op", "thread", "collective_done"};
      return format_copies("hang={} kind={} span=[{}..{}] corr={} seq={} tid={} stream={} name={} stack={}", i.hang,
                           kinds[i.kind < 4 ? i.kind : 0], i.begin, i.end, i.corr, i.seq, i.tid, i.stream, s(i.name_id),
                           i.stack);
    }
    case tf::RecType::HangEnd: {
      const auto& e = rec.as<tf::HangEndRec>();
      return format_copies("ts={} hang={} stuck_ns={}", e.ts, e.hang, e.stuck_ns);
    }
    case tf::RecType::CounterDef: {
      const auto& d = rec.as<tf::CounterDefRec>();
      return format_copies("counter={} name={} scope={} cpu={} unit={}", d.counter, s(d.name_id),
                           d.scope == uint8_t(tf::CounterScope::Cpu) ? "cpu" : "process", d.cpu,
                           d.unit == uint8_t(tf::CounterUnit::Nanoseconds) ? "ns" : "events");
    }
    case tf::RecType::CounterSample: {
      const auto& c = rec.as<tf::CounterSampleRec>();
      std::string_view tail = rec.tail(sizeof(tf::CounterSampleRec));
      size_t n = std::min<size_t>(c.count, tail.size() / sizeof(tf::CounterValue));
      std::string vals;
      for (size_t i = 0; i < n; ++i) {
        tf::CounterValue v;
        std::memcpy(&v, tail.data() + i * sizeof v, sizeof v);
        vals += format_copies("{}{}:{}", i ? "," : "", v.counter, v.delta);
        if (v.running < 10000) vals += format_copies("@{:.2f}%", v.running / 100.0);
      }
      return format_copies("ts={} interval_ns={} count={} values=[{}]", c.ts, c.interval_ns, c.count, vals);
    }
    case tf::RecType::CounterMissing: {
      const auto& m = rec.as<tf::CounterMissingRec>();
      return format_copies("name={} scope={} errno={} reason={}", s(m.name_id),
                           m.scope == uint8_t(tf::CounterScope::Cpu) ? "cpu" : "process", m.err, s(m.reason_id));
    }
    default: return {};
  }
}

std::string RecordPrinter::fields(const Record& rec) const {
  uint16_t t = rec.type_raw();
  if ((t >= uint16_t(tf::RecType::Module) && t <= uint16_t(tf::RecType::OpStack)) ||
      t == uint16_t(tf::RecType::PyCode) || t == uint16_t(tf::RecType::PyStack))
    return stack(rec);
  if (t >= uint16_t(tf::RecType::CounterDef) && t <= uint16_t(tf::RecType::CounterMissing)) return sample(rec);
  std::string out = t < uint16_t(tf::RecType::Kernel)      ? metadata(rec)
                    : t < uint16_t(tf::RecType::CpuSample) ? operation(rec)
                                                           : sample(rec);
  if (!out.empty()) return out;
  return format_copies("type={} size={} (unknown record type)", t, rec.size());
}

int64_t RecordPrinter::timestamp(const Record& rec) {
  switch (rec.type()) {
    case tf::RecType::Kernel: return rec.as<tf::KernelRec>().op.cpu_begin;
    case tf::RecType::Memcpy: return rec.as<tf::MemcpyRec>().op.cpu_begin;
    case tf::RecType::Memset: return rec.as<tf::MemsetRec>().op.cpu_begin;
    case tf::RecType::Sync: return rec.as<tf::SyncRec>().cpu_begin;
    case tf::RecType::Memory: return rec.as<tf::MemoryRec>().cpu_begin;
    case tf::RecType::Api: return rec.as<tf::ApiRec>().cpu_begin;
    case tf::RecType::Range: return rec.size() >= sizeof(tf::RangeRec) ? rec.as<tf::RangeRec>().cpu_begin : 0;
    case tf::RecType::Mark: return rec.size() >= sizeof(tf::MarkRec) ? rec.as<tf::MarkRec>().ts : 0;
    case tf::RecType::CpuSample: return rec.as<tf::CpuSampleRec>().ts;
    case tf::RecType::GpuSample: return rec.as<tf::GpuSampleRec>().ts;
    case tf::RecType::ClockSync: return rec.as<tf::ClockSyncRec>().monotonic_ns;
    case tf::RecType::Dropped: return rec.as<tf::DroppedRec>().ts;
    case tf::RecType::Loss: return rec.as<tf::LossRec>().begin_ns;
    case tf::RecType::Window: return rec.as<tf::WindowRec>().ts;
    case tf::RecType::End: return rec.as<tf::EndRec>().ts;
    case tf::RecType::Payload: return rec.as<tf::PayloadRec>().ts;
    case tf::RecType::CounterSample: return rec.as<tf::CounterSampleRec>().ts;
    default: return 0;
  }
}

void print_header(const TraceReader& r) {
  std::printf("file      %s (%llu bytes)\n", cutrace::tools::printable(r.path()).c_str(),
              static_cast<unsigned long long>(r.file_size()));
  std::printf("format    %u.%u\n", r.version_major(), r.version_minor());
  const char* label = "meta";
  for (const auto& [key, value] : r.metas()) {
    std::printf("%-9s %s = %s\n", label, cutrace::tools::printable(key).c_str(), quote(value).c_str());
    label = "";
  }
}

void print_status(const TraceReader& r) {
  const cutrace::ReadStatus& s = r.status();
  std::string line = s.complete ? "complete"
                                : "truncated (no End record: the process did not "
                                  "close the trace)";
  line += format_copies(
      "; blocks={} bad_blocks={} seq_gaps={} missing_blocks={} records={} "
      "bad_records={} trailing_bytes={} dropped_records={}",
      s.blocks, s.bad_blocks, s.seq_gaps, s.missing_blocks, s.records, s.bad_records, s.trailing_bytes, s.dropped);
  if (s.duplicate_blocks) line += format_copies("; duplicate_blocks={} (copies skipped)", s.duplicate_blocks);
  if (s.complete) {
    line +=
        format_copies("; end: records={} dropped={} flags={}", s.end.records, s.end.dropped, end_flags(s.end.flags));
  }
  std::printf("status    %s\n", line.c_str());
}

// --stats: what the file spends its bytes on. Packed column sizes are before LZ4; the LZ4 ratio
// of the whole file applies to them roughly, not exactly.
void print_stats(TraceReader& r) {
  std::map<uint16_t, uint64_t> counts;
  r.read([&](const Record& rec) { ++counts[rec.type_raw()]; });
  const cutrace::ReadStatus& s = r.status();
  uint64_t kernels = counts[uint16_t(tf::RecType::Kernel)];
  std::printf("kernels %llu, file bytes %llu, B/kernel %.2f\n", (unsigned long long)kernels,
              (unsigned long long)r.file_size(), kernels ? double(r.file_size()) / double(kernels) : 0.0);
  std::printf("records %llu, B/record %.2f, blocks %llu, payload %llu bytes -> %llu on disk (LZ4 x%.2f)\n",
              (unsigned long long)s.records, s.records ? double(r.file_size()) / double(s.records) : 0.0,
              (unsigned long long)s.blocks, (unsigned long long)s.payload_bytes, (unsigned long long)s.compressed_bytes,
              s.compressed_bytes ? double(s.payload_bytes) / double(s.compressed_bytes) : 0.0);
  for (const auto& [type, n] : counts) {
    std::printf("  %-10s %12llu records\n", type_name(type), (unsigned long long)n);
  }
  if (r.version_major() >= 2) {
    std::printf("packed columns (bytes before LZ4; per kernel):\n");
    for (int c = 0; c < tf::kColumnCount; ++c) {
      uint64_t b = s.columns.bytes[c];
      std::printf("  %-12s %12llu  %6.2f\n", cutrace::codec::column_name(c), (unsigned long long)b,
                  kernels ? double(b) / double(kernels) : 0.0);
    }
  }
  print_status(r);
}

int run(const Options& o) {
  TraceReader r;
  std::string err;
  if (!r.open(o.path, &err)) {
    std::fprintf(stderr, "cutrace: %s\n", cutrace::tools::printable(err).c_str());
    return 1;
  }
  if (o.stats) {
    print_stats(r);
    return r.error().empty() ? 0 : 1;
  }
  uint16_t only = 0;
  bool filter = !o.type.empty() && parse_type(o.type, &only);
  int64_t base = std::atoll(std::string(r.meta("start_monotonic_ns")).c_str());

  print_header(r);
  std::printf("%9s %18s %-9s %s\n", "#", "rel_ms", "type", "fields");
  RecordPrinter printer(r);
  uint64_t index = 0, shown = 0;
  r.read([&](const Record& rec) {
    uint64_t i = index++;
    printer.observe(rec);
    int64_t ts = RecordPrinter::timestamp(rec);
    if (ts && !base) base = ts;
    if ((filter && rec.type_raw() != only) || (o.limit && shown >= o.limit)) return;
    ++shown;
    std::string rel = ts ? format_copies("{:+.6f}", double(span(base, ts)) / 1e6) : "";
    std::printf("%9llu %18s %-9s %s\n", static_cast<unsigned long long>(i), rel.c_str(), type_name(rec.type_raw()),
                printer.fields(rec).c_str());
  });
  print_status(r);
  if (!r.error().empty()) {
    std::fprintf(stderr, "cutrace: %s: %s\n", cutrace::tools::printable(r.path()).c_str(), r.error().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

void add_dump_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("dump", "Print every record of one trace file");
  sub->add_option("file", o->path, "a .cutrace file")->required();
  sub->add_flag("--stats", o->stats, "print record counts, bytes per kernel and per packed column instead of records");
  sub->add_option("--limit", o->limit, "print at most N records (the status still covers all)");
  sub->add_option("--type", o->type, "print only records of this type (Kernel, Memcpy, Range, Mark, ...)")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            uint16_t t;
            return parse_type(name, &t) ? "" : "unknown record type " + name;
          },
          "TYPE"));
  sub->callback([o] {
    if (int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}
