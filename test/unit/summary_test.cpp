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
  a.dropped(5);
  a.close(5);

  TraceBuilder b(rank0, 0, 100);
  b.kernel("relu", 70);
  b.kernel("gemm", 400);
  b.memcpy(fmt::CopyKind::DtoD, 2048, 4);
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
