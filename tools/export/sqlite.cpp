// `cutrace export --format sqlite`: one SQLite database for every rank, with the tables and
// columns of Nsight Systems' SQLite export (`nsys export --type sqlite`, schema as of nsys
// 2024.x), so SQL and scripts written for nsys exports run on it unchanged.
//
// What goes where (one trace record can make rows in two tables, tied by correlationId):
//   Kernel            CUPTI_ACTIVITY_KIND_RUNTIME (host call) + CUPTI_ACTIVITY_KIND_KERNEL (GPU)
//   Kernel, graph     ... + CUPTI_ACTIVITY_KIND_GRAPH_TRACE (one row per graph launch, as nsys
//                     writes with --cuda-graph-trace=graph; the replay's span)
//   graph replay's    KERNEL / MEMCPY / MEMSET only, under the graph launch's correlationId
//     nodes           (as nsys writes with --cuda-graph-trace=node; graphNodeId is not known)
//   Memcpy / Memset   RUNTIME + CUPTI_ACTIVITY_KIND_MEMCPY / CUPTI_ACTIVITY_KIND_MEMSET
//   Sync              RUNTIME + CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (context/stream/event
//                     sync and stream wait; the query calls are RUNTIME rows only)
//   Memory            RUNTIME + CUDA_GPU_MEMORY_USAGE_EVENTS (successful calls)
//   Api               RUNTIME
//   Range / Mark      NVTX_EVENTS (59 push/pop, 60 start/end, 34 mark; 75 names each domain)
//   Device, Stream,   TARGET_INFO_GPU, TARGET_INFO_CUDA_STREAM, ThreadNames, PROCESSES
//   Thread, Meta
// plus the ENUM_* tables those columns reference, TARGET_INFO_SESSION_START_TIME,
// META_DATA_EXPORT and cutrace's own cutrace_rank(globalPid, rank, host, file, pid, clockOffsetNs)
// and cutrace_device (below).
//
// Conventions (where cutrace's data differs from CUPTI's):
// - Times are ns since the session start, like nsys: the common clock of tools/analysis/align.h (file
//   monotonic ns + the file's offset) minus the session start, which is the earliest capture
//   start (Meta start_monotonic_ns) of all ranks on that clock. On the common clock a rank's
//   times are wall-clock ns, so TARGET_INFO_SESSION_START_TIME.utcEpochNs = session start, and
//   utcEpochNs + start is the UTC time of an event.
// - globalTid = hwId << 48 | pid << 24 | tid (24 bits each for pid and tid), globalPid the same
//   with tid 0: nsys's serialized GlobalId, so its recipes `globalTid / 0x1000000 % 0x1000000`
//   (pid) and `globalTid % 0x1000000` (tid) work. hwId numbers the hosts (0 = the first host of
//   the files given); two traces with the same host and pid get distinct hwIds.
// - correlationId is renumbered 1, 2, 3, ... over the whole database (nsys's are per process):
//   the host call and its GPU activity come from the same trace record and get the same id, so
//   joins on correlationId alone are exact even with many ranks.
// - deviceId names a physical GPU across the whole database (TARGET_INFO_GPU.id, one row per
//   GPU, told apart by host and UUID): the CUDA ordinal of the first process that used it, or
//   the lowest free id when that is taken (ranks that each see their GPU as device 0 under
//   CUDA_VISIBLE_DEVICES get 0, 1, ...). cutrace_device(globalPid, cudaDevice, deviceId) maps
//   each process's ordinals. contextId is the process's ordinal + 1 (cutrace records the device,
//   not the context: the primary context).
// - streamId is cutrace's stream id (Stream records; the legacy default stream has flag 3,
//   CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NULL, in TARGET_INFO_CUDA_STREAM), unique within a process.
// - GPU operations without GPU times (captured into a graph, or not measured) have no activity
//   row (nsys has no such rows either); their host call is in RUNTIME.
// - Kernel names: demangledName is the name cutrace recorded (demangled), shortName the bare
//   function name (no return type, scope, template arguments or parameters); mangledName is NULL
//   (the mangled name is not recorded). nameId of RUNTIME is the driver function (cuLaunchKernel,
//   ...) and eventClass 1 (TRACE_PROCESS_EVENT_CUDA_DRIVER).
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tools/export/common.h"
#include "tools/export/exports.h"
#include "tools/export/sqlite_schema.h"
#include "trace/reader.h"

namespace cutrace {
namespace sqlite_export {
namespace {

// ---- a thin layer over the sqlite3 C API ----------------------------------------------------

// A value bound to a statement parameter: an integer, NULL or text.
struct Val {
  enum Kind { Int, Null, Text, Real } kind;
  int64_t i = 0;
  double d = 0;
  std::string_view t;
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Val(T v) : kind(Int), i(static_cast<int64_t>(v)) {}
  Val(std::nullptr_t) : kind(Null) {}
  Val(double v) : kind(Real), d(v) {}
  Val(std::string_view v) : kind(Text), t(v) {}
  Val(const char* v) : kind(Text), t(v) {}
  Val(const std::string& v) : kind(Text), t(v) {}
};
const Val kNull = nullptr;

class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(s_); }
  bool prepare(sqlite3* db, const std::string& sql, std::string* err) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) == SQLITE_OK) return true;
    *err = std::string("sqlite: ") + sqlite3_errmsg(db) + " in: " + sql;
    return false;
  }
  // Binds the values in order, runs the statement once and resets it.
  bool run(std::initializer_list<Val> vals) {
    int i = 1;
    for (const Val& v : vals) {
      int rc;
      switch (v.kind) {
        case Val::Int: rc = sqlite3_bind_int64(s_, i, v.i); break;
        case Val::Null: rc = sqlite3_bind_null(s_, i); break;
        case Val::Real: rc = sqlite3_bind_double(s_, i, v.d); break;
        default: rc = sqlite3_bind_text(s_, i, v.t.data(), int(v.t.size()), SQLITE_STATIC); break;
      }
      if (rc != SQLITE_OK) return false;
      ++i;
    }
    int rc = sqlite3_step(s_);
    sqlite3_reset(s_);
    rows_ += rc == SQLITE_DONE;
    return rc == SQLITE_DONE;
  }
  uint64_t rows() const { return rows_; }

 private:
  sqlite3_stmt* s_ = nullptr;
  uint64_t rows_ = 0;
};

constexpr int64_t kPidBits = 24;
constexpr int64_t kIdMask = (int64_t(1) << kPidBits) - 1;
constexpr int64_t kStreamFlagNull = 3;  // CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NULL: legacy default

std::string uuid_text(const uint8_t* u) {
  static const char* hex = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += hex[u[i] >> 4];
    s += hex[u[i] & 15];
  }
  return s;
}

// nsys's busLocation "0000:1b:00.0". The trace records the bus id only: PCI domain, device and
// function are written as 0 (a GPU is device 0, function 0 on its bus on the machines we know).
std::string bus_location(uint32_t bus) {
  char b[32];
  std::snprintf(b, sizeof b, "0000:%02x:00.0", bus & 0xffu);
  return b;
}

std::string utc_text(int64_t ns) {
  time_t sec = time_t(ns / 1000000000);
  struct tm tm {};
  if (!gmtime_r(&sec, &tm)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns % 1000000000));
  return buf;
}

// What is known of a trace before its records are streamed.
struct Input {
  std::string file;
  exporter::ProcessInfo p;
  int64_t offset = 0;  // common ns = file ns + offset
  int64_t start = 0;   // capture start on the common clock
  bool has_start = false;
  int64_t global_pid = 0;
  int64_t hw_id = 0;
};

class Exporter {
 public:
  explicit Exporter(sqlite3* db) : db_(db) {}

  bool exec(const std::string& sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) == SQLITE_OK) return true;
    err_ = std::string("sqlite: ") + (msg ? msg : sqlite3_errmsg(db_));
    sqlite3_free(msg);
    return false;
  }
  bool create(const Table& t) { return exec(std::string("CREATE TABLE ") + t.name + " (" + t.columns + ")"); }
  bool prepare(Stmt& s, const Table& t) {
    std::string cols = t.columns, names, marks;
    // Column names are the first word of each comma-separated definition.
    size_t pos = 0;
    while (pos < cols.size()) {
      size_t comma = cols.find(',', pos);
      std::string def = cols.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      size_t b = def.find_first_not_of(' ');
      std::string name = def.substr(b, def.find(' ', b) - b);
      names += (names.empty() ? "" : ", ") + name;
      marks += marks.empty() ? "?" : ", ?";
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    return s.prepare(db_, std::string("INSERT INTO ") + t.name + " (" + names + ") VALUES (" + marks + ")", &err_);
  }

  bool setup() {
    for (const char* p : {"PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF", "PRAGMA locking_mode=EXCLUSIVE",
                          "PRAGMA temp_store=MEMORY", "PRAGMA cache_size=-65536"})
      if (!exec(p)) return false;
    if (!exec("BEGIN")) return false;
    const Table* tables[] = {&kStringIds, &kKernel,   &kGraphTrace, &kMemcpy,      &kMemset,    &kRuntime,
                             &kSync,      &kMemUsage, &kNvtx,       &kThreadNames, &kProcesses, &kSessionStart,
                             &kGpu,       &kStream,   &kMetaExport, &kRank,        &kDevice};
    for (const Table* t : tables)
      if (!create(*t)) return false;
    for (size_t i = 0; i < kEnumTableCount; ++i)
      if (!exec(std::string("CREATE TABLE ") + kEnumTables[i].name +
                " (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT)"))
        return false;
    return prepare(strings_, kStringIds) && prepare(kernel_, kKernel) && prepare(graph_, kGraphTrace) &&
           prepare(memcpy_, kMemcpy) && prepare(memset_, kMemset) && prepare(runtime_, kRuntime) &&
           prepare(sync_, kSync) && prepare(mem_usage_, kMemUsage) && prepare(nvtx_, kNvtx) &&
           prepare(threads_, kThreadNames) && prepare(processes_, kProcesses) && prepare(gpu_, kGpu) &&
           prepare(device_, kDevice) && prepare(stream_, kStream) && prepare(meta_, kMetaExport) &&
           prepare(rank_, kRank) && enums();
  }

  bool enums() {
    for (size_t t = 0; t < kEnumTableCount; ++t) {
      const EnumTable& e = kEnumTables[t];
      Stmt s;
      if (!s.prepare(db_, std::string("INSERT INTO ") + e.name + " VALUES (?, ?, ?)", &err_)) return false;
      for (size_t i = 0; i < e.count; ++i)
        if (!s.run({e.rows[i].id, e.rows[i].name, e.rows[i].label})) return fail();
    }
    return true;
  }

  bool fail() {
    if (err_.empty()) err_ = std::string("sqlite: ") + sqlite3_errmsg(db_);
    return false;
  }

  // Id of a string in StringIds, inserting it the first time (StringIds.value is NOT NULL: a
  // view without data, the "no string" of id 0, is "").
  bool string_id(std::string_view s, int64_t* id) {
    if (!s.data()) s = std::string_view("", 0);
    auto it = string_ids_.find(std::string(s));
    if (it != string_ids_.end()) {
      *id = it->second;
      return true;
    }
    int64_t next = int64_t(string_ids_.size()) + 1;
    if (!strings_.run({next, s})) return fail();
    string_ids_.emplace(std::string(s), next);
    *id = next;
    return true;
  }

  bool session(int64_t start, const std::string& method) {
    if (!exec(std::string("INSERT INTO ") + kSessionStart.name + " VALUES (" + std::to_string(start) + ", '" +
              utc_text(start) + "', NULL)"))
      return false;
    return (meta_.run({"EXPORT_SCHEMA_VERSION", kSchemaVersion}) && meta_.run({"EXPORT_PRODUCT", "cutrace"}) &&
            meta_.run({"CUTRACE_TIME_BASE", "ns since TARGET_INFO_SESSION_START_TIME.utcEpochNs"}) &&
            meta_.run({"CUTRACE_CLOCK_ALIGNMENT", method})) ||
           fail();
  }

  bool file(TraceReader& r, const Input& in, int64_t session_start);

  // deviceId of the GPU `key`: its CUDA ordinal if no other GPU has that id yet, else the lowest
  // free id. A new GPU gets its TARGET_INFO_GPU row (d: its Device record, if any).
  bool gpu_id(const std::string& key, uint16_t ordinal, const trace::DeviceRec* d, std::string_view name,
              int64_t* out) {
    auto it = gpu_ids_.find(key);
    if (it != gpu_ids_.end()) {
      *out = it->second;
      return true;
    }
    int64_t id = ordinal;
    if (gpu_taken_.count(id))
      for (id = 0; gpu_taken_.count(id); ++id) {}
    gpu_taken_.insert(id);
    gpu_ids_.emplace(key, id);
    *out = id;
    if (!d) return gpu_.run({0, id, kNull, kNull, kNull, kNull, kNull, kNull, ordinal, kNull, kNull}) || fail();
    return gpu_.run({0, id, name, bus_location(d->pci_bus), d->total_mem, d->sm_count, uuid_text(d->uuid), kNull,
                     ordinal, d->cc_major, d->cc_minor}) ||
           fail();
  }
  bool commit() { return exec("COMMIT"); }
  const std::string& error() const { return err_; }
  uint64_t rows() const {
    uint64_t n = 0;
    for (const Stmt* s : {&kernel_, &graph_, &memcpy_, &memset_, &runtime_, &sync_, &mem_usage_, &nvtx_})
      n += s->rows();
    return n;
  }

 private:
  struct FileState;

  sqlite3* db_;
  std::string err_;
  std::unordered_map<std::string, int64_t> string_ids_;
  int64_t next_corr_ = 1;
  Stmt strings_, kernel_, graph_, memcpy_, memset_, runtime_, sync_, mem_usage_, nvtx_, threads_, processes_, gpu_,
      device_, stream_, meta_, rank_;
  std::map<std::string, int64_t> gpu_ids_;  // (host, uuid) or (process, ordinal) -> deviceId
  std::set<int64_t> gpu_taken_;
};

struct Exporter::FileState {
  Exporter& x;
  TraceReader& r;
  const Input& in;
  int64_t base;                                        // common-clock offset minus the session start
  std::unordered_map<uint32_t, int64_t> str;           // trace string id -> StringIds id
  std::unordered_map<uint32_t, int64_t> short_name;    // kernel name string id -> StringIds id
  std::unordered_map<uint16_t, int64_t> api;           // api id -> StringIds id
  std::unordered_map<uint32_t, int64_t> domain;        // domain string id -> domainId (0: default)
  std::unordered_map<uint64_t, uint64_t> alloc_bytes;  // live allocations: address -> bytes
  std::map<uint16_t, int64_t> devices;                 // CUDA ordinal -> deviceId
  std::set<std::pair<uint32_t, uint16_t>> streams;     // (stream, device) used by operations
  std::pair<uint64_t, int64_t> graph_corr{0, 0};       // the latest graph launch: trace corr -> correlationId
  std::set<uint32_t> tids;                             // every thread a row names (ThreadNames)

  int64_t t(int64_t ns) const { return exporter::wrap_add(ns, base); }  // damaged times: no overflow UB

  // deviceId of this process's CUDA device `ordinal`: one id per physical GPU of the database.
  bool dev(uint16_t ordinal, int64_t* out) {
    auto it = devices.find(ordinal);
    if (it != devices.end()) {
      *out = it->second;
      return true;
    }
    auto d = r.devices().find(ordinal);
    const trace::DeviceRec* rec = d != r.devices().end() ? &d->second : nullptr;
    static const uint8_t zero[16] = {};
    std::string key = rec && std::memcmp(rec->uuid, zero, 16) != 0
                          ? in.p.host + "/" + uuid_text(rec->uuid)
                          : std::to_string(in.global_pid) + "#" + std::to_string(ordinal);
    if (!x.gpu_id(key, ordinal, rec, rec ? r.str(rec->name_id) : std::string_view(), out)) return false;
    devices.emplace(ordinal, *out);
    return true;
  }
  int64_t gtid(uint32_t tid) {
    tids.insert(tid);
    return in.global_pid | (int64_t(tid) & kIdMask);
  }

  bool sid(uint32_t id, int64_t* out, std::string_view if_none = {}) {
    auto it = str.find(id);
    if (it != str.end()) {
      *out = it->second;
      return true;
    }
    if (!x.string_id(id ? r.str(id) : if_none, out)) return false;
    str.emplace(id, *out);
    return true;
  }
  bool api_id(uint16_t a, int64_t* out) {
    auto it = api.find(a);
    if (it != api.end()) {
      *out = it->second;
      return true;
    }
    if (!x.string_id(r.api_name(a), out)) return false;
    api.emplace(a, *out);
    return true;
  }
  bool short_id(uint32_t name_id, int64_t* out) {
    auto it = short_name.find(name_id);
    if (it != short_name.end()) {
      *out = it->second;
      return true;
    }
    if (!x.string_id(name_id ? kernel_short_name(r.str(name_id)) : std::string(exporter::kUnknownKernel), out))
      return false;
    short_name.emplace(name_id, *out);
    return true;
  }

  // The host side of any traced call; returns its correlationId through *corr.
  bool runtime(int64_t begin, int64_t end, uint32_t tid, uint16_t api_idx, int32_t result, int64_t* corr) {
    int64_t name;
    if (!api_id(api_idx, &name)) return false;
    *corr = x.next_corr_++;
    return x.runtime_.run({t(begin), t(end), kEventClassDriver, gtid(tid), *corr, name, result, kNull}) || x.fail();
  }

  // The RUNTIME row of a GPU operation's call and its correlationId. A graph replay's node has no
  // call of its own: it follows its launch in the file and takes the launch's correlationId.
  bool call(const trace::OpCommon& op, int64_t* corr) {
    if (!trace::is_call(op.flags)) {
      *corr = graph_corr.first == op.corr ? graph_corr.second : x.next_corr_++;
      return true;
    }
    if (!runtime(op.cpu_begin, op.cpu_end, op.tid, op.api, op.result, corr)) return false;
    if (op.flags & trace::kOpGraphNodes) graph_corr = {op.corr, *corr};
    return true;
  }

  static bool timed(int64_t start, int64_t end) { return start != 0 && end != 0 && end >= start; }
  bool gpu_side(const trace::OpCommon& op) {
    streams.insert({uint32_t(op.stream), uint16_t(op.device)});
    return !(op.flags & trace::kOpCaptured) && timed(op.gpu_start, op.gpu_end);
  }

  bool kernel(const trace::KernelRec& k) {
    const trace::OpCommon op = k.op;  // copies: packed fields
    int64_t corr;
    if (!call(op, &corr)) return false;
    if (!gpu_side(op)) return true;
    int64_t ctx = int64_t(op.device) + 1, dv;
    if (!dev(op.device, &dv)) return false;
    if (k.kind == uint8_t(trace::KernelKind::Graph))
      return x.graph_.run(
                 {t(op.gpu_start), t(op.gpu_end), dv, ctx, kNull, op.stream, corr, in.global_pid, kNull, k.graph_id}) ||
             x.fail();
    int64_t name, short_name_id;
    if (!sid(k.name_id, &name, exporter::kUnknownKernel) || !short_id(k.name_id, &short_name_id)) return false;
    int launch = k.kind == uint8_t(trace::KernelKind::Cooperative) ? kLaunchCoop : kLaunchRegular;
    return x.kernel_.run({t(op.gpu_start),
                          t(op.gpu_end),
                          dv,
                          ctx,
                          kNull,
                          op.stream,
                          corr,
                          in.global_pid,
                          name,
                          short_name_id,
                          kNull,
                          launch,
                          kNull,
                          k.regs,
                          k.grid[0],
                          k.grid[1],
                          k.grid[2],
                          k.block[0],
                          k.block[1],
                          k.block[2],
                          k.static_smem,
                          k.dyn_smem,
                          kNull,
                          kNull,
                          kNull,
                          kNull,
                          kNull,
                          kNull}) ||
           x.fail();
  }

  bool memcpy(const trace::MemcpyRec& m) {
    const trace::OpCommon op = m.op;
    int64_t corr;
    if (!call(op, &corr)) return false;
    if (!gpu_side(op)) return true;
    bool peer = m.copy_kind == uint8_t(trace::CopyKind::PtoP);
    int64_t dv, src = 0, dst = 0;
    if (!dev(op.device, &dv) || (peer && (!dev(m.src_device, &src) || !dev(m.dst_device, &dst)))) return false;
    return x.memcpy_.run({t(op.gpu_start),
                          t(op.gpu_end),
                          dv,
                          int64_t(op.device) + 1,
                          kNull,
                          op.stream,
                          corr,
                          in.global_pid,
                          m.bytes,
                          copy_oper(m.copy_kind),
                          kNull,
                          mem_kind(m.src_kind),
                          mem_kind(m.dst_kind),
                          peer ? Val(src) : kNull,
                          peer ? Val(int64_t(m.src_device) + 1) : kNull,
                          peer ? Val(dst) : kNull,
                          peer ? Val(int64_t(m.dst_device) + 1) : kNull,
                          kNull,
                          kNull,
                          kNull}) ||
           x.fail();
  }

  bool memset(const trace::MemsetRec& m) {
    const trace::OpCommon op = m.op;
    int64_t corr;
    if (!call(op, &corr)) return false;
    int64_t dv;
    if (!gpu_side(op)) return true;
    if (!dev(op.device, &dv)) return false;
    return x.memset_.run({t(op.gpu_start), t(op.gpu_end), dv, int64_t(op.device) + 1, kNull, op.stream, corr,
                          in.global_pid, m.value, m.bytes, kNull, kMemKindDevice}) ||
           x.fail();
  }

  bool sync(const trace::SyncRec& s) {
    int64_t corr;
    if (!runtime(s.cpu_begin, s.cpu_end, s.tid, s.api, s.result, &corr)) return false;
    int type = sync_type(s.kind);
    if (!type || s.result != 0) return true;
    bool has_event = s.kind == uint8_t(trace::SyncKind::Event) || s.kind == uint8_t(trace::SyncKind::StreamWait);
    streams.insert({uint32_t(s.stream), uint16_t(s.device)});
    int64_t dv;
    if (!dev(s.device, &dv)) return false;
    return x.sync_.run({t(s.cpu_begin), t(s.cpu_end), dv, int64_t(s.device) + 1, kNull, s.stream, corr, in.global_pid,
                        type, has_event ? Val(int64_t(s.event)) : kNull}) ||
           x.fail();
  }

  bool memory(const trace::MemoryRec& m) {
    int64_t corr;
    if (!runtime(m.cpu_begin, m.cpu_end, m.tid, m.api, m.result, &corr)) return false;
    if (m.result != 0) return true;
    bool alloc = m.op == uint8_t(trace::MemOp::Alloc);
    uint64_t bytes = m.bytes, address = m.address;
    if (alloc) {
      alloc_bytes[address] = bytes;
    } else {
      auto it = alloc_bytes.find(address);
      if (it != alloc_bytes.end()) {
        if (!bytes) bytes = it->second;
        alloc_bytes.erase(it);
      }
    }
    int64_t dv;
    if (!dev(m.device, &dv)) return false;
    return x.mem_usage_.run({t(alloc ? m.cpu_end : m.cpu_begin), in.global_pid, dv, int64_t(m.device) + 1,
                             int64_t(address), 0, bytes, mem_kind(m.mem_kind), alloc ? 0 : 1, kNull, corr, m.stream}) ||
           x.fail();
  }

  bool api_call(const trace::ApiRec& a) {
    int64_t corr;
    return runtime(a.cpu_begin, a.cpu_end, a.tid, a.api, a.result, &corr);
  }

  // domainId for a domain name string id (0 = the default domain); names new domains with an
  // NvtxDomainCreate row.
  bool domain_id(uint32_t name_id, int64_t ts, uint32_t tid, int64_t* out) {
    if (name_id == 0) {
      *out = 0;
      return true;
    }
    auto it = domain.find(name_id);
    if (it != domain.end()) {
      *out = it->second;
      return true;
    }
    *out = int64_t(domain.size()) + 1;
    domain.emplace(name_id, *out);
    return x.nvtx_.run({t(ts),          kNull,     kNvtxDomainCreate,
                        kNull,          kNull,     kNull,
                        r.str(name_id), gtid(tid), kNull,
                        kNull,          *out,      kNull,
                        kNull,          kNull,     kNull,
                        kNull,          kNull,     kNull,
                        kNull,          kNull}) ||
           x.fail();
  }

  // NVTX_EVENTS' payload columns uint64Value, int64Value, doubleValue, uint32Value, int32Value,
  // floatValue: the one of the payload's type (in trace::PayloadType order) holds it. A u64 is
  // stored as its 64 bits in SQLite's signed INTEGER (values above 2^63-1 read negative).
  struct PayloadCols {
    Val v[6] = {kNull, kNull, kNull, kNull, kNull, kNull};
    explicit PayloadCols(const trace::PayloadRec* p) {
      if (!p || p->type < 1 || p->type > trace::kPayloadTypeMax) return;
      const uint64_t bits = p->bits;
      v[p->type - 1] = tools::payload_is_float(p->type) ? Val(tools::payload_double(*p)) : Val(int64_t(bits));
    }
  };

  bool range(const trace::RangeRec& g, const trace::PayloadRec* payload) {
    int64_t dom;
    const PayloadCols pc(payload);
    if (!domain_id(g.domain_id, g.cpu_begin, g.tid, &dom)) return false;
    bool start_end = trace::range_kind(g) == trace::RangeKind::StartEnd;
    uint32_t color = g.color, category = g.category;
    return x.nvtx_.run({t(g.cpu_begin),
                        t(trace::range_end(g)),
                        start_end ? kNvtxStartEnd : kNvtxPushPop,
                        start_end ? Val(int64_t(g.id)) : kNull,
                        category ? Val(category) : kNull,
                        color ? Val(color) : kNull,
                        r.str(g.name_id),
                        gtid(g.tid),
                        start_end ? Val(gtid(g.end_tid)) : kNull,
                        kNull,
                        dom,
                        pc.v[0],
                        pc.v[1],
                        pc.v[2],
                        pc.v[3],
                        pc.v[4],
                        pc.v[5],
                        kNull,
                        kNull,
                        kNull}) ||
           x.fail();
  }

  bool mark(const trace::MarkRec& m, const trace::PayloadRec* payload) {
    int64_t dom;
    const PayloadCols pc(payload);
    if (!domain_id(m.domain_id, m.ts, m.tid, &dom)) return false;
    uint32_t color = m.color, category = m.category;
    return x.nvtx_.run({t(m.ts),
                        kNull,
                        kNvtxMark,
                        kNull,
                        category ? Val(category) : kNull,
                        color ? Val(color) : kNull,
                        r.str(m.name_id),
                        gtid(m.tid),
                        kNull,
                        kNull,
                        dom,
                        pc.v[0],
                        pc.v[1],
                        pc.v[2],
                        pc.v[3],
                        pc.v[4],
                        pc.v[5],
                        kNull,
                        kNull,
                        kNull}) ||
           x.fail();
  }

  // Metadata tables, once every record was read (threads and streams can appear late).
  bool finish() {
    // Every thread, as nsys lists them: the name it was given, else the process's (a Linux
    // thread starts with its creator's name).
    for (const auto& [tid, name_id] : r.threads()) tids.insert(tid);
    int64_t program;
    if (!x.string_id(in.p.program, &program)) return false;
    for (uint32_t tid : tids) {
      auto it = r.threads().find(tid);
      int64_t name = program;
      if (it != r.threads().end() && it->second && !sid(it->second, &name)) return false;
      if (!(x.threads_.run({name, 0, gtid(tid)}) || x.fail())) return false;
    }
    int64_t dv;
    for (const auto& [ordinal, d] : r.devices())
      if (!dev(ordinal, &dv)) return false;
    for (const auto& [ordinal, id] : devices)
      if (!(x.device_.run({in.global_pid, ordinal, id}) || x.fail())) return false;
    for (const auto& [id, s] : r.streams()) streams.insert({id, s.device});
    for (const auto& [id, dev] : streams) {
      auto it = r.streams().find(id);
      if (id == 0 && it == r.streams().end()) continue;  // 0 without a Stream record: no stream
      bool legacy = it != r.streams().end() && (it->second.flags & trace::kStreamLegacyDefault);
      if (!(x.stream_.run({id, in.hw_id, 0, in.p.pid, int64_t(dev) + 1, 0, legacy ? kStreamFlagNull : 0}) || x.fail()))
        return false;
    }
    return (x.processes_.run({in.global_pid, in.p.pid, in.p.program}) &&
            x.rank_.run({in.global_pid, in.p.rank, in.p.host, in.file, in.p.pid, in.offset})) ||
           x.fail();
  }
};

bool Exporter::file(TraceReader& r, const Input& in, int64_t session_start) {
  FileState f{*this, r, in, exporter::wrap_sub(in.offset, session_start), {}, {}, {}, {}, {}, {}, {}, {}, {}};
  int64_t dv;
  for (const auto& [ordinal, d] : r.devices())  // the process's GPUs first: ids follow ordinals
    if (!f.dev(ordinal, &dv)) return false;
  bool ok = true;
  PayloadJoin payloads;
  bool read_ok = r.read([&](const Record& rec) {
    payloads.see(rec);
    switch (rec.type()) {
      case trace::RecType::Kernel: ok = f.kernel(rec.as<trace::KernelRec>()); break;
      case trace::RecType::Memcpy: ok = f.memcpy(rec.as<trace::MemcpyRec>()); break;
      case trace::RecType::Memset: ok = f.memset(rec.as<trace::MemsetRec>()); break;
      case trace::RecType::Sync: ok = f.sync(rec.as<trace::SyncRec>()); break;
      case trace::RecType::Memory: ok = f.memory(rec.as<trace::MemoryRec>()); break;
      case trace::RecType::Api: ok = f.api_call(rec.as<trace::ApiRec>()); break;
      case trace::RecType::Range:
        ok = f.range(rec.as<trace::RangeRec>(), payloads.range(rec.as<trace::RangeRec>()));
        break;
      case trace::RecType::Mark: ok = f.mark(rec.as<trace::MarkRec>(), payloads.mark(rec.as<trace::MarkRec>())); break;
      default: break;
    }
    return ok;
  });
  if (!ok) return false;
  exporter::ExportStats& st = exporter::g_stats;
  if (!read_ok) st.warnings.push_back(in.file + ": read error: " + r.error());
  const ReadStatus& rs = r.status();
  exporter::damage_warnings(in.file, rs, &st.warnings);
  return f.finish();
}

// Reads what the export needs to know of a trace before streaming it.
bool probe(const std::string& file, const Alignment& a, Input* in, std::string* err) {
  TraceReader r;
  if (!r.open(file, err)) return false;
  in->file = file;
  in->p = exporter::process_info(r);
  in->offset = exporter::offset_for(a, file);
  in->has_start = in->p.start_mono != 0;
  in->start = in->p.start_mono + in->offset;
  return true;
}

}  // namespace
}  // namespace sqlite_export

bool export_sqlite(const std::vector<std::string>& files, const Alignment& a, const std::string& out,
                   std::string* err) {
  using namespace sqlite_export;
  exporter::ExportStats& st = exporter::g_stats;
  st.clear();
  if (files.empty()) {
    *err = "no trace files to export";
    return false;
  }
  // Every input first: the session start and the global ids depend on all of them. A file that
  // does not open is skipped (st.skipped); when none opens, nothing is written.
  std::vector<Input> inputs;
  for (const std::string& f : files) {
    Input in;
    std::string e;
    if (probe(f, a, &in, &e)) inputs.push_back(std::move(in));
    else st.skipped.push_back(e);
  }
  if (inputs.empty()) {
    err->clear();
    for (const std::string& e : st.skipped) *err += (err->empty() ? "" : "; ") + e;
    return false;
  }
  std::map<std::string, int64_t> host_ids;
  for (Input& in : inputs) host_ids.emplace(in.p.host, int64_t(host_ids.size()));
  std::set<std::pair<int64_t, int64_t>> used;  // (hwId, pid)
  int64_t spare_hw = int64_t(host_ids.size());
  int64_t session_start = 0;
  bool have_start = false;
  for (Input& in : inputs) {
    in.hw_id = host_ids[in.p.host];
    if (!used.insert({in.hw_id, in.p.pid}).second) {  // same host and pid: another run's trace
      in.hw_id = spare_hw++;
      used.insert({in.hw_id, in.p.pid});
    }
    in.global_pid = (in.hw_id & 0x7FFF) << 48 | (in.p.pid & kIdMask) << kPidBits;
    if (in.has_start && (!have_start || in.start < session_start)) session_start = in.start, have_start = true;
  }

  // Never overwrite: create the file exclusively, then let SQLite fill the empty file.
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = errno == EEXIST ? out + ": already exists; refusing to overwrite it (remove it or choose another output)"
                           : out + ": cannot create: " + std::strerror(errno);
    return false;
  }
  ::close(fd);
  sqlite3* db = nullptr;
  bool ok = false;
  std::string e;
  if (sqlite3_open_v2(out.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    e = std::string("sqlite: ") + (db ? sqlite3_errmsg(db) : "out of memory");
  } else {
    Exporter x(db);
    ok = x.setup() && x.session(session_start, a.method.empty() ? "none" : a.method);
    for (size_t i = 0; ok && i < inputs.size(); ++i) {
      TraceReader r;
      if (!r.open(inputs[i].file, &e)) {
        ok = false;
        break;
      }
      ok = x.file(r, inputs[i], session_start);
    }
    ok = ok && x.commit();
    if (!ok && e.empty()) e = x.error();
    st.events = x.rows();
  }
  if (sqlite3_close(db) != SQLITE_OK && ok) {
    ok = false;
    e = "sqlite: cannot close the database";
  }
  if (!ok) {
    ::unlink(out.c_str());
    *err = out + ": " + e;
    st.events = 0;
    return false;
  }
  struct stat sb;
  st.bytes = ::stat(out.c_str(), &sb) == 0 ? uint64_t(sb.st_size) : 0;
  st.outputs.push_back(out);
  return true;
}

}  // namespace cutrace
