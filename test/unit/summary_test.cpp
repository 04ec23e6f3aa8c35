// Summary aggregation on synthetic traces, checked against test/golden/summary_basic.json and
// against hand-computed values (totals, sampled traces, name limits, per-window tables, filters).
// Run from the repo root. CUTRACE_UPDATE_GOLDEN=1 rewrites the golden file (review the diff).
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "test/unit/summary_fixture.h"
#include "tools/analysis/name_groups.h"
#include "tools/analysis/precision.h"
#include "tools/analysis/summary_model.h"

using namespace cutrace;
using namespace summary_fixture;

namespace {

const char* const kGolden = "test/golden/summary_basic.json";

// Rank 1: closed cleanly. Rank 0: never closed (truncated), names interned in another order.
void build_traces(std::string* rank1, std::string* rank0) {
  TraceBuilder a(rank1, 1, 200);
  a.kernel("gemm", 100);
  a.kernel("gemm", 200);
  a.kernel("relu", 50);
  a.kernel("gemm", 300);
  a.kernel("relu", -1);
  a.kernel("captured", -1, trace::kOpCaptured | trace::kOpNoGpuTime);
  a.kernel("CUDA graph #1", 1000, 0, uint8_t(trace::KernelKind::Graph));
  a.kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 8000, trace::kOpInferredStart);
  a.memcpy(trace::CopyKind::HtoD, 1 << 20, 1000);
  a.memcpy(trace::CopyKind::DtoH, 4096, -1);
  a.memset(256, 10);
  a.sync(trace::SyncKind::Stream, 500);
  a.sync(trace::SyncKind::EventQuery, 20, 600);  // CUDA_ERROR_NOT_READY: not an error
  a.sync(trace::SyncKind::Context, 100, 1);
  a.api(0);
  a.api(719);
  a.alloc(3000);
  a.range("step", 1000, 600, 3);
  a.range("fwd", 400, 300, 2, nullptr, trace::RangeKind::PushPop, trace::RangeSource::Nvtx, 1);
  a.range("step", 3000, -1, 0);
  a.range("io", 5000, -1, 0, "data", trace::RangeKind::StartEnd, trace::RangeSource::Nvtx);
  a.range("bad", -10, -5, 1);  // both clocks backwards: CPU 0, no GPU projection
  a.range("step_1", 2500, 2000, 4);
  a.range("step_2", 2700, 2100, 4);
  a.mark("epoch");
  a.mark("ckpt");
  a.mark("epoch", trace::RangeSource::Nvtx);
  a.cpu_sample(1000, 9000);
  a.cpu_sample(3000, 11000);
  a.gpu_sample(0, 40, 1 << 30);
  a.gpu_sample(0, 60, 2u << 30);
  a.dropped(5);
  a.close(5);

  TraceBuilder b(rank0, 0, 100);
  b.kernel("relu", 70);
  b.kernel("gemm", 400);
  b.memcpy(trace::CopyKind::DtoD, 2048, 4);
  b.mark("epoch");
  b.range("io", 1000, -1, 0, "data", trace::RangeKind::StartEnd);  // ids interned in another order
  b.range("step", 2000, 800, 4);
  b.range("io", 700, 100, 1);  // same name, default domain: a different range name
  b.range("ProfilerStep#3", 3100, -1, 2);
  b.dropped(3);
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
  CHECK(m.memcpy_kind(size_t(trace::CopyKind::DtoH)).time.untimed == 1);
  CHECK(m.memcpy_kind(size_t(trace::CopyKind::HtoD)).timed_bytes == 1 << 20);
  CHECK(m.sync_kind(size_t(trace::SyncKind::Stream)).total_ns == 500);
  CHECK(m.sync_kind(size_t(trace::SyncKind::Stream)).max_ns == 500);
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
  const uint16_t untimed = trace::kOpNoGpuTime | trace::kOpNotSampled;
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

TEST_CASE("summary JSON matches the golden file") {
  std::string rank1, rank0;
  build_traces(&rank1, &rank0);
  std::string json = summarise(rank1, rank0).to_json().dump(2) + "\n";
  if (std::getenv("CUTRACE_UPDATE_GOLDEN")) std::ofstream(kGolden) << json;
  std::string golden = read_file(kGolden);
  REQUIRE_MESSAGE(!golden.empty(), kGolden << " missing: run the tests from the repo root");
  CHECK(json == golden);
}

TEST_CASE("per-window table: records go to the window they began in, whatever their order in the file") {
  // A packed block groups records by type, so a file's Window edges need not come before the
  // records of their window: here they are written last. (First cut of the table: every record
  // went to the last window opened in file order, window 1.)
  std::string out;
  TraceBuilder b(&out, 0, 1);
  b.range("step_1", 5000, -1, 0);                  // cpu_begin 1,010,000
  b.kernel_at("k", 1100010, 1100100, 1100200, 1);  // cpu_begin 1,100,000, 100 ns
  b.kernel_at("k", 1200010, 1200100, 1200200, 1);
  b.skip_to(2000000);
  b.range("step_2", 7000, -1, 0);                  // cpu_begin 2,010,000
  b.kernel_at("k", 2500010, 2500100, 2500400, 1);  // 300 ns
  b.kernel_at("k", 2600010, 0, 0, 1);              // untimed: counted, no time
  b.window(0, trace::WindowEdge::Begin, 1000000);
  b.window(0, trace::WindowEdge::End, 1600000);
  b.window(1, trace::WindowEdge::Begin, 2000000);
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
  b.window(0, trace::WindowEdge::Begin, 1000000);
  for (int s = 0; s < 10; ++s) {
    b.range(("step_" + std::to_string(s)).c_str(), 5000 + s, -1, 0);
    for (int k = 0; k < 4; ++k) b.kernel("k", 100);
  }
  b.window(0, trace::WindowEdge::End, 9000000);
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
    b.window(0, trace::WindowEdge::Begin, o + 590);
    b.sync_at(trace::SyncKind::Context, o - 500, o - 100);
    b.kernel_at("k", o + 0, o + 100, o + 300, 1);  // cpu_begin o - 10
    b.memcpy_at(trace::CopyKind::HtoD, 8, o + 550, o + 600, o + 700, 1);
    b.kernel_at("k", o + 650, o + 800, o + 1000, 1);  // cpu_begin o + 640
    b.sync_at(trace::SyncKind::Context, o + 700, o + 1000);
    b.kernel_at("k", o + 1150, o + 1100, o + 1200, 1);  // cpu_begin o + 1140
    b.memset_at(8, o + 900, o + 950, o + 1100, 2);      // cpu_begin o + 890
    b.window(0, trace::WindowEdge::End, o + 1000);
    b.sync_at(trace::SyncKind::Context, o + 1300, o + 2500);
    b.sync_at(trace::SyncKind::Stream, o + 1300, o + 2600);
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
  sync.step_sync = uint8_t(trace::SyncKind::Context);
  j = run(sync);
  CHECK(j["steps"]["source"] == "sync:context");
  CHECK(j["steps"]["count"] == 4);
  CHECK(j["steps"]["cpu"]["min_ns"] == 1100);
  CHECK(j["steps"]["cpu"]["max_ns"] == 1500);
  CHECK(j["steps"]["gpu"]["count"] == 4);
  CHECK(j["steps"]["gpu"]["min_ns"] == 100);                  // the third k alone: [o+1100, o+1200)
  CHECK(j["steps"]["gpu"]["max_ns"] == 1000);                 // [o+100, o+1100): first k .. the memset
  CHECK(j["ranks"][0]["windows"][0]["steps"]["count"] == 2);  // by their ends, both after o + 590
}
