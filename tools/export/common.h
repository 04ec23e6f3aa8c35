// Shared by the exporters of `cutrace export` (tools/export/chrome.cpp, tools/export/perfetto.cpp):
// names in the vocabulary of PyTorch's profiler, the clock offset of a file, the device a range's
// GPU projection belongs to, a buffered output file, and the statistics the command prints.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/analysis/align.h"
#include "tools/common/payload.h"
#include "trace/format.h"
#include "trace/reader.h"

namespace cutrace::exporter {

// What the last export did; `cutrace export` prints it (tests read it too).
struct ExportStats {
  uint64_t events = 0;  // events (chrome) or TracePackets (perfetto) written
  uint64_t bytes = 0;   // bytes written, all outputs together
  std::vector<std::string> outputs;
  std::vector<std::string> warnings;  // files skipped or read with damage
  std::vector<std::string> skipped;   // "path: reason" of each file that did not open (the rest is exported)
  void clear() { *this = ExportStats{}; }
};
inline ExportStats g_stats;

// t + off and t - off modulo 2^64: times and clock offsets come from the file, and a damaged one
// may hold any value (fuzz_export_chrome: signed integer overflow). Garbage in, garbage out, no UB.
inline int64_t wrap_add(int64_t t, int64_t off) { return int64_t(uint64_t(t) + uint64_t(off)); }
inline int64_t wrap_sub(int64_t t, int64_t off) { return int64_t(uint64_t(t) - uint64_t(off)); }

// Offset of `file` in `a` (common ns = file ns + offset). Same as Alignment::offset_of, which
// lives in tools/analysis/align.cpp: the exporters do not depend on it so that tests can build them alone.
inline int64_t offset_for(const Alignment& a, const std::string& file) {
  for (const RankClock& r : a.ranks)
    if (r.file == file) return r.offset_ns;
  return 0;
}

inline int64_t parse_i64(std::string_view s, int64_t fallback) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty() ? v : fallback;
}

inline std::string base_name(std::string_view path) {
  size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "python" from "/opt/venv/bin/python -u train.py"; "process" when unknown.
inline std::string program_name(std::string_view cmdline) {
  std::string_view argv0 = cmdline.substr(0, cmdline.find(' '));
  std::string b = base_name(argv0);
  return b.empty() ? "process" : b;
}

// The process facts every exporter shows.
struct ProcessInfo {
  int64_t pid = 0;
  int rank = 0;
  int world_size = 1;
  std::string host;
  std::string program;
  std::string cmdline;
  int64_t start_mono = 0;  // capture start, this file's clock; 0 if unknown
};

inline ProcessInfo process_info(const TraceReader& r) {
  ProcessInfo p;
  p.pid = parse_i64(r.meta("pid"), 0);
  p.rank = int(parse_i64(r.meta("rank"), 0));
  p.world_size = int(parse_i64(r.meta("world_size"), 1));
  if (p.world_size < 1) p.world_size = 1;
  p.host = std::string(r.meta("host"));
  p.cmdline = std::string(r.meta("cmdline"));
  p.program = program_name(p.cmdline);
  p.start_mono = parse_i64(r.meta("start_monotonic_ns"), 0);
  if (!p.start_mono) p.start_mono = r.clock_sync().monotonic_ns;
  return p;
}

// Kineto's spelling of copy and memory kinds: "Memcpy HtoD (Pageable -> Device)".
inline const char* kineto_copy_kind(uint8_t k) {
  static const char* const names[] = {"Unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
  return k < 6 ? names[k] : "Unknown";
}
inline const char* kineto_mem_kind(uint8_t k) {
  static const char* const names[] = {"Unknown", "Pageable", "Pinned", "Device", "Managed", "Array"};
  return k < 6 ? names[k] : "Unknown";
}
inline std::string memcpy_name(const trace::MemcpyRec& m) {
  return std::string("Memcpy ") + kineto_copy_kind(m.copy_kind) + " (" + kineto_mem_kind(m.src_kind) + " -> " +
         kineto_mem_kind(m.dst_kind) + ")";
}
inline const char* memset_name() { return "Memset (Device)"; }

// The name of a kernel whose KernelConfig record was in a lost block (its name_id is 0).
inline constexpr const char* kUnknownKernel = "(unknown kernel)";

// What an exporter could not read of a file: damaged or missing blocks, and the kernels whose
// KernelConfig was in one (written under kUnknownKernel, without launch configuration).
inline void damage_warnings(const std::string& file, const ReadStatus& rs, std::vector<std::string>* out) {
  if (rs.bad_blocks || rs.missing_blocks)
    out->push_back(file + ": " + std::to_string(rs.bad_blocks) + " damaged and " + std::to_string(rs.missing_blocks) +
                   " missing blocks skipped");
  if (rs.duplicate_blocks)
    out->push_back(file + ": " + std::to_string(rs.duplicate_blocks) +
                   " duplicated blocks (copies of blocks read) skipped");
  if (rs.unresolved_configs)
    out->push_back(file + ": " + std::to_string(rs.unresolved_configs) +
                   " kernels whose name and launch configuration were in a lost block: written as \"" + kUnknownKernel +
                   "\"");
}

// Files of `files` that open; the others go to g_stats.skipped. *err when none opens.
inline std::vector<std::string> readable_files(const std::vector<std::string>& files, std::string* err) {
  std::vector<std::string> ok;
  for (const std::string& f : files) {
    TraceReader r;
    std::string e;
    if (r.open(f, &e)) ok.push_back(f);
    else g_stats.skipped.push_back(e);
  }
  if (ok.empty()) {
    err->clear();
    for (const std::string& e : g_stats.skipped) *err += (err->empty() ? "" : "; ") + e;
  }
  return ok;
}

// GPU time of an operation, when it has one worth drawing.
inline bool has_gpu_time(const trace::OpCommon& op) {
  return !(op.flags & trace::kOpNoGpuTime) && op.gpu_start > 0 && op.gpu_end >= op.gpu_start;
}

// A range records no device: its GPU projection goes to the device its thread launched most
// work on, else the device of the most work in the file, else the first device of the trace.
class DeviceVotes {
 public:
  void op(uint32_t tid, uint16_t device) {
    ++by_thread_[tid][device];
    ++all_[device];
  }
  uint16_t device_for(uint32_t tid, const TraceReader& r) const {
    auto t = by_thread_.find(tid);
    if (t != by_thread_.end()) return top(t->second);
    if (!all_.empty()) return top(all_);
    return r.devices().empty() ? 0 : r.devices().begin()->first;
  }
  bool used(uint16_t device) const { return all_.count(device) != 0; }
  bool any() const { return !all_.empty(); }

 private:
  static uint16_t top(const std::map<uint16_t, uint64_t>& m) {
    uint16_t best = m.begin()->first;
    uint64_t n = 0;
    for (const auto& [d, c] : m)
      if (c > n) best = d, n = c;
    return best;
  }
  std::map<uint32_t, std::map<uint16_t, uint64_t>> by_thread_;
  std::map<uint16_t, uint64_t> all_;
};

// Appends to a file through a large buffer; write errors (ENOSPC, ...) are kept, not thrown.
class OutFile {
 public:
  OutFile() { buf_.reserve(kFlushAt + (64 << 10)); }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  ~OutFile() { close(); }

  bool open(const std::string& path, std::string* err) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      *err = path + ": cannot create: " + std::strerror(errno);
      return false;
    }
    return true;
  }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= kFlushAt) flush();
  }
  void flush() {
    const char* p = buf_.data();
    size_t n = buf_.size();
    while (n && error_.empty() && fd_ >= 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = path_ + ": write failed: " + std::strerror(w < 0 ? errno : EIO);
        break;
      }
      p += w;
      n -= size_t(w);
      written_ += uint64_t(w);
    }
    buf_.clear();
  }
  // Flushes and closes; false (with *err) if any write failed.
  bool close(std::string* err = nullptr) {
    if (fd_ < 0) return error_.empty();
    flush();
    if (::close(fd_) != 0 && error_.empty()) error_ = path_ + ": close failed: " + std::strerror(errno);
    fd_ = -1;
    if (!error_.empty() && err) *err = error_;
    return error_.empty();
  }
  uint64_t written() const { return written_; }

 private:
  static constexpr size_t kFlushAt = 1 << 20;
  int fd_ = -1;
  std::string path_;
  std::string buf_;
  std::string error_;
  uint64_t written_ = 0;
};

// mkdir -p; true if `dir` exists as a directory afterwards.
inline bool make_dirs(const std::string& dir, std::string* err) {
  if (dir.empty()) return true;
  std::string cur;
  size_t i = 0;
  while (i <= dir.size()) {
    size_t j = dir.find('/', i);
    if (j == std::string::npos) j = dir.size();
    cur = dir.substr(0, j);
    if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      *err = cur + ": cannot create directory: " + std::strerror(errno);
      return false;
    }
    i = j + 1;
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *err = dir + ": not a directory";
    return false;
  }
  return true;
}

// "capture begins (reason)" / "capture ends (reason)": a capture window edge's event name.
inline std::string window_label(const TraceReader& r, const trace::WindowRec& w) {
  std::string n = w.edge == uint8_t(trace::WindowEdge::Begin) ? "capture begins (" : "capture ends (";
  n += r.str(w.reason_id);
  n += ')';
  return n;
}

// A copy of a record at an address 4 past a multiple of 8: after the 4-byte RecHeader every field
// of the format's records then sits at its natural alignment. Records sit at any byte offset of
// a block (a verbatim one after a String of odd length), and a handler that binds a reference to
// a field (std::max, a set's insert, a map key, a pair) would make a misaligned load of the
// packed original (UBSan, fuzz_export_chrome on the crafted corpus inputs).
template <class R>
struct AlignedRec {
  alignas(8) unsigned char pad_[4];
  R r;
  explicit AlignedRec(const Record& rec) : r(rec.as<R>()) {}
  explicit AlignedRec(const R& packed) : r(packed) {}
};

// Chrome JSON args of an NVTX payload: ,"payload":VALUE,"payload type":"u64" (nothing for none).
inline void payload_args(std::string& o, const trace::PayloadRec* p) {
  if (!p) return;
  o += ",\"payload\":" + tools::payload_json(*p) + ",\"payload type\":\"" + tools::payload_type_name(p->type) + '"';
}

// Hands one record to the exporter's handler for its type (every exporter has the same set:
// kernel, memcpy, memset, sync, api_call, memory, range, mark, cpu_sample, gpu_sample, window,
// dropped, loss), as an aligned copy; other records are not exported.
template <class E>
void dispatch_record(const Record& rec, E& e) {
  e.payloads_.see(rec);  // a Payload record goes with the Range or Mark that follows it
  switch (rec.type()) {
    case trace::RecType::Kernel: e.kernel(AlignedRec<trace::KernelRec>(rec).r); break;
    case trace::RecType::Memcpy: e.memcpy(AlignedRec<trace::MemcpyRec>(rec).r); break;
    case trace::RecType::Memset: e.memset(AlignedRec<trace::MemsetRec>(rec).r); break;
    case trace::RecType::Sync: e.sync(AlignedRec<trace::SyncRec>(rec).r); break;
    case trace::RecType::Api: e.api_call(AlignedRec<trace::ApiRec>(rec).r); break;
    case trace::RecType::Memory: e.memory(AlignedRec<trace::MemoryRec>(rec).r); break;
    case trace::RecType::Range: e.range(AlignedRec<trace::RangeRec>(rec).r); break;
    case trace::RecType::Mark: e.mark(AlignedRec<trace::MarkRec>(rec).r); break;
    case trace::RecType::CpuSample: e.cpu_sample(AlignedRec<trace::CpuSampleRec>(rec).r); break;
    case trace::RecType::GpuSample: e.gpu_sample(AlignedRec<trace::GpuSampleRec>(rec).r); break;
    case trace::RecType::Window: e.window(AlignedRec<trace::WindowRec>(rec).r); break;
    case trace::RecType::Dropped: e.dropped(AlignedRec<trace::DroppedRec>(rec).r); break;
    case trace::RecType::Loss: e.loss(AlignedRec<trace::LossRec>(rec).r); break;
    default: break;
  }
}

}  // namespace cutrace::exporter
