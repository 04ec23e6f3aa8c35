// Summary aggregation on synthetic traces, checked against test/golden/summary_basic.json.
// Run from the repo root. CUTRACE_UPDATE_GOLDEN=1 rewrites the golden file (review the diff).
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "collector/reader.h"
#include "collector/writer.h"
// The unit binary links only the format library, so the model is compiled into this test.
#include "tools/summary_model.cpp"

using namespace cutrace;

namespace {

const char* const kGolden = "test/golden/summary_basic.json";

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
    fmt::DeviceRec d{};
    d.name_id = w_.intern("NVIDIA H200");
    d.cc_major = 9;
    d.sm_count = 132;
    d.total_mem = 141ull << 30;
    w_.add(d, fmt::RecType::Device);
  }

  // gpu_ns < 0: no GPU time.
  void kernel(const char* name, int64_t gpu_ns, uint16_t flags = 0, uint8_t kind = 0) {
    fmt::KernelRec k{};
    set_op(k.op, gpu_ns, flags);
    k.name_id = w_.intern(name);
    k.kind = kind;
    w_.add(k, fmt::RecType::Kernel);
  }
  void memcpy(fmt::CopyKind kind, uint64_t bytes, int64_t gpu_ns) {
    fmt::MemcpyRec m{};
    set_op(m.op, gpu_ns, 0);
    m.copy_kind = uint8_t(kind);
    m.bytes = bytes;
    w_.add(m, fmt::RecType::Memcpy);
  }
  void memset(uint64_t bytes, int64_t gpu_ns) {
    fmt::MemsetRec m{};
    set_op(m.op, gpu_ns, 0);
    m.bytes = bytes;
    w_.add(m, fmt::RecType::Memset);
  }
  void sync(fmt::SyncKind kind, int64_t cpu_ns, int32_t result = 0) {
    fmt::SyncRec s{};
    s.cpu_begin = now_ += 1000;
    s.cpu_end = s.cpu_begin + cpu_ns;
    s.kind = uint8_t(kind);
    s.result = result;
    w_.add(s, fmt::RecType::Sync);
  }
  void api(int32_t result) {
    fmt::ApiRec a{};
    a.cpu_begin = now_ += 1000;
    a.cpu_end = a.cpu_begin + 10;
    a.result = result;
    w_.add(a, fmt::RecType::Api);
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
  a.memcpy(fmt::CopyKind::HtoD, 1 << 20, 1000);
  a.memcpy(fmt::CopyKind::DtoH, 4096, -1);
  a.memset(256, 10);
  a.sync(fmt::SyncKind::Stream, 500);
  a.sync(fmt::SyncKind::EventQuery, 20, 600);  // CUDA_ERROR_NOT_READY: not an error
  a.sync(fmt::SyncKind::Context, 100, 1);
  a.api(0);
  a.api(719);
  a.range("step", 1000, 600, 3);
  a.range("fwd", 400, 300, 2, nullptr, fmt::RangeKind::PushPop, fmt::RangeSource::Nvtx, 1);
  a.range("step", 3000, -1, 0);
  a.range("io", 5000, -1, 0, "data", fmt::RangeKind::StartEnd, fmt::RangeSource::Nvtx);
  a.range("bad", -10, -5, 1);  // both clocks backwards: CPU 0, no GPU projection
  a.mark("epoch");
  a.mark("ckpt");
  a.mark("epoch", fmt::RangeSource::Nvtx);
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
  b.dropped(3);
}

SummaryModel summarise(const std::string& rank1, const std::string& rank0) {
  SummaryModel m;
  for (auto [bytes, name] : {std::pair{&rank1, "node-b.rank1.pid200.cutrace"},
                             std::pair{&rank0, "node-a.rank0.pid100.cutrace"}}) {
    TraceReader r;
    std::string err;
    REQUIRE(r.open_memory(*bytes, name, &err));
    REQUIRE(m.add(r));
  }
  return m;
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("summary totals of a synthetic run") {
  std::string rank1, rank0;
  build_traces(&rank1, &rank0);
  SummaryModel m = summarise(rank1, rank0);

  std::vector<KernelStat> ks = m.kernels();
  REQUIRE(ks.size() == 3);
  CHECK(ks[0].name == "gemm");  // ties on total time: more launches first
  CHECK(ks[0].time.count == 4);
  CHECK(ks[0].time.total_ns == 1000);
  CHECK(ks[0].time.min_ns == 100);
  CHECK(ks[0].time.max_ns == 400);
  CHECK(ks[1].name == "CUDA graph #1");
  CHECK(ks[2].name == "relu");
  CHECK(ks[2].time.untimed == 1);
  CHECK(ks[2].time.mean_ns() == 60);
  CHECK(m.memcpy_kind(size_t(fmt::CopyKind::DtoH)).time.untimed == 1);
  CHECK(m.memcpy_kind(size_t(fmt::CopyKind::HtoD)).timed_bytes == 1 << 20);
  CHECK(m.sync_kind(size_t(fmt::SyncKind::Stream)).total_ns == 500);
  CHECK(m.api_errors() == 2);
  CHECK(m.captured_ops() == 1);
  CHECK(m.dropped_records() == 8);
  REQUIRE(m.files().size() == 2);
  CHECK(m.files()[0].rank == 0);
  CHECK_FALSE(m.files()[0].status.complete);
  CHECK(m.files()[1].status.complete);
  CHECK(m.files()[1].devices.at(0).name == "NVIDIA H200");

  std::vector<RangeSummary> rs = m.ranges();
  REQUIRE(rs.size() == 5);
  CHECK(rs[0].name == "step");  // ties with data:io on CPU total: more ranges first
  CHECK(rs[0].domain == "");
  CHECK(rs[0].stat.count == 3);
  CHECK(rs[0].stat.cpu_total_ns == 6000);
  CHECK(rs[0].stat.cpu_mean_ns() == 2000);
  CHECK(rs[0].stat.cpu_min_ns == 1000);
  CHECK(rs[0].stat.cpu_max_ns == 3000);
  CHECK(rs[0].stat.gpu_count == 2);
  CHECK(rs[0].stat.gpu_total_ns == 1400);
  CHECK(rs[0].stat.gpu_mean_ns() == 700);
  CHECK(rs[0].stat.gpu_ops == 7);
  CHECK(rs[1].name == "io");
  CHECK(rs[1].domain == "data");
  CHECK(rs[1].stat.count == 2);
  CHECK(rs[1].stat.cpu_min_ns == 1000);
  CHECK(rs[1].stat.gpu_count == 0);
  CHECK(rs[1].stat.gpu_mean_ns() == 0);
  CHECK(rs[2].name == "io");
  CHECK(rs[2].domain == "");
  CHECK(rs[2].stat.gpu_total_ns == 100);
  CHECK(rs[3].name == "fwd");
  CHECK(rs[4].name == "bad");
  CHECK(rs[4].stat.cpu_total_ns == 0);
  CHECK(rs[4].stat.gpu_count == 0);
  CHECK(rs[4].stat.gpu_ops == 1);
  auto marks = m.marks();
  REQUIRE(marks.size() == 2);
  CHECK(marks[0] == std::pair<std::string, uint64_t>{"epoch", 3});
  CHECK(marks[1] == std::pair<std::string, uint64_t>{"ckpt", 1});
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
  SummaryModel m;
  for (std::string* bytes : {&file1, &file2}) {
    TraceReader r;
    std::string err;
    REQUIRE(r.open_memory(*bytes, "f.cutrace", &err));
    REQUIRE(m.add(r));
  }
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
  CHECK(other->stat.gpu_total_ns == 50);
  auto marks = m.marks();
  REQUIRE(marks.size() == SummaryModel::kMaxMarkNames + 1);
  CHECK(marks[0] == std::pair<std::string, uint64_t>{SummaryModel::kOtherNames, 10});
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
  CHECK(a.cpu_total_ns == all.cpu_total_ns);
  CHECK(a.cpu_min_ns == 5);
  CHECK(a.cpu_max_ns == 30);
  CHECK(a.gpu_count == 2);
  CHECK(a.gpu_total_ns == 70);
  CHECK(a.gpu_mean_ns() == 35);
  CHECK(a.gpu_ops == 6);
  RangeStat empty;
  empty.merge(RangeStat{});
  CHECK(empty.cpu_mean_ns() == 0);
  CHECK(empty.gpu_mean_ns() == 0);
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
  CHECK(a.total_ns == all.total_ns);
  CHECK(a.min_ns == 5);
  CHECK(a.max_ns == 30);
  TimeStat empty;
  empty.merge(TimeStat{});
  CHECK(empty.min_ns == 0);
  CHECK(empty.mean_ns() == 0);
}
