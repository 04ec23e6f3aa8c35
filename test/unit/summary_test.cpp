// Summary aggregation on synthetic traces, checked against test/golden/summary_basic.json and
// against hand-computed values (histogram percentiles, temporal breakdown, steps, filters).
// Run from the repo root. CUTRACE_UPDATE_GOLDEN=1 rewrites the golden file (review the diff).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "collector/reader.h"
#include "collector/writer.h"
#include "tools/breakdown.h"
#include "tools/name_groups.h"
#include "tools/precision.h"
#include "tools/summary_model.h"

using namespace cutrace;

namespace {

const char* const kGolden = "test/golden/summary_basic.json";

enum Api : uint16_t { kLaunch = 1, kCopy = 2, kSet = 3, kSync = 4, kEvent = 5, kAlloc = 6 };

class TraceBuilder {
 public:
  TraceBuilder(std::string* out, int rank, int pid) {
    w_.open_memory(out);
    w_.meta("host", rank == 0 ? "node-a" : "node-b");
    w_.meta("pid", std::to_string(pid));
    w_.meta("rank", std::to_string(rank));
    w_.meta("local_rank", "0");
    w_.meta("world_size", "2");
    w_.meta("cmdline", "python train.py --steps 10");
    w_.api_name(kLaunch, "cuLaunchKernel");
    w_.api_name(kCopy, "cuMemcpyAsync");
    w_.api_name(kSet, "cuMemsetD8Async");
    w_.api_name(kSync, "cuStreamSynchronize");
    w_.api_name(kEvent, "cuEventRecord");
    w_.api_name(kAlloc, "cuMemAlloc");
    fmt::DeviceRec d{};
    d.name_id = w_.intern("NVIDIA H200");
    d.cc_major = 9;
    d.sm_count = 132;
    d.total_mem = 141ull << 30;
    w_.add(d, fmt::RecType::Device);
  }

  // gpu_ns < 0: no GPU time. The GPU starts 400 ns after the launch call returns.
  void kernel(const char* name, int64_t gpu_ns, uint16_t flags = 0, uint8_t kind = 0) {
    fmt::KernelRec k{};
    set_op(k.op, gpu_ns, flags);
    k.op.api = kLaunch;
    k.name_id = w_.intern(name);
    k.kind = kind;
    w_.add(k, fmt::RecType::Kernel);
  }
  // A kernel launched with grid (grid_x, 1, 1) and block (128, 1, 1).
  void kernel_grid(const char* name, int64_t gpu_ns, uint32_t grid_x, uint16_t flags = 0) {
    fmt::KernelRec k{};
    set_op(k.op, gpu_ns, flags);
    k.op.api = kLaunch;
    k.name_id = w_.intern(name);
    k.grid[0] = grid_x, k.grid[1] = k.grid[2] = 1;
    k.block[0] = 128, k.block[1] = k.block[2] = 1;
    w_.add(k, fmt::RecType::Kernel);
  }
  void meta(const char* key, const char* value) { w_.meta(key, value); }
  // Explicit times (ns). The launch call takes 10 ns: cpu_begin = cpu_end - 10.
  void kernel_at(const char* name, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end, uint32_t stream,
                 uint16_t flags = 0) {
    fmt::KernelRec k{};
    at(k.op, cpu_end, gpu_start, gpu_end, stream, flags);
    k.op.api = kLaunch;
    k.name_id = w_.intern(name);
    w_.add(k, fmt::RecType::Kernel);
  }
  void memcpy_at(fmt::CopyKind kind, uint64_t bytes, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end,
                 uint32_t stream, uint16_t flags = fmt::kOpAsync) {
    fmt::MemcpyRec m{};
    at(m.op, cpu_end, gpu_start, gpu_end, stream, flags);
    m.op.api = kCopy;
    m.copy_kind = uint8_t(kind);
    m.bytes = bytes;
    w_.add(m, fmt::RecType::Memcpy);
  }
  void memset_at(uint64_t bytes, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end, uint32_t stream) {
    fmt::MemsetRec m{};
    at(m.op, cpu_end, gpu_start, gpu_end, stream, fmt::kOpAsync);
    m.op.api = kSet;
    m.bytes = bytes;
    w_.add(m, fmt::RecType::Memset);
  }
  void memcpy(fmt::CopyKind kind, uint64_t bytes, int64_t gpu_ns) {
    fmt::MemcpyRec m{};
    set_op(m.op, gpu_ns, 0);
    m.op.api = kCopy;
    m.copy_kind = uint8_t(kind);
    m.bytes = bytes;
    w_.add(m, fmt::RecType::Memcpy);
  }
  void memset(uint64_t bytes, int64_t gpu_ns) {
    fmt::MemsetRec m{};
    set_op(m.op, gpu_ns, 0);
    m.op.api = kSet;
    m.bytes = bytes;
    w_.add(m, fmt::RecType::Memset);
  }
  void sync(fmt::SyncKind kind, int64_t cpu_ns, int32_t result = 0) {
    fmt::SyncRec s{};
    s.cpu_begin = now_ += 1000;
    s.cpu_end = s.cpu_begin + cpu_ns;
    s.kind = uint8_t(kind);
    s.api = kSync;
    s.result = result;
    w_.add(s, fmt::RecType::Sync);
  }
  void sync_at(fmt::SyncKind kind, int64_t cpu_begin, int64_t cpu_end) {
    fmt::SyncRec s{};
    s.cpu_begin = cpu_begin;
    s.cpu_end = cpu_end;
    s.kind = uint8_t(kind);
    s.api = kSync;
    w_.add(s, fmt::RecType::Sync);
  }
  void api(int32_t result) {
    fmt::ApiRec a{};
    a.cpu_begin = now_ += 1000;
    a.cpu_end = a.cpu_begin + 10;
    a.api = kEvent;
    a.result = result;
    w_.add(a, fmt::RecType::Api);
  }
  void alloc(int64_t cpu_ns) {
    fmt::MemoryRec m{};
    m.cpu_begin = now_ += 1000;
    m.cpu_end = m.cpu_begin + cpu_ns;
    m.api = kAlloc;
    m.op = uint8_t(fmt::MemOp::Alloc);
    m.bytes = 4096;
    w_.add(m, fmt::RecType::Memory);
  }
  // gpu_ns < 0: no GPU projection (no timed GPU work inside). cpu_ns < 0: end before begin.
  void range(const char* name, int64_t cpu_ns, int64_t gpu_ns, uint32_t ops,
             const char* domain = nullptr, fmt::RangeKind kind = fmt::RangeKind::PushPop,
             fmt::RangeSource source = fmt::RangeSource::Api, uint16_t depth = 0) {
    fmt::RangeRec g{};
    g.cpu_begin = now_ += 10000;
    g.cpu_end = g.cpu_begin + cpu_ns;
    if (gpu_ns >= 0) {
      g.gpu_start = g.cpu_begin + 500;
      g.gpu_end = g.gpu_start + gpu_ns;
    }
    g.id = ++range_id_;
    g.tid = 42;
    g.end_tid = kind == fmt::RangeKind::StartEnd ? 43 : 42;
    g.name_id = w_.intern(name);
    g.domain_id = domain ? w_.intern(domain) : 0;
    g.color = 0xff00ff00;
    g.gpu_ops = ops;
    g.depth = depth;
    g.kind = uint8_t(kind);
    g.source = uint8_t(source);
    w_.add(g, fmt::RecType::Range);
  }
  void mark(const char* name, fmt::RangeSource source = fmt::RangeSource::Api) {
    fmt::MarkRec k{};
    k.ts = now_ += 1000;
    k.tid = 42;
    k.name_id = w_.intern(name);
    k.source = uint8_t(source);
    w_.add(k, fmt::RecType::Mark);
  }
  void cpu_sample(uint16_t total, uint32_t process) {
    fmt::CpuSampleRec c{};
    c.ts = now_ += 1000;
    c.ncores = 2;
    c.total_util = total;
    c.process_util = process;
    uint16_t cores[2] = {total, total};
    c.h.type = uint16_t(fmt::RecType::CpuSample);
    w_.append_var(&c, sizeof c, cores, sizeof cores);
  }
  void gpu_sample(uint16_t device, uint16_t util, uint64_t mem_used) {
    fmt::GpuSampleRec g{};
    g.ts = now_ += 1000;
    g.device = device;
    g.util = util;
    g.mem_util = uint16_t(util / 2);
    g.power_mw = 100000;
    g.mem_used = mem_used;
    w_.add(g, fmt::RecType::GpuSample);
  }
  void window(uint32_t index, fmt::WindowEdge edge, int64_t ts) {
    fmt::WindowRec w{};
    w.ts = ts;
    w.index = index;
    w.reason_id = w_.intern("cudaProfilerApi");
    w.edge = uint8_t(edge);
    w_.add(w, fmt::RecType::Window);
  }
  void skip_to(int64_t t) { now_ = t; }  // the next range/mark/op times start after t
  void dropped(uint64_t n) {
    fmt::DroppedRec d{};
    d.count = n;
    w_.add(d, fmt::RecType::Dropped);
  }
  void close(uint64_t dropped_total) { w_.close(dropped_total, fmt::kEndClean); }

 private:
  void set_op(fmt::OpCommon& op, int64_t gpu_ns, uint16_t flags) {
    op.corr = ++corr_;
    op.cpu_begin = now_ += 1000;
    op.cpu_end = op.cpu_begin + 100;
    if (gpu_ns >= 0) {
      op.gpu_start = op.cpu_begin + 500;
      op.gpu_end = op.gpu_start + gpu_ns;
    }
    op.stream = 1;
    op.flags = flags;
  }
  void at(fmt::OpCommon& op, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end, uint32_t stream,
          uint16_t flags) {
    op.corr = ++corr_;
    op.cpu_begin = cpu_end - 10;
    op.cpu_end = cpu_end;
    op.gpu_start = gpu_start;
    op.gpu_end = gpu_end;
    op.stream = stream;
    op.flags = flags;
  }

  TraceWriter w_;
  uint64_t corr_ = 0;
  uint64_t range_id_ = 0;
  int64_t now_ = 1000000;
};

// Rank 1: closed cleanly. Rank 0: never closed (truncated), names interned in another order.
void build_traces(std::string* rank1, std::string* rank0) {
  TraceBuilder a(rank1, 1, 200);
  a.kernel("gemm", 100);
  a.kernel("gemm", 200);
  a.kernel("relu", 50);
  a.kernel("gemm", 300);
  a.kernel("relu", -1);
  a.kernel("captured", -1, fmt::kOpCaptured | fmt::kOpNoGpuTime);
  a.kernel("CUDA graph #1", 1000, 0, uint8_t(fmt::KernelKind::Graph));
  a.kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 8000, fmt::kOpInferredStart);
  a.memcpy(fmt::CopyKind::HtoD, 1 << 20, 1000);
  a.memcpy(fmt::CopyKind::DtoH, 4096, -1);
  a.memset(256, 10);
  a.sync(fmt::SyncKind::Stream, 500);
  a.sync(fmt::SyncKind::EventQuery, 20, 600);  // CUDA_ERROR_NOT_READY: not an error
  a.sync(fmt::SyncKind::Context, 100, 1);
  a.api(0);
  a.api(719);
  a.alloc(3000);
  a.range("step", 1000, 600, 3);
  a.range("fwd", 400, 300, 2, nullptr, fmt::RangeKind::PushPop, fmt::RangeSource::Nvtx, 1);
  a.range("step", 3000, -1, 0);
  a.range("io", 5000, -1, 0, "data", fmt::RangeKind::StartEnd, fmt::RangeSource::Nvtx);
  a.range("bad", -10, -5, 1);  // both clocks backwards: CPU 0, no GPU projection
  a.range("step_1", 2500, 2000, 4);
  a.range("step_2", 2700, 2100, 4);
  a.mark("epoch");
  a.mark("ckpt");
  a.mark("epoch", fmt::RangeSource::Nvtx);
  a.cpu_sample(1000, 9000);
  a.cpu_sample(3000, 11000);
  a.gpu_sample(0, 40, 1 << 30);
  a.gpu_sample(0, 60, 2u << 30);
  a.dropped(5);
  a.close(5);

  TraceBuilder b(rank0, 0, 100);
  b.kernel("relu", 70);
  b.kernel("gemm", 400);
  b.memcpy(fmt::CopyKind::DtoD, 2048, 4);
  b.mark("epoch");
  b.range("io", 1000, -1, 0, "data", fmt::RangeKind::StartEnd);  // ids interned in another order
  b.range("step", 2000, 800, 4);
  b.range("io", 700, 100, 1);  // same name, default domain: a different range name
  b.range("ProfilerStep#3", 3100, -1, 2);
  b.dropped(3);
}

SummaryModel summarise(const std::vector<std::pair<const std::string*, const char*>>& files,
                       SummaryOptions o = {}) {
  SummaryModel m(o);
  for (auto [bytes, name] : files) {
    TraceReader r;
    std::string err;
    REQUIRE(r.open_memory(*bytes, name, &err));
    REQUIRE(m.add(r));
  }
  return m;
}

SummaryModel summarise(const std::string& rank1, const std::string& rank0) {
  return summarise({{&rank1, "node-b.rank1.pid200.cutrace"}, {&rank0, "node-a.rank0.pid100.cutrace"}});
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const RangeSummary& range_named(const std::vector<RangeSummary>& rs, const std::string& name,
                                const std::string& domain = "") {
  for (const RangeSummary& g : rs) {
    if (g.name == name && g.domain == domain) return g;
  }
  FAIL("no range " << name);
  return rs.front();
}

}  // namespace

TEST_CASE("summary totals of a synthetic run") {
  std::string rank1, rank0;
  build_traces(&rank1, &rank0);
  SummaryModel m = summarise(rank1, rank0);

  std::vector<KernelStat> ks = m.kernels();
  REQUIRE(ks.size() == 4);
  CHECK(ks[0].name == "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  CHECK(ks[0].comm);
  CHECK(ks[0].precision == Precision::BF16);
  CHECK(ks[1].name == "gemm");  // ties on total time: more launches first
  CHECK(ks[1].time.count == 4);
  CHECK(ks[1].time.total_ns() == 1000);
  CHECK(ks[1].time.min_ns() == 100);
  CHECK(ks[1].time.max_ns() == 400);
  CHECK(ks[1].time.gpu.median() == 200);  // nearest rank 2 of {100, 200, 300, 400}
  CHECK(ks[1].time.gpu.stddev() == 129);  // sample stddev of {100..400}: 129.1
  CHECK_FALSE(ks[1].comm);
  CHECK(ks[2].name == "CUDA graph #1");
  CHECK(ks[3].name == "relu");
  CHECK(ks[3].time.untimed == 1);
  CHECK(ks[3].time.mean_ns() == 60);
  CHECK(m.memcpy_kind(size_t(fmt::CopyKind::DtoH)).time.untimed == 1);
  CHECK(m.memcpy_kind(size_t(fmt::CopyKind::HtoD)).timed_bytes == 1 << 20);
  CHECK(m.sync_kind(size_t(fmt::SyncKind::Stream)).total_ns == 500);
  CHECK(m.sync_kind(size_t(fmt::SyncKind::Stream)).max_ns == 500);
  CHECK(m.api_errors() == 2);
  CHECK(m.captured_ops() == 1);
  CHECK(m.dropped_records() == 8);
  REQUIRE(m.files().size() == 2);
  CHECK(m.files()[0].rank == 0);
  CHECK_FALSE(m.files()[0].status.complete);
  CHECK(m.files()[1].status.complete);
  CHECK(m.files()[1].devices.at(0).name == "NVIDIA H200");

  // Every record carries its API: launches (10, the captured one included), copies, sets, syncs,
  // event records, allocations.
  std::vector<ApiStat> apis = m.apis();
  std::map<std::string, CpuTimeStat> api;
  for (const ApiStat& a : apis) api[a.name] = a.time;
  CHECK(apis.size() == 6);
  CHECK(api["cuLaunchKernel"].count == 10);
  CHECK(api["cuLaunchKernel"].total_ns == 1000);
  CHECK(api["cuMemcpyAsync"].count == 3);
  CHECK(api["cuStreamSynchronize"].count == 3);
  CHECK(api["cuStreamSynchronize"].total_ns == 620);
  CHECK(api["cuStreamSynchronize"].max_ns == 500);
  CHECK(api["cuMemAlloc"].total_ns == 3000);
  CHECK(apis[0].name == "cuMemAlloc");  // largest total first

  // Launch latency: measured starts only (the NCCL kernel's start is inferred), 400 ns each.
  CHECK(m.launch_latency().n == 7);
  CHECK(m.launch_latency().median() == 400);
  CHECK(m.launch_latency().stddev() == 0);
  CHECK(m.short_kernels() == 7);  // all timed kernels but the 8 us NCCL kernel
  CHECK(m.short_kernel_ns() == 2120);

  std::vector<RangeSummary> rs = m.ranges();
  REQUIRE(rs.size() == 8);
  const RangeSummary& step = range_named(rs, "step");
  CHECK(&step == &rs[0]);  // ties with data:io on CPU total: more ranges first
  CHECK(step.stat.count == 3);
  CHECK(step.stat.cpu_total_ns() == 6000);
  CHECK(step.stat.cpu_mean_ns() == 2000);
  CHECK(step.stat.cpu.min == 1000);
  CHECK(step.stat.cpu.max == 3000);
  CHECK(step.stat.cpu.median() == 2000);
  CHECK(step.stat.cpu.stddev() == 1000);
  CHECK(step.stat.gpu_count() == 2);
  CHECK(step.stat.gpu_total_ns() == 1400);
  CHECK(step.stat.gpu_mean_ns() == 700);
  CHECK(step.stat.gpu_ops == 7);
  const RangeSummary& io = range_named(rs, "io", "data");
  CHECK(&io == &rs[1]);
  CHECK(io.stat.count == 2);
  CHECK(io.stat.cpu.min == 1000);
  CHECK(io.stat.gpu_count() == 0);
  CHECK(io.stat.gpu_mean_ns() == 0);
  CHECK(range_named(rs, "io").stat.gpu_total_ns() == 100);
  const RangeSummary& bad = range_named(rs, "bad");
  CHECK(&bad == &rs.back());
  CHECK(bad.stat.cpu_total_ns() == 0);
  CHECK(bad.stat.gpu_count() == 0);
  CHECK(bad.stat.gpu_ops == 1);
  auto marks = m.marks();
  REQUIRE(marks.size() == 2);
  CHECK(marks[0] == std::pair<std::string, uint64_t>{"epoch", 3});
  CHECK(marks[1] == std::pair<std::string, uint64_t>{"ckpt", 1});

  // Steps: step_1, step_2 (rank 1) and ProfilerStep#3 (rank 0, no GPU projection); not "step".
  const StepStats& s = m.steps();
  CHECK(s.cpu.n == 3);
  CHECK(s.gpu.n == 2);
  CHECK(s.cpu.sum == 8300);
  CHECK(s.cpu_percentile(0.5) == 2700);
  CHECK(s.gpu_percentile(0.5) == 2000);
  CHECK(m.files()[0].steps.cpu.n == 1);
  CHECK(m.files()[1].steps.cpu.n == 2);
  std::string criterion;
  CHECK(m.slowest_file(&criterion) == 0);  // median step 3100 ns against 2500
  CHECK(criterion == "median step time");

  // Samples.
  const FileSummary& f1 = m.files()[1];
  CHECK(f1.cpu_samples == 2);
  CHECK(f1.cpu_total_util_sum == 4000);
  CHECK(f1.cpu_process_util_sum == 20000);
  REQUIRE(f1.nvml.size() == 1);
  CHECK(f1.nvml[0].util_mean() == 50.0);
  CHECK(f1.nvml[0].mem_used_max == 2ull << 30);
}

TEST_CASE("sampled trace: a name's GPU time is estimated per launch configuration") {
  // A fill kernel launched with several sizes (GPT small on the H200, --gpu-sample 0.1) comes out
  // 27% off when all its launches are estimated from the mean of its timed ones.
  const uint16_t untimed = fmt::kOpNoGpuTime | fmt::kOpNotSampled;
  std::string sampled, full;
  {
    TraceBuilder b(&sampled, 0, 1);
    b.meta("gpu_sample", "0.1");
    for (int i = 0; i < 90; ++i) {  // 90 small fills of 10 us, 9 of them timed
      bool t = i % 10 == 0;
      b.kernel_grid("fill", t ? 10000 : -1, 1, t ? 0 : untimed);
    }
    for (int i = 0; i < 10; ++i) {  // 10 large fills of 100 us, 5 timed
      bool t = i % 2 == 0;
      b.kernel_grid("fill", t ? 100000 : -1, 64, t ? 0 : untimed);
    }
    for (int i = 0; i < 4; ++i) b.kernel_grid("gemm", i < 2 ? 50000 : -1, 8, i < 2 ? 0 : untimed);
    b.kernel_grid("gemm", -1, 16, untimed);  // a configuration never timed: the name's mean
    b.kernel_grid("never", -1, 1, untimed);  // a name never timed: nothing to estimate from
    b.close(0);
    TraceBuilder c(&full, 0, 1);
    c.kernel_grid("fill", 10000, 1);
    c.kernel_grid("fill", 100000, 64);
    c.close(0);
  }
  SummaryModel m = summarise({{&sampled, "a.rank0.cutrace"}});
  CHECK(m.sampled());
  std::vector<KernelStat> ks = m.kernels();
  REQUIRE(ks.size() == 3);
  CHECK(ks[0].name == "fill");
  CHECK(ks[0].time.total_ns() == 9 * 10000 + 5 * 100000);
  CHECK(ks[0].est_ns == 90 * 10000 + 10 * 100000);  // per name it would be 100 x 590000 / 14 = 4,214,286
  CHECK(ks[1].name == "gemm");
  CHECK(ks[1].est_ns == 5 * 50000);
  CHECK(ks[2].name == "never");
  CHECK(ks[2].est_ns == 0);
  nlohmann::ordered_json j = m.to_json();
  CHECK(j["kernels"][0]["est_total_ns"] == 1900000);
  CHECK(j["kernel_totals"]["est_total_ns"] == 1900000 + 250000);
  CHECK(j["kernel_totals"]["total_ns"] == 590000 + 100000);

  SummaryModel f = summarise({{&full, "a.rank0.cutrace"}});
  CHECK_FALSE(f.sampled());
  CHECK(f.kernels()[0].est_ns == 110000);
  nlohmann::ordered_json k = f.to_json();
  CHECK_FALSE(k["kernels"][0].contains("est_total_ns"));
  CHECK_FALSE(k["kernel_totals"].contains("est_total_ns"));
}

TEST_CASE("range and mark names beyond the limit are summed as other names") {
  const size_t n = SummaryModel::kMaxRangeNames + 5;
  static_assert(SummaryModel::kMaxRangeNames == SummaryModel::kMaxMarkNames);
  std::string file1, file2;
  for (std::string* out : {&file1, &file2}) {
    TraceBuilder b(out, out == &file1 ? 0 : 1, 10);
    for (size_t i = 0; i < n; ++i) {
      std::string name = "step_" + std::to_string(i);
      b.range(name.c_str(), 10, 5, 1);
      b.mark(name.c_str());
    }
    b.close(0);
  }
  SummaryModel m = summarise({{&file1, "f.cutrace"}, {&file2, "f.cutrace"}});
  std::vector<RangeSummary> rs = m.ranges();
  REQUIRE(rs.size() == SummaryModel::kMaxRangeNames + 1);
  uint64_t total = 0;
  const RangeSummary* other = nullptr;
  for (const RangeSummary& g : rs) {
    total += g.stat.count;
    if (g.name == SummaryModel::kOtherNames) other = &g;
    else CHECK(g.stat.count == 2);
  }
  CHECK(total == 2 * n);
  REQUIRE(other != nullptr);
  CHECK(other->stat.count == 10);  // step_10000..step_10004 of both files
  CHECK(other->stat.gpu_total_ns() == 50);
  auto marks = m.marks();
  REQUIRE(marks.size() == SummaryModel::kMaxMarkNames + 1);
  CHECK(marks[0] == std::pair<std::string, uint64_t>{SummaryModel::kOtherNames, 10});
  CHECK(m.steps().cpu.n == 2 * n);  // every step_<n> range is a step, named or not
}

TEST_CASE("range statistics merge like a single stream") {
  RangeStat a, b, all;
  a.add(0, 30, 5, 25, 2);
  all.add(0, 30, 5, 25, 2);
  b.add(100, 110, 0, 50, 1);  // GPU start unknown: no projection
  all.add(100, 110, 0, 50, 1);
  b.add(200, 205, 210, 260, 3);
  all.add(200, 205, 210, 260, 3);
  a.merge(b);
  CHECK(a.count == 3);
  CHECK(a.cpu_total_ns() == all.cpu_total_ns());
  CHECK(a.cpu.min == 5);
  CHECK(a.cpu.max == 30);
  CHECK(a.cpu.median() == all.cpu.median());
  CHECK(a.cpu.stddev() == all.cpu.stddev());
  CHECK(a.gpu_count() == 2);
  CHECK(a.gpu_total_ns() == 70);
  CHECK(a.gpu_mean_ns() == 35);
  CHECK(a.gpu_ops == 6);
  RangeStat empty;
  empty.merge(RangeStat{});
  CHECK(empty.cpu_mean_ns() == 0);
  CHECK(empty.gpu_mean_ns() == 0);
  CHECK(empty.cpu.median() == 0);
}

TEST_CASE("summary JSON matches the golden file") {
  std::string rank1, rank0;
  build_traces(&rank1, &rank0);
  std::string json = summarise(rank1, rank0).to_json().dump(2) + "\n";
  if (std::getenv("CUTRACE_UPDATE_GOLDEN")) std::ofstream(kGolden) << json;
  std::string golden = read_file(kGolden);
  REQUIRE_MESSAGE(!golden.empty(), kGolden << " missing: run the tests from the repo root");
  CHECK(json == golden);
}

TEST_CASE("time statistics merge like a single stream") {
  TimeStat a, b, all;
  for (int64_t d : {30, 10}) {
    a.add(100, 100 + d);
    all.add(100, 100 + d);
  }
  b.add(0, 50);  // no start: untimed
  b.add(100, 90);  // end before start: untimed
  b.add(100, 105);
  all.add(0, 50);
  all.add(100, 90);
  all.add(100, 105);
  a.merge(b);
  CHECK(a.count == all.count);
  CHECK(a.untimed == 2);
  CHECK(a.total_ns() == all.total_ns());
  CHECK(a.min_ns() == 5);
  CHECK(a.max_ns() == 30);
  CHECK(a.gpu.median() == 10);
  CHECK(a.gpu.stddev() == all.gpu.stddev());
  CHECK(a.gpu.stddev() == 13);  // {30, 10, 5}: 13.2
  TimeStat empty;
  empty.merge(TimeStat{});
  CHECK(empty.min_ns() == 0);
  CHECK(empty.mean_ns() == 0);
}

// ---- histogram -------------------------------------------------------------------------------

TEST_CASE("log histogram buckets") {
  CHECK(LogHistogram::bucket(-5) == 0);
  CHECK(LogHistogram::bucket(0) == 0);
  for (int64_t v = 0; v < 128; ++v) {  // small values have buckets of their own
    CHECK(LogHistogram::bucket(v) == v);
    CHECK(LogHistogram::bucket_value(int(v)) == v);
  }
  int prev = 0;
  for (int64_t v = 1; v < 2000000; v += 1 + v / 1000) {  // monotonic, and matches the bounds
    int b = LogHistogram::bucket(v);
    CHECK(b >= prev);
    CHECK(LogHistogram::bucket_low(b) <= v);
    CHECK(v < LogHistogram::bucket_low(b + 1));
    prev = b;
  }
  for (int b = 1; b + 1 < LogHistogram::kBuckets; ++b) {  // each value within 0.79% of its bucket's
    int64_t lo = LogHistogram::bucket_low(b), hi = LogHistogram::bucket_low(b + 1) - 1;
    REQUIRE(hi >= lo);
    int64_t rep = LogHistogram::bucket_value(b);
    CHECK(LogHistogram::bucket(lo) == b);
    CHECK(LogHistogram::bucket(hi) == b);
    CHECK(double(rep - lo) <= 0.0079 * double(lo));
    CHECK(double(hi - rep) <= 0.0079 * double(hi));
  }
  // bucket() skips the sub-bucket mask (v >> shift already carries the 64): same buckets as the
  // formula with it.
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    int64_t v = int64_t(rng() >> (20 + rng() % 38));  // every magnitude from 2^6 to 2^44
    if (v < 64 || v >= (int64_t(1) << 44)) continue;
    int e = 63 - __builtin_clzll(uint64_t(v));
    REQUIRE(LogHistogram::bucket(v) == ((e - 5) << 6) + int((v >> (e - 6)) & 63));
  }
  CHECK(LogHistogram::bucket_low(LogHistogram::kBuckets - 1) < (int64_t(1) << 44));
  CHECK(LogHistogram::bucket(int64_t(1) << 44) == LogHistogram::kBuckets - 1);
  CHECK(LogHistogram::bucket(std::numeric_limits<int64_t>::max()) == LogHistogram::kBuckets - 1);
}

TEST_CASE("histogram percentiles are within 1% of the exact ones") {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> kernel_like(9.0, 1.5);  // median ~8 us, long tail
  for (int trial = 0; trial < 4; ++trial) {
    Dist d, left, right;
    std::vector<int64_t> values;
    size_t n = trial == 0 ? 3 : size_t(1000) << (2 * trial);
    for (size_t i = 0; i < n; ++i) {
      int64_t v = int64_t(kernel_like(rng)) + 1;
      values.push_back(v);
      d.add(v);
      (i % 3 ? left : right).add(v);
    }
    left.merge(right);
    std::sort(values.begin(), values.end());
    for (double p : {0.01, 0.1, 0.5, 0.9, 0.99, 1.0}) {
      size_t k = std::max<size_t>(1, size_t(std::ceil(p * double(n))));
      double exact = double(values[k - 1]);
      CHECK(std::fabs(double(d.percentile(p)) - exact) <= 0.01 * exact);
      CHECK(left.percentile(p) == d.percentile(p));
    }
    CHECK(d.percentile(0) == values.front());
    CHECK(d.percentile(1) == values.back());
    double mean = 0, m2 = 0;
    for (int64_t v : values) mean += double(v);
    mean /= double(n);
    for (int64_t v : values) m2 += (double(v) - mean) * (double(v) - mean);
    double sd = std::sqrt(m2 / double(n - 1));
    CHECK(std::fabs(double(d.stddev()) - sd) <= 0.5 + 1e-9 * sd);
    CHECK(left.stddev() == d.stddev());
    CHECK(left.sum == d.sum);
  }
}

TEST_CASE("signed distributions: negative values and stddev stability") {
  Dist d;
  for (int64_t v : {-300, -100, 50, 200, 400}) d.add(v);
  CHECK(d.neg.count() == 2);
  CHECK(d.min == -300);
  CHECK(d.max == 400);
  CHECK(d.percentile(0.2) == -300);
  CHECK(d.percentile(0.4) == -100);
  CHECK(d.median() == 50);
  CHECK(d.percentile(1) == 400);
  CHECK(d.mean() == 50);
  // A large offset does not lose the spread (exact integer sums): values 10^12 + {0, 2}.
  Dist big;
  for (int i = 0; i < 1000; ++i) big.add(1000000000000 + (i % 2) * 2);
  CHECK(big.stddev() == 1);
  Dist one;
  one.add(12345);
  CHECK(one.median() == 12345);  // one value is kept exactly
  CHECK(one.stddev() == 0);
}

TEST_CASE("glob patterns") {
  CHECK(glob_match("step_[0-9]*|ProfilerStep#[0-9]*", "step_12"));
  CHECK(glob_match("step_[0-9]*|ProfilerStep#[0-9]*", "ProfilerStep#3"));
  CHECK_FALSE(glob_match("step_[0-9]*|ProfilerStep#[0-9]*", "step_fwd"));
  CHECK_FALSE(glob_match("step_[0-9]*|ProfilerStep#[0-9]*", "step"));
  CHECK(glob_match("*train?step*", "my_train_step_4"));
  CHECK(glob_match("[!a-c]x", "dx"));
  CHECK_FALSE(glob_match("[!a-c]x", "bx"));
  CHECK(glob_match("", ""));
  CHECK_FALSE(glob_match("a", ""));
}

// ---- temporal breakdown ----------------------------------------------------------------------

namespace {

// The hand-built timeline of docs/SUMMARY.md, ns (the GPU starts at 100):
//   K1 compute [100,300) ready 0        C1 comm [200,500) ready 50
//   idle [500,600): M1 copy [600,700) ready 550 > 500: host wait
//   idle [700,800): K2 compute [800,1000) ready 650 <= 700: kernel wait
//   S1 set [950,1100) ready 900         K3 compute [1100,1200) ready 1150
std::vector<GpuInterval> hand_built() {
  return {{100, 300, 0, GpuWork::Compute},   {600, 700, 550, GpuWork::Memcpy},
          {800, 1000, 650, GpuWork::Compute}, {1100, 1200, 1150, GpuWork::Compute},
          {200, 500, 50, GpuWork::Comm},      {950, 1100, 900, GpuWork::Memset}};
}

void check_hand_built(const GpuBreakdown& b, int64_t offset = 0) {
  CHECK(b.first_ns == offset + 100);
  CHECK(b.last_ns == offset + 1200);
  CHECK(b.elapsed_ns() == 1100);
  CHECK(b.busy_ns() == 900);
  CHECK(b.idle_ns() == 200);
  CHECK(b.host_wait_ns == 100);
  CHECK(b.kernel_wait_ns == 100);
  CHECK(b.gaps == 2);
  CHECK(b.host_wait_gaps == 1);
  CHECK(b.compute_ns() == 500);        // [100,300) [800,1000) [1100,1200)
  CHECK(b.communication_ns() == 200);  // [300,500)
  CHECK(b.memory_ns() == 200);         // [600,700) [1000,1100)
  CHECK(b.overlap_ns() == 100);        // [200,300)
  CHECK(b.comm_total_ns() == 300);
  CHECK(b.kernel_ns() == 700);
  CHECK(b.memcpy_ns() == 100);
  CHECK(b.memset_ns() == 100);
  CHECK(b.mask_ns[1u << unsigned(GpuWork::Compute) | 1u << unsigned(GpuWork::Memset)] == 50);
  CHECK(b.intervals == 6);
  CHECK(b.late == 0);
}

}  // namespace

TEST_CASE("breakdown of a hand-built timeline") {
  DeviceTimeline t;
  for (const GpuInterval& iv : hand_built()) t.add(iv);
  check_hand_built(t.finish());
  GpuBreakdown empty = t.finish();  // reusable, and empty afterwards
  CHECK(empty.elapsed_ns() == 0);
  CHECK(empty.intervals == 0);
}

TEST_CASE("breakdown does not depend on the arrival order within the reorder window") {
  std::vector<GpuInterval> ivs = hand_built();
  std::mt19937 rng(3);
  for (int i = 0; i < 20; ++i) {
    std::shuffle(ivs.begin(), ivs.end(), rng);
    DeviceTimeline t(8);  // capacity 8 >= 6 intervals: everything is reordered
    for (const GpuInterval& iv : ivs) t.add(iv);
    check_hand_built(t.finish());
  }
  // Many intervals through a small buffer, shifted copies of the pattern, in a scrambled order
  // that stays within half the capacity of the right place: same result as sorted input.
  std::vector<GpuInterval> many;
  for (int64_t k = 0; k < 500; ++k) {
    for (GpuInterval iv : hand_built()) {
      iv.start += k * 1100;
      iv.end += k * 1100;
      iv.ready += k * 1100;
      many.push_back(iv);
    }
  }
  std::vector<GpuInterval> sorted = many;
  std::sort(sorted.begin(), sorted.end(), [](const GpuInterval& a, const GpuInterval& b) {
    return a.start != b.start ? a.start < b.start : a.ready < b.ready;
  });
  for (size_t i = 0; i + 12 <= many.size(); i += 12) std::shuffle(many.begin() + long(i), many.begin() + long(i + 12), rng);
  DeviceTimeline a(64), b(64);
  for (const GpuInterval& iv : many) a.add(iv);
  for (const GpuInterval& iv : sorted) b.add(iv);
  GpuBreakdown ra = a.finish(), rb = b.finish();
  CHECK(ra.late == 0);
  CHECK(ra.elapsed_ns() == 500 * 1100);
  CHECK(ra.compute_ns() == rb.compute_ns());
  CHECK(ra.overlap_ns() == 500 * 100);
  CHECK(ra.host_wait_ns == rb.host_wait_ns);
  CHECK(ra.kernel_wait_ns == rb.kernel_wait_ns);
  CHECK(ra.idle_ns() == 500 * 200);
}

TEST_CASE("breakdown: an interval later than the reorder window is clipped and counted") {
  DeviceTimeline t(4);  // sweeps 3 intervals whenever 4 are waiting
  t.add({0, 100, 0, GpuWork::Compute});
  t.add({200, 300, 0, GpuWork::Compute});
  t.add({400, 500, 0, GpuWork::Compute});
  t.add({600, 700, 0, GpuWork::Compute});  // full: the first three swept, the sweep is at 400
  t.add({350, 450, 0, GpuWork::Comm});     // its start 350 was passed: [350,400) is lost
  t.add({360, 380, 0, GpuWork::Comm});     // entirely in the past: lost
  GpuBreakdown b = t.finish();
  CHECK(b.late == 2);
  CHECK(b.late_ns == 50 + 20);
  CHECK(b.overlap_ns() == 50);  // [400,450)
  CHECK(b.elapsed_ns() == 700);
  CHECK(b.idle_ns() == 300);  // [100,200) [300,400) [500,600)
  CHECK(b.intervals == 6);
}

TEST_CASE("breakdown from trace records: activity, HTA split, launch latency") {
  std::string bytes;
  TraceBuilder b(&bytes, 0, 1);
  const int64_t o = 1000000;  // the hand-built timeline, records out of time order
  b.kernel_at("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn", o + 0, o + 100, o + 300, 1);
  b.memcpy_at(fmt::CopyKind::HtoD, 1000, o + 550, o + 600, o + 700, 1);
  b.kernel_at("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn", o + 650, o + 800, o + 1000, 1);
  b.kernel_at("void relu<c10::Half>(c10::Half*)", o + 1150, o + 1100, o + 1200, 1);
  b.kernel_at("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", o + 50, o + 200, o + 500, 2);
  b.memset_at(64, o + 900, o + 950, o + 1100, 2);
  b.close(0);
  SummaryModel m = summarise({{&bytes, "t.cutrace"}});
  REQUIRE(m.files().size() == 1);
  REQUIRE(m.files()[0].activity.size() == 1);
  check_hand_built(m.files()[0].activity[0].timeline, o);

  nlohmann::ordered_json j = m.to_json();
  const auto& d = j["devices"][0];
  CHECK(d["elapsed_ns"] == 1100);
  CHECK(d["busy_ns"] == 900);
  CHECK(d["kernel_ns"] == 700);
  CHECK(d["breakdown"]["host_wait_ns"] == 100);
  CHECK(d["breakdown"]["kernel_wait_ns"] == 100);
  CHECK(d["breakdown"]["overlap_ns"] == 100);
  CHECK(d["breakdown"]["communication_ns"] == 200);
  CHECK(j["ranks"][0]["comm_kernel_ns"] == 300);
  CHECK(j["kernel_precision"]["bf16"]["count"] == 3);
  CHECK(j["kernel_precision"]["bf16"]["total_ns"] == 700);
  CHECK(j["kernel_precision"]["fp16"]["names"] == 1);
  CHECK(j["memory_ops"]["total_ns"] == 250);
  CHECK(j["memory_ops"]["memset"]["share"] == 150.0 / 250.0);

  // Latency = GPU start - launch return: 100, 150 (queued behind the copy), -50, 150.
  const Dist& l = m.launch_latency();
  CHECK(l.n == 4);
  CHECK(l.sum == 350);
  CHECK(l.min == -50);
  CHECK(l.max == 150);
  CHECK(l.neg.count() == 1);
  CHECK(l.median() == 100);
  // The stream was idle at launch for all but the second gemm (the copy ended at 700 > 650).
  CHECK(m.launch_latency_idle().n == 3);
  REQUIRE(m.worst_launches().size() == 3);
  CHECK(m.worst_launches()[0].latency_ns == 150);
  CHECK(m.worst_launches()[0].name == "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  CHECK(m.worst_launches()[2].latency_ns == -50);
  CHECK(m.short_kernels() == 4);
  CHECK(m.short_kernel_ns() == 800);
}

// ---- steps, filters, ranks -------------------------------------------------------------------

TEST_CASE("step histogram and per-rank step comparison") {
  std::string r0, r1;
  {
    TraceBuilder b(&r0, 0, 1);
    for (int i = 1; i <= 12; ++i) b.range(("step_" + std::to_string(i)).c_str(), 100 * i, 50 * i, 1);
    b.range("step_x", 99999, -1, 0);  // not a step
    b.close(0);
    TraceBuilder c(&r1, 1, 2);
    for (int i = 1; i <= 3; ++i) c.range(("ProfilerStep#" + std::to_string(i)).c_str(), 5000, -1, 0);
    c.close(0);
  }
  SummaryModel m = summarise({{&r0, "a.rank0.cutrace"}});
  const StepStats& s = m.steps();
  CHECK(s.exact);
  CHECK(s.cpu.n == 12);
  CHECK(s.cpu.mean() == 650);
  CHECK(s.cpu_percentile(0.5) == 600);
  CHECK(s.cpu_percentile(0.9) == 1100);
  CHECK(s.gpu_percentile(0.5) == 300);
  std::vector<HistBin> bins = s.bins(false);  // 10 bins of 111 ns from 100
  REQUIRE(bins.size() == 10);
  std::vector<uint64_t> counts;
  for (const HistBin& h : bins) counts.push_back(h.count);
  CHECK(counts == std::vector<uint64_t>{2, 1, 1, 1, 1, 1, 1, 1, 1, 2});
  CHECK(bins[0].lo_ns == 100);
  CHECK(bins[0].hi_ns == 211);
  CHECK(bins[9].hi_ns == 1210);
  nlohmann::ordered_json j = m.to_json();
  CHECK(j["steps"]["cpu"]["p90_ns"] == 1100);
  CHECK(j["steps"]["cpu_histogram"].size() == 10);
  CHECK(j["rank_comparison"].is_null());

  SummaryModel two = summarise({{&r0, "a.rank0.cutrace"}, {&r1, "b.rank1.cutrace"}});
  CHECK(two.steps().cpu.n == 15);
  std::string criterion;
  CHECK(two.slowest_file(&criterion) == 1);
  nlohmann::ordered_json k = two.to_json();
  CHECK(k["rank_comparison"]["slowest_rank"] == 1);
  CHECK(k["ranks"][1]["steps"]["cpu_median_ns"] == 5000);
  CHECK(k["ranks"][0]["steps"]["count"] == 12);

  SummaryOptions only_profiler;
  only_profiler.step_pattern = "ProfilerStep#*";
  CHECK(summarise({{&r0, "a"}, {&r1, "b"}}, only_profiler).steps().cpu.n == 3);
  StepStats one;
  one.add(7, false, 0);
  REQUIRE(one.bins(false).size() == 1);
  CHECK(one.bins(false)[0].count == 1);
  CHECK(one.bins(true).empty());
}

TEST_CASE("per-window table: records go to the window they began in, whatever their order in the file") {
  // A packed block groups records by type, so a file's Window edges need not come before the
  // records of their window: here they are written last. (First cut of the table: every record
  // went to the last window opened in file order, window 1.)
  std::string out;
  TraceBuilder b(&out, 0, 1);
  b.range("step_1", 5000, -1, 0);                      // cpu_begin 1,010,000
  b.kernel_at("k", 1100010, 1100100, 1100200, 1);      // cpu_begin 1,100,000, 100 ns
  b.kernel_at("k", 1200010, 1200100, 1200200, 1);
  b.skip_to(2000000);
  b.range("step_2", 7000, -1, 0);                      // cpu_begin 2,010,000
  b.kernel_at("k", 2500010, 2500100, 2500400, 1);      // 300 ns
  b.kernel_at("k", 2600010, 0, 0, 1);                  // untimed: counted, no time
  b.window(0, fmt::WindowEdge::Begin, 1000000);
  b.window(0, fmt::WindowEdge::End, 1600000);
  b.window(1, fmt::WindowEdge::Begin, 2000000);
  b.close(0);
  nlohmann::ordered_json j = summarise({{&out, "r0.cutrace"}}, SummaryOptions{}).to_json();
  const auto& w = j["ranks"][0]["windows"];
  REQUIRE(w.size() == 2);
  CHECK(w[0]["index"] == 0);
  CHECK(w[0]["begin_ns"] == 1000000);
  CHECK(w[0]["end_ns"] == 1600000);
  CHECK(w[0]["kernels"] == 2);
  CHECK(w[0]["kernel_ns"] == 200);
  CHECK(w[0]["steps"]["count"] == 1);
  CHECK(w[0]["steps"]["cpu_median_ns"] == 5000);
  CHECK(w[1]["index"] == 1);
  CHECK(w[1]["end_ns"].is_null());  // the file ends inside it
  CHECK(w[1]["kernels"] == 2);
  CHECK(w[1]["kernel_ns"] == 300);
  CHECK(w[1]["steps"]["cpu_median_ns"] == 7000);
  CHECK(j["ranks"][0]["windows_beyond"] == 0);
}

TEST_CASE("per-window table: a trace of one window gives that window the file's kernels and steps") {
  std::string out;
  TraceBuilder b(&out, 0, 1);
  b.window(0, fmt::WindowEdge::Begin, 1000000);
  for (int s = 0; s < 10; ++s) {
    b.range(("step_" + std::to_string(s)).c_str(), 5000 + s, -1, 0);
    for (int k = 0; k < 4; ++k) b.kernel("k", 100);
  }
  b.window(0, fmt::WindowEdge::End, 9000000);
  b.close(0);
  nlohmann::ordered_json j = summarise({{&out, "r0.cutrace"}}, SummaryOptions{}).to_json();
  const auto& w = j["ranks"][0]["windows"];
  REQUIRE(w.size() == 1);
  CHECK(w[0]["kernels"] == 40);
  CHECK(w[0]["kernel_ns"] == 4000);
  CHECK(w[0]["steps"]["count"] == 10);
  CHECK(w[0]["steps"]["cpu_min_ns"] == 5000);
  CHECK(w[0]["steps"]["cpu_max_ns"] == 5009);
}

TEST_CASE("filters: --from/--to as times from each file's capture start") {
  std::string out;
  TraceBuilder b(&out, 0, 1);
  b.meta("start_monotonic_ns", "1000000");
  b.kernel_at("k", 1000100, 1000200, 1000300, 1);  // cpu_begin 90 ns after the start
  b.kernel_at("k", 1500010, 1500100, 1500300, 1);  // 500 us after, 200 ns of GPU time
  b.kernel_at("k", 2500010, 2500100, 2500700, 1);  // 1.5 ms after
  b.close(0);
  SummaryOptions o;
  o.relative = true;
  o.from_ns = 400'000;
  o.to_ns = 1'000'000;
  nlohmann::ordered_json j = summarise({{&out, "r0.cutrace"}}, o).to_json();
  CHECK(j["kernel_totals"]["count"] == 1);
  CHECK(j["kernel_totals"]["total_ns"] == 200);
  CHECK(j["filters"]["times"] == "from each file's start");
}

TEST_CASE("NVTX table: names that differ only in their numbers share a row") {
  std::string out;
  TraceBuilder b(&out, 0, 1);
  for (int s = 0; s < 25; ++s) b.range(("step_" + std::to_string(s)).c_str(), 1000, -1, 0);
  b.range("Loss", 10, -1, 0);
  b.range("layer.3.mlp", 20, -1, 0);
  b.close(0);
  std::vector<RangeGroup> g = group_ranges(summarise({{&out, "r0.cutrace"}}, SummaryOptions{}).ranges());
  REQUIRE(g.size() == 3);
  CHECK(g[0].range.name == "step_* (25)");
  CHECK(g[0].names == 25);
  CHECK(g[0].range.stat.count == 25);
  CHECK(g[0].range.stat.cpu_total_ns() == 25000);
  CHECK(g[1].range.name == "layer.3.mlp");  // alone in its family: as it is
  CHECK(g[2].range.name == "Loss");
  CHECK(digit_pattern("layer.3.mlp.12") == "layer.*.mlp.*");
  CHECK(digit_pattern("Loss") == "");
}

TEST_CASE("filters: rank, capture window, time span, steps between synchronisations") {
  std::string r0, r1;
  const int64_t o = 1000000;
  for (std::string* out : {&r0, &r1}) {
    TraceBuilder b(out, out == &r0 ? 0 : 1, 1);
    b.window(0, fmt::WindowEdge::Begin, o + 590);
    b.sync_at(fmt::SyncKind::Context, o - 500, o - 100);
    b.kernel_at("k", o + 0, o + 100, o + 300, 1);           // cpu_begin o - 10
    b.memcpy_at(fmt::CopyKind::HtoD, 8, o + 550, o + 600, o + 700, 1);
    b.kernel_at("k", o + 650, o + 800, o + 1000, 1);        // cpu_begin o + 640
    b.sync_at(fmt::SyncKind::Context, o + 700, o + 1000);
    b.kernel_at("k", o + 1150, o + 1100, o + 1200, 1);      // cpu_begin o + 1140
    b.memset_at(8, o + 900, o + 950, o + 1100, 2);          // cpu_begin o + 890
    b.window(0, fmt::WindowEdge::End, o + 1000);
    b.sync_at(fmt::SyncKind::Context, o + 1300, o + 2500);
    b.sync_at(fmt::SyncKind::Stream, o + 1300, o + 2600);
    b.close(0);
  }
  auto run = [&](SummaryOptions opt) { return summarise({{&r0, "r0.cutrace"}, {&r1, "r1.cutrace"}}, opt).to_json(); };

  SummaryOptions rank;
  rank.rank = 1;
  nlohmann::ordered_json j = run(rank);
  CHECK(j["ranks"].size() == 1);
  CHECK(j["ranks"][0]["rank"] == 1);
  CHECK(j["skipped_files"] == 1);
  CHECK(j["kernel_totals"]["count"] == 3);

  SummaryOptions window;
  window.window = 0;
  j = run(window);
  CHECK(j["kernel_totals"]["count"] == 2);  // cpu_begin in [o + 590, o + 1000]: the second k, x2
  CHECK(j["memset"]["count"] == 2);
  CHECK(j["memcpy"]["HtoD"]["count"] == 0);
  CHECK(j["syncs"]["context"]["count"] == 2);
  CHECK(j["filters"]["window"] == 0);

  SummaryOptions missing;
  missing.window = 7;
  SummaryModel none = summarise({{&r0, "r0.cutrace"}}, missing);
  CHECK(none.files().empty());
  CHECK(none.skipped_files() == 1);
  REQUIRE(none.notes().size() == 1);
  CHECK(none.notes()[0] == "r0.cutrace: no capture window 7: skipped");

  SummaryOptions span;
  span.from_ns = o + 600;
  span.to_ns = o + 1200;
  j = run(span);
  CHECK(j["kernel_totals"]["count"] == 4);  // cpu_begin o + 640 and o + 1140
  CHECK(j["memcpy"]["HtoD"]["count"] == 0);
  CHECK(j["filters"]["from_ns"] == o + 600);
  CHECK(j["filters"]["to_ns"] == o + 1200);

  // Steps between context synchronisations: (o-100, o+1000] and (o+1000, o+2500].
  SummaryOptions sync;
  sync.step_sync = uint8_t(fmt::SyncKind::Context);
  j = run(sync);
  CHECK(j["steps"]["source"] == "sync:context");
  CHECK(j["steps"]["count"] == 4);
  CHECK(j["steps"]["cpu"]["min_ns"] == 1100);
  CHECK(j["steps"]["cpu"]["max_ns"] == 1500);
  CHECK(j["steps"]["gpu"]["count"] == 4);
  CHECK(j["steps"]["gpu"]["min_ns"] == 100);   // the third k alone: [o+1100, o+1200)
  CHECK(j["steps"]["gpu"]["max_ns"] == 1000);  // [o+100, o+1100): first k .. the memset
  CHECK(j["ranks"][0]["windows"][0]["steps"]["count"] == 2);  // by their ends, both after o + 590
}
