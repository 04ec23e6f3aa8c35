// `cutrace export --format sqlite` on synthetic traces: the database is opened with the sqlite3
// C API and queried the way scripts written for Nsight Systems' SQLite export query theirs.
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test/unit/temp_dir.h"
#include "tools/export/common.h"
#include "tools/export/exports.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

constexpr uint16_t kLaunch = 1, kMemcpyApi = 2, kMemsetApi = 3, kStreamSync = 4, kCtxSync = 5, kEventQuery = 6,
                   kAlloc = 7, kFree = 8, kEventRecord = 9, kGraphLaunch = 10;

// One process's trace, written to a file. Times are this file's monotonic ns.
class Trace {
 public:
  Trace(const std::string& path, const char* host, int rank, int pid, int64_t start_mono, uint8_t gpu = 1) {
    std::string err;
    REQUIRE(w_.open(path, &err));
    w_.meta("host", host);
    w_.meta("pid", std::to_string(pid));
    w_.meta("rank", std::to_string(rank));
    w_.meta("cmdline", "/usr/bin/python3 train.py");
    w_.meta("start_monotonic_ns", std::to_string(start_mono));
    w_.api_name(kLaunch, "cuLaunchKernel");
    w_.api_name(kMemcpyApi, "cuMemcpyHtoDAsync");
    w_.api_name(kMemsetApi, "cuMemsetD8Async");
    w_.api_name(kStreamSync, "cuStreamSynchronize");
    w_.api_name(kCtxSync, "cuCtxSynchronize");
    w_.api_name(kEventQuery, "cuEventQuery");
    w_.api_name(kAlloc, "cuMemAlloc");
    w_.api_name(kFree, "cuMemFree");
    w_.api_name(kEventRecord, "cuEventRecord");
    w_.api_name(kGraphLaunch, "cuGraphLaunch");
    trace::DeviceRec d{};
    d.device = 0;
    d.name_id = w_.intern("NVIDIA H200");
    d.cc_major = 9;
    d.sm_count = 132;
    d.total_mem = 141ull << 30;
    d.uuid[0] = 0xab;
    d.uuid[15] = gpu;
    d.pci_bus = 0x1b;
    w_.add(d, trace::RecType::Device);
    trace::ThreadRec t{};
    t.tid = uint32_t(pid);
    t.name_id = w_.intern("python3");
    w_.add(t, trace::RecType::Thread);
    trace::StreamRec s{};
    s.stream = 1;
    s.flags = trace::kStreamLegacyDefault;
    s.handle = 1;
    w_.add(s, trace::RecType::Stream);
    s.stream = 2;
    s.flags = 0;
    s.handle = 0x1234;
    w_.add(s, trace::RecType::Stream);
  }

  // gpu_start 0: no GPU time.
  void kernel(const char* name, int64_t cpu, int64_t gpu_start, int64_t gpu_ns, uint16_t flags = 0,
              trace::KernelKind kind = trace::KernelKind::Kernel) {
    trace::KernelRec k{};
    op(k.op, kind == trace::KernelKind::Graph ? kGraphLaunch : kLaunch, cpu, gpu_start, gpu_ns, flags);
    k.name_id = w_.intern(name);
    k.grid[0] = 80, k.grid[1] = 2, k.grid[2] = 1;
    k.block[0] = 256, k.block[1] = k.block[2] = 1;
    k.regs = 32;
    k.static_smem = 1024;
    k.dyn_smem = 2048;
    k.kind = uint8_t(kind);
    k.graph_id = kind == trace::KernelKind::Graph ? 7 : 0;
    w_.add(k, trace::RecType::Kernel);
  }
  void memcpy(trace::CopyKind kind, trace::MemKind src, trace::MemKind dst, uint64_t bytes, int64_t cpu,
              int64_t gpu_start, int64_t gpu_ns) {
    trace::MemcpyRec m{};
    op(m.op, kMemcpyApi, cpu, gpu_start, gpu_ns, 0);
    m.copy_kind = uint8_t(kind), m.src_kind = uint8_t(src), m.dst_kind = uint8_t(dst);
    m.bytes = bytes;
    m.src_device = 0, m.dst_device = kind == trace::CopyKind::PtoP ? 1 : 0;
    w_.add(m, trace::RecType::Memcpy);
  }
  void memset(uint64_t bytes, uint32_t value, int64_t cpu, int64_t gpu_start, int64_t gpu_ns) {
    trace::MemsetRec m{};
    op(m.op, kMemsetApi, cpu, gpu_start, gpu_ns, 0);
    m.bytes = bytes, m.value = value, m.element_size = 1;
    w_.add(m, trace::RecType::Memset);
  }
  void sync(trace::SyncKind kind, uint16_t api, int64_t cpu, int64_t ns, int32_t result = 0) {
    trace::SyncRec s{};
    s.cpu_begin = cpu, s.cpu_end = cpu + ns;
    s.kind = uint8_t(kind), s.api = api, s.result = result;
    s.stream = kind == trace::SyncKind::Context ? 0 : 2;
    s.event = kind == trace::SyncKind::EventQuery ? 0xeeee : 0;
    s.tid = tid_;
    s.corr = ++corr_;
    w_.add(s, trace::RecType::Sync);
  }
  void memory(trace::MemOp op, uint64_t address, uint64_t bytes, int64_t cpu) {
    trace::MemoryRec m{};
    m.cpu_begin = cpu, m.cpu_end = cpu + 100;
    m.op = uint8_t(op), m.address = address, m.bytes = bytes;
    m.mem_kind = uint8_t(trace::MemKind::Device);
    m.api = op == trace::MemOp::Alloc ? kAlloc : kFree;
    m.tid = tid_;
    w_.add(m, trace::RecType::Memory);
  }
  void api(int64_t cpu) {
    trace::ApiRec a{};
    a.cpu_begin = cpu, a.cpu_end = cpu + 50;
    a.api = kEventRecord, a.tid = tid_, a.stream = 2, a.corr = ++corr_;
    w_.add(a, trace::RecType::Api);
  }
  void range(const char* name, int64_t begin, int64_t end, trace::RangeKind kind = trace::RangeKind::PushPop,
             const char* domain = nullptr, uint32_t end_tid = 0, uint32_t color = 0) {
    trace::RangeRec g{};
    g.cpu_begin = begin, g.cpu_end = end;
    g.id = ++range_id_;
    g.tid = tid_, g.end_tid = end_tid ? end_tid : tid_;
    g.name_id = w_.intern(name);
    g.domain_id = domain ? w_.intern(domain) : 0;
    g.color = color;
    g.kind = uint8_t(kind), g.source = uint8_t(trace::RangeSource::Nvtx);
    w_.add(g, trace::RecType::Range);
  }
  void mark(const char* name, int64_t ts) {
    trace::MarkRec m{};
    m.ts = ts, m.tid = tid_, m.name_id = w_.intern(name), m.category = 3;
    m.source = uint8_t(trace::RangeSource::Nvtx);
    w_.add(m, trace::RecType::Mark);
  }
  void close() { REQUIRE(w_.close(0, trace::kEndClean)); }
  void flush() { REQUIRE(w_.flush()); }  // ends the current block
  uint32_t tid() const { return tid_; }
  void set_tid(uint32_t t) { tid_ = t; }

 private:
  void op(trace::OpCommon& o, uint16_t api, int64_t cpu, int64_t gpu_start, int64_t gpu_ns, uint16_t flags) {
    o.corr = (uint64_t(1) << 40) | ++corr_;  // like the collector: thread index << 40 | sequence
    o.cpu_begin = cpu, o.cpu_end = cpu + 300;
    if (gpu_start) o.gpu_start = gpu_start, o.gpu_end = gpu_start + gpu_ns;
    o.tid = tid_, o.stream = 2, o.device = 0, o.api = api, o.flags = flags;
  }

  TraceWriter w_;
  uint64_t corr_ = 0;
  uint64_t range_id_ = 0;
  uint32_t tid_ = 0;
};

using Rows = std::vector<std::vector<std::string>>;

// Every row of a query, each value as SQLite's text ("NULL" for NULL).
Rows query(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  REQUIRE_MESSAGE(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK, sqlite3_errmsg(db), " in ", sql);
  Rows out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(s); ++i) {
      const unsigned char* t = sqlite3_column_text(s, i);
      row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    out.push_back(row);
  }
  CHECK(rc == SQLITE_DONE);
  sqlite3_finalize(s);
  return out;
}
std::string one(sqlite3* db, const std::string& sql) {
  Rows r = query(db, sql);
  REQUIRE(r.size() == 1);
  REQUIRE(r[0].size() == 1);
  return r[0][0];
}

// Rank 0 (pid 100) and rank 1 (pid 200) of one host, each on its own GPU, seen as device 0. On the common clock, rank
// 0's monotonic 1,000,000 is session start (offset 5e9); rank 1 starts 500 us later (offset 4.9995e9, start 2,000,000).
// So session ns = rank 0 ns - 1,000,000 = rank 1 ns - 1,500,000.
struct Fixture {
  cutrace_test::TempDir dir{"cutrace_sqlite_test"};
  std::vector<std::string> files;
  Alignment align;
  std::string db_path;

  Fixture() {
    files = {dir.path + "/node-a.rank0.pid100.cutrace", dir.path + "/node-a.rank1.pid200.cutrace"};
    Trace a(files[0], "node-a", 0, 100, 1'000'000);
    a.set_tid(100);
    a.kernel(
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
        1'100'000, 1'100'500, 1'000);
    a.kernel("gemm", 1'200'000, 1'200'500, 2'000);
    a.kernel("gemm", 1'300'000, 1'303'000, 4'000);
    a.kernel("gemm", 1'400'000, 0, 0, trace::kOpNoGpuTime);  // untimed: runtime row only
    a.kernel("captured_k", 1'450'000, 0, 0, trace::kOpCaptured | trace::kOpNoGpuTime);
    a.kernel("coop", 1'460'000, 1'460'500, 300, 0, trace::KernelKind::Cooperative);
    a.kernel("CUDA graph #1", 1'470'000, 1'470'500, 9'000, 0, trace::KernelKind::Graph);
    a.memcpy(trace::CopyKind::HtoD, trace::MemKind::Pinned, trace::MemKind::Device, 1 << 20, 1'500'000, 1'500'400, 700);
    a.memcpy(trace::CopyKind::DtoH, trace::MemKind::Device, trace::MemKind::Pageable, 4096, 1'510'000, 1'510'400, 70);
    a.memcpy(trace::CopyKind::PtoP, trace::MemKind::Device, trace::MemKind::Device, 8192, 1'520'000, 1'520'400, 90);
    a.memcpy(trace::CopyKind::DtoD, trace::MemKind::Device, trace::MemKind::Device, 2048, 1'530'000, 1'530'400, 20);
    a.memset(256, 7, 1'540'000, 1'540'400, 10);
    a.sync(trace::SyncKind::Stream, kStreamSync, 1'600'000, 5'000);
    a.sync(trace::SyncKind::Context, kCtxSync, 1'610'000, 6'000);
    a.sync(trace::SyncKind::EventQuery, kEventQuery, 1'620'000, 100, 600);
    a.memory(trace::MemOp::Alloc, 0x7000, 1 << 20, 1'050'000);
    a.memory(trace::MemOp::Free, 0x7000, 0, 1'700'000);
    a.api(1'650'000);
    a.range("step_0", 1'090'000, 1'690'000);
    a.range("fwd", 1'095'000, 1'300'000, trace::RangeKind::PushPop, nullptr, 0, 0xff00ff00);
    a.range("load", 1'091'000, 1'800'000, trace::RangeKind::StartEnd, nullptr, 101);
    a.range("dom_range", 1'092'000, 1'093'000, trace::RangeKind::PushPop, "mylib");
    a.mark("checkpoint", 1'695'000);
    a.close();

    Trace b(files[1], "node-a", 1, 200, 2'000'000, 2);  // another GPU, also its device 0
    b.set_tid(200);
    b.kernel("gemm", 2'100'000, 2'100'500, 8'000);
    b.kernel("relu", 2'200'000, 2'200'500, 500);
    b.range("step_0", 2'050'000, 2'300'000);
    b.close();

    align.method = "realtime";
    RankClock r0, r1;
    r0.file = files[0], r0.offset_ns = 5'000'000'000;
    r1.file = files[1], r1.offset_ns = 4'999'500'000, r1.rank = 1;
    align.ranks = {r0, r1};
    db_path = dir.path + "/out.sqlite";
  }
};

struct Db {
  sqlite3* db = nullptr;
  explicit Db(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  }
  ~Db() { sqlite3_close(db); }
};

const int64_t kGpid0 = int64_t(100) << 24, kGpid1 = int64_t(200) << 24;

}  // namespace

TEST_CASE("sqlite export: kernel summary as nsys's cuda_gpu_kern_sum computes it") {
  Fixture f;
  std::string err;
  REQUIRE_MESSAGE(export_sqlite(f.files, f.align, f.db_path, &err), err);
  // What `cutrace export` reports: activity, runtime and NVTX rows, the file written.
  CHECK(exporter::g_stats.events == 6 + 1 + 4 + 1 + 2 + 2 + 20 + 7);
  CHECK(exporter::g_stats.outputs == std::vector<std::string>{f.db_path});
  CHECK(exporter::g_stats.bytes == std::filesystem::file_size(f.db_path));
  CHECK(exporter::g_stats.warnings.empty());
  Db d(f.db_path);
  Rows r = query(d.db,
                 "SELECT s.value AS name, count(*), sum(k.end-k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                 "JOIN StringIds s ON k.demangledName = s.id GROUP BY name ORDER BY name");
  CHECK(r == Rows{{"coop", "1", "300"},
                  {"gemm", "3", "14000"},  // the untimed launch has no GPU row
                  {"relu", "1", "500"},
                  {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                   "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
                   "1", "1000"}});
  // shortName: the bare function name (cuda_gpu_kern_sum:base).
  r = query(d.db,
            "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON k.shortName = s.id "
            "GROUP BY 1 ORDER BY 1");
  CHECK(r == Rows{{"coop", "1"}, {"gemm", "3"}, {"relu", "1"}, {"vectorized_elementwise_kernel", "1"}});
  CHECK(one(d.db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE mangledName IS NOT NULL") == "0");
  // Launch attributes, device/context/stream, launch type.
  r = query(d.db,
            "SELECT gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, "
            "dynamicSharedMemory, deviceId, contextId, streamId, launchType FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON k.shortName = s.id WHERE s.value IN ('relu', 'coop') ORDER BY s.value");
  CHECK(r == Rows{{"80", "2", "1", "256", "1", "1", "32", "1024", "2048", "0", "1", "2", "2"},
                  {"80", "2", "1", "256", "1", "1", "32", "1024", "2048", "2", "1", "2", "1"}});
  // The graph launch is a GRAPH_TRACE row, as nsys's --cuda-graph-trace=graph writes it.
  CHECK(query(d.db, "SELECT start, end, graphExecId, globalPid FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE") ==
        Rows{{"470500", "479500", "7", std::to_string(kGpid0)}});
}

TEST_CASE("sqlite export: times are ns since the session start on the common clock") {
  Fixture f;
  std::string err;
  REQUIRE_MESSAGE(export_sqlite(f.files, f.align, f.db_path, &err), err);
  Db d(f.db_path);
  CHECK(one(d.db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME") == "5001000000");
  // Rank 0: ns - 1,000,000; rank 1: ns - 1,500,000.
  CHECK(query(d.db,
              "SELECT globalPid, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
              "ON k.demangledName = s.id WHERE s.value = 'gemm' ORDER BY start") ==
        Rows{{std::to_string(kGpid0), "200500", "202500"},
             {std::to_string(kGpid0), "303000", "307000"},
             {std::to_string(kGpid1), "600500", "608500"}});
  CHECK(query(d.db, "SELECT start, end FROM NVTX_EVENTS WHERE text = 'step_0' ORDER BY start") ==
        Rows{{"90000", "690000"}, {"550000", "800000"}});
}

TEST_CASE("sqlite export: every GPU row has its host call in RUNTIME by correlationId") {
  Fixture f;
  std::string err;
  REQUIRE_MESSAGE(export_sqlite(f.files, f.align, f.db_path, &err), err);
  Db d(f.db_path);
  // Host call names of the kernels, joined as nsys's cuda_kern_exec_trace does.
  CHECK(query(d.db,
              "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
              "ON k.correlationId = r.correlationId JOIN StringIds s ON r.nameId = s.id GROUP BY 1") ==
        Rows{{"cuLaunchKernel", "6"}});
  for (const char* t :
       {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "CUDA_GPU_MEMORY_USAGE_EVENTS"}) {
    CAPTURE(t);
    CHECK(one(d.db, std::string("SELECT count(*) FROM ") + t +
                        " g LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON "
                        "g.correlationId = r.correlationId WHERE r.correlationId IS NULL") == "0");
  }
  // The GPU row runs after its launch on the same process, and correlation ids are unique.
  CHECK(one(d.db,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON "
            "k.correlationId = r.correlationId WHERE k.start < r.start OR "
            "k.globalPid != r.globalTid / 0x1000000 * 0x1000000") == "0");
  CHECK(one(d.db, "SELECT count(*) - count(DISTINCT correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME") == "0");
  // One RUNTIME row per traced call: 7 kernels + 4 copies + 1 memset + 3 syncs + 2 memory + 1 api,
  // and 2 kernels on rank 1. Every process's calls carry its pid and the thread's tid.
  CHECK(query(d.db,
              "SELECT globalTid / 0x1000000 % 0x1000000, globalTid % 0x1000000, count(*) FROM "
              "CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1, 2 ORDER BY 1") ==
        Rows{{"100", "100", "18"}, {"200", "200", "2"}});
  CHECK(query(d.db,
              "SELECT s.value, r.returnValue, r.eventClass FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN "
              "StringIds s ON s.id = r.nameId WHERE s.value IN ('cuEventQuery', 'cuEventRecord') ORDER BY 1") ==
        Rows{{"cuEventQuery", "600", "1"}, {"cuEventRecord", "0", "1"}});
}

TEST_CASE("sqlite export: copies, sets, syncs and memory with nsys's enum values") {
  Fixture f;
  std::string err;
  REQUIRE_MESSAGE(export_sqlite(f.files, f.align, f.db_path, &err), err);
  Db d(f.db_path);
  CHECK(query(d.db,
              "SELECT o.name, s.label, t.label, m.bytes, m.end - m.start, m.srcDeviceId, m.dstDeviceId FROM "
              "CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind "
              "JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind JOIN ENUM_CUDA_MEM_KIND t ON t.id = m.dstKind "
              "ORDER BY m.start") ==
        Rows{{"CUDA_MEMCPY_KIND_HTOD", "Pinned", "Device", "1048576", "700", "NULL", "NULL"},
             {"CUDA_MEMCPY_KIND_DTOH", "Device", "Pageable", "4096", "70", "NULL", "NULL"},
             {"CUDA_MEMCPY_KIND_PTOP", "Device", "Device", "8192", "90", "0", "1"},
             {"CUDA_MEMCPY_KIND_DTOD", "Device", "Device", "2048", "20", "NULL", "NULL"}});
  CHECK(query(d.db, "SELECT copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start") ==
        Rows{{"1"}, {"2"}, {"10"}, {"8"}});
  CHECK(query(d.db, "SELECT value, bytes, end - start, start FROM CUPTI_ACTIVITY_KIND_MEMSET") ==
        Rows{{"7", "256", "10", "540400"}});
  // cuMemsetD* set device memory (CUdeviceptr): nsys's memory kind "Device".
  CHECK(query(d.db, "SELECT k.label FROM CUPTI_ACTIVITY_KIND_MEMSET m JOIN ENUM_CUDA_MEM_KIND k ON k.id = m.memKind") ==
        Rows{{"Device"}});
  // Syncs: the event query is a RUNTIME row only.
  CHECK(query(d.db,
              "SELECT e.name, y.end - y.start, y.streamId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y "
              "JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = y.syncType ORDER BY y.start") ==
        Rows{{"CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "5000", "2"},
             {"CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "6000", "0"}});
  // The free takes its size from the allocation.
  CHECK(query(d.db,
              "SELECT o.label, u.bytes, u.address, k.label FROM CUDA_GPU_MEMORY_USAGE_EVENTS u "
              "JOIN ENUM_CUDA_DEV_MEM_EVENT_OPER o ON o.id = u.memoryOperationType "
              "JOIN ENUM_CUDA_MEM_KIND k ON k.id = u.memKind ORDER BY u.start") ==
        Rows{{"Allocation", "1048576", "28672", "Device"}, {"Deallocation", "1048576", "28672", "Device"}});
}

TEST_CASE("sqlite export: NVTX events, domains and threads") {
  Fixture f;
  std::string err;
  REQUIRE_MESSAGE(export_sqlite(f.files, f.align, f.db_path, &err), err);
  Db d(f.db_path);
  std::string t100 = std::to_string(kGpid0 | 100), t101 = std::to_string(kGpid0 | 101);
  CHECK(query(d.db,
              "SELECT start, end, eventType, rangeId, category, color, text, globalTid, endGlobalTid, "
              "domainId FROM NVTX_EVENTS WHERE globalTid / 0x1000000 % 0x1000000 = 100 ORDER BY start, "
              "eventType") == Rows{{"90000", "690000", "59", "NULL", "NULL", "NULL", "step_0", t100, "NULL", "0"},
                                   {"91000", "800000", "60", "3", "NULL", "NULL", "load", t100, t101, "0"},
                                   {"92000", "93000", "59", "NULL", "NULL", "NULL", "dom_range", t100, "NULL", "1"},
                                   {"92000", "NULL", "75", "NULL", "NULL", "NULL", "mylib", t100, "NULL", "1"},
                                   {"95000", "300000", "59", "NULL", "NULL", "4278255360", "fwd", t100, "NULL", "0"},
                                   {"695000", "NULL", "34", "NULL", "3", "NULL", "checkpoint", t100, "NULL", "0"}});
  // nsys's nvtx_sum names a range "domain:text" through the domain's NvtxDomainCreate row.
  CHECK(query(d.db,
              "WITH domains AS (SELECT domainId AS id, globalTid, text AS name FROM NVTX_EVENTS "
              "WHERE eventType = 75) SELECT coalesce(dm.name, '') || ':' || ne.text FROM NVTX_EVENTS ne "
              "LEFT JOIN domains dm ON ne.domainId = dm.id AND (ne.globalTid & 0x0000FFFFFF000000) = "
              "(dm.globalTid & 0x0000FFFFFF000000) WHERE ne.eventType = 59 AND ne.globalTid / 0x1000000 "
              "% 0x1000000 = 100 ORDER BY ne.start") == Rows{{":step_0"}, {"mylib:dom_range"}, {":fwd"}});
  // Every thread, as nsys lists them: 101 (it ended "load") has no name of its own: the process's.
  CHECK(query(d.db,
              "SELECT s.value, t.globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
              "ORDER BY t.globalTid") ==
        Rows{{"python3", t100}, {"python3", t101}, {"python3", std::to_string(kGpid1 | 200)}});
}

TEST_CASE("sqlite export: targets, processes and ranks") {
  Fixture f;
  std::string err;
  REQUIRE_MESSAGE(export_sqlite(f.files, f.align, f.db_path, &err), err);
  Db d(f.db_path);
  CHECK(query(d.db, "SELECT globalPid, rank, host, file, pid, clockOffsetNs FROM cutrace_rank ORDER BY rank") ==
        Rows{{std::to_string(kGpid0), "0", "node-a", f.files[0], "100", "5000000000"},
             {std::to_string(kGpid1), "1", "node-a", f.files[1], "200", "4999500000"}});
  CHECK(query(d.db, "SELECT globalPid, pid, name FROM PROCESSES ORDER BY pid") ==
        Rows{{std::to_string(kGpid0), "100", "python3"}, {std::to_string(kGpid1), "200", "python3"}});
  // One row per physical GPU. Rank 0's device 1 (the peer copy's destination, no Device record)
  // takes id 1, so rank 1's device 0, another GPU, gets the lowest free id: 2.
  CHECK(query(d.db,
              "SELECT id, name, totalMemory, smCount, computeMajor, computeMinor, uuid, cuDevice FROM "
              "TARGET_INFO_GPU ORDER BY id") ==
        Rows{{"0", "NVIDIA H200", "151397597184", "132", "9", "0", "GPU-ab000000-0000-0000-0000-000000000001", "0"},
             {"1", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "1"},
             {"2", "NVIDIA H200", "151397597184", "132", "9", "0", "GPU-ab000000-0000-0000-0000-000000000002", "0"}});
  CHECK(
      query(d.db, "SELECT globalPid, cudaDevice, deviceId FROM cutrace_device ORDER BY globalPid, cudaDevice") ==
      Rows{{std::to_string(kGpid0), "0", "0"}, {std::to_string(kGpid0), "1", "1"}, {std::to_string(kGpid1), "0", "2"}});
  CHECK(query(d.db,
              "SELECT g.uuid, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN TARGET_INFO_GPU g "
              "ON g.id = k.deviceId GROUP BY 1 ORDER BY 1") ==
        Rows{{"GPU-ab000000-0000-0000-0000-000000000001", "4"}, {"GPU-ab000000-0000-0000-0000-000000000002", "2"}});
  CHECK(query(d.db,
              "SELECT streamId, processId, contextId, flag FROM TARGET_INFO_CUDA_STREAM ORDER BY processId, "
              "streamId") ==
        Rows{{"1", "100", "1", "3"}, {"2", "100", "1", "0"}, {"1", "200", "1", "3"}, {"2", "200", "1", "0"}});
  CHECK(one(d.db, "SELECT value FROM META_DATA_EXPORT WHERE name = 'CUTRACE_CLOCK_ALIGNMENT'") == "realtime");
  CHECK(one(d.db, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'") == "3.15.1");
  // busLocation from the Device record's PCI bus id (0x1b).
  CHECK(query(d.db, "SELECT busLocation FROM TARGET_INFO_GPU ORDER BY id") ==
        Rows{{"0000:1b:00.0"}, {"NULL"}, {"0000:1b:00.0"}});
}

TEST_CASE("sqlite export: a lost block of strings and launch configurations fails nothing else") {
  cutrace_test::TempDir dir{"cutrace_sqlite_test"};
  std::string path = dir.path + "/node-a.rank0.pid100.cutrace";
  {
    // Block 0: the metadata, the strings and the kernels' launch configuration; block 1: more
    // kernels that reuse them (interned: no String or KernelConfig record again).
    Trace a(path, "node-a", 0, 100, 1'000'000);
    a.set_tid(100);
    a.kernel("gemm", 1'100'000, 1'100'500, 1'000);
    a.range("step_0", 1'090'000, 1'200'000);
    a.flush();
    a.kernel("gemm", 1'300'000, 1'300'500, 2'000);
    a.kernel("gemm", 1'400'000, 1'400'500, 3'000);
    a.range("step_0", 1'290'000, 1'500'000);
    a.close();
  }
  // Damage block 0's compressed bytes: its checksum no longer matches.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  REQUIRE(bytes.size() > sizeof(trace::FileHeader) + sizeof(trace::BlockHeader) + 8);
  bytes[sizeof(trace::FileHeader) + sizeof(trace::BlockHeader) + 4] ^= 0x5a;
  { std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes; }

  Alignment align;
  std::string db = dir.path + "/out.sqlite", err;
  REQUIRE_MESSAGE(export_sqlite({path}, align, db, &err), err);
  Db d(db);
  CHECK(query(d.db,
              "SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON "
              "s.id = k.demangledName ORDER BY k.start") ==
        Rows{{"(unknown kernel)", "2000"}, {"(unknown kernel)", "3000"}});
  CHECK(one(d.db, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59") == "1");
  const auto& w = exporter::g_stats.warnings;
  bool damaged = false, unnamed = false;
  for (const std::string& m : w) {
    damaged |= m.find(": 1 damaged and ") != std::string::npos;
    unnamed |= m.find("2 kernels whose name and launch configuration were in a lost block") != std::string::npos;
  }
  CHECK(damaged);
  CHECK(unnamed);
}

TEST_CASE("sqlite export: two traces of the same host and pid stay apart") {
  Fixture f;
  std::string copy = f.dir.path + "/again.cutrace";
  std::filesystem::copy_file(f.files[0], copy);
  std::string err;
  REQUIRE_MESSAGE(export_sqlite({f.files[0], copy}, f.align, f.db_path, &err), err);
  Db d(f.db_path);
  CHECK(query(d.db,
              "SELECT globalPid / 0x1000000 % 0x1000000, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
              "GROUP BY globalPid ORDER BY globalPid") == Rows{{"100", "4"}, {"100", "4"}});
  CHECK(one(d.db, "SELECT count(DISTINCT globalPid) FROM cutrace_rank") == "2");
}

TEST_CASE("sqlite export: refuses to overwrite, skips and names unreadable input") {
  Fixture f;
  std::string err;
  { std::ofstream(f.db_path) << "precious"; }
  CHECK_FALSE(export_sqlite(f.files, f.align, f.db_path, &err));
  CHECK(err.find("already exists") != std::string::npos);
  std::ifstream in(f.db_path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "precious");

  err.clear();
  std::string none = f.dir.path + "/none.sqlite";
  CHECK_FALSE(export_sqlite({f.dir.path + "/missing.cutrace"}, f.align, none, &err));
  CHECK(err.find("missing.cutrace") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(none));
  // With a readable trace beside it: that one is exported, the missing one named as skipped.
  err.clear();
  CHECK(export_sqlite({f.files[0], f.dir.path + "/missing.cutrace"}, f.align, none, &err));
  REQUIRE(exporter::g_stats.skipped.size() == 1);
  CHECK(exporter::g_stats.skipped[0].find("missing.cutrace") != std::string::npos);
  CHECK(std::filesystem::exists(none));

  err.clear();
  CHECK_FALSE(export_sqlite(f.files, f.align, f.dir.path + "/no/such/dir/x.sqlite", &err));
  CHECK(err.find("cannot create") != std::string::npos);
}

TEST_CASE("sqlite export: kernel short names") {
  using cutrace::sqlite_export::kernel_short_name;
  CHECK(kernel_short_name("k_direct") == "k_direct");
  CHECK(kernel_short_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                          "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)") ==
        "vectorized_elementwise_kernel");
  CHECK(kernel_short_name("void (anonymous namespace)::elementwise_kernel_with_index<int, F>(int, F, "
                          "function_traits<F>::result_type*)") == "elementwise_kernel_with_index");
  CHECK(kernel_short_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") ==
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  CHECK(kernel_short_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>("
                          "cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)") == "Kernel2");
  CHECK(kernel_short_name("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
                          "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()"
                          "() const::{lambda(long)#1}>(at::TensorIteratorBase&, F const&)::{lambda(int)#1}>(int, "
                          "F)") == "elementwise_kernel");
  CHECK(kernel_short_name("<unknown kernel>") == "<unknown kernel>");
  CHECK(kernel_short_name("") == "");
}
