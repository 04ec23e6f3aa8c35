// `cutrace diff`'s comparison model (tools/analysis/diff.h) on synthetic traces whose differences
// are known: one kernel 2x slower, one only in B, one only in A, one renamed between builds (tile
// sizes), more steps in B, a longer range.
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "test/unit/summary_fixture.h"
#include "test/unit/temp_dir.h"
#include "tools/analysis/diff.h"

namespace {

using namespace cutrace;
using summary_fixture::TraceBuilder;

struct RunShape {
  int steps;
  int64_t slow_ns;   // k_slow's GPU time
  const char* gemm;  // the cuBLAS-like kernel's name in this build
  bool gone, fresh;  // k_gone (A's) and k_new (B's) launched
  int64_t load_ns;   // data_load's CPU time
  int64_t step_ns;   // each step's CPU time
};

// Steps step_0.. of step_ns each, holding the kernels, a copy and data_load; then a sync.
std::string run_trace(const RunShape& r) {
  std::string bytes;
  TraceBuilder b(&bytes, 0, 100);
  int64_t t = 10'000'000;
  for (int i = 0; i < r.steps; ++i) {
    b.skip_to(t);
    std::string name = "step_" + std::to_string(i);
    b.range(name.c_str(), r.step_ns, r.step_ns / 2, 4);  // begins at t + 10 us
    b.kernel("k_slow", r.slow_ns);
    b.kernel("k_same", 50'000);
    b.kernel(r.gemm, 20'000);
    if (r.gone) b.kernel("k_gone", 10'000);
    if (r.fresh) b.kernel("k_new", 30'000);
    b.memcpy(trace::CopyKind::HtoD, 1000, 3'000);
    b.range("data_load", r.load_ns, -1, 0);
    b.sync(trace::SyncKind::Stream, 2'000);
    t += r.step_ns + 100'000;
  }
  b.close(0);
  return bytes;
}

const RunShape kA{4, 100'000, "ampere_sgemm_128x64_nn", true, false, 100'000, 1'000'000};
const RunShape kB{8, 200'000, "ampere_sgemm_256x128_nn", false, true, 300'000, 2'000'000};

const KernelDiff* row(const Diff& d, const std::string& name) {
  for (const KernelDiff& k : d.kernels)
    if (k.name == name) return &k;
  return nullptr;
}

const RangeDiff* range_row(const Diff& d, const std::string& name) {
  for (const RangeDiff& r : d.ranges)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("normalise_kernel_name strips template arguments, parameters and tile sizes") {
  CHECK(normalise_kernel_name("void gemm<float, 128, 64>(float*, int)") == "void gemm");
  CHECK(normalise_kernel_name("void a::b<c<d, 2>, 3>::k<4>(x<y>)") == "void a::b::k");
  CHECK(normalise_kernel_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_*_nn");
  CHECK(normalise_kernel_name("ampere_sgemm_256x128_nn") == "ampere_sgemm_*_nn");
  CHECK(normalise_kernel_name("sm80_xmma_gemm_f16f16_f32_tn_n_tilesize128x128x32_stage3_warpsize2x2x1_kernel") ==
        "sm80_xmma_gemm_f16f16_f32_tn_n_tilesize*_stage3_warpsize*_kernel");
  CHECK(normalise_kernel_name("cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4") ==
        "cutlass_*_tensorop_s1688gemm_*_*_nn_align4");
  CHECK(normalise_kernel_name("kernel_12") == "kernel_*");
  // Digits that name the architecture or the precision stay, so do names without numbers.
  CHECK(normalise_kernel_name("sm90_fp8_kernel") == "sm90_fp8_kernel");
  CHECK(normalise_kernel_name("k_same") == "k_same");
  CHECK(normalise_kernel_name("(anonymous namespace)::k") == "(anonymous namespace)::k");
  CHECK(normalise_kernel_name("") == "");
}

TEST_CASE("parse_step_pick reads FIRST-LAST, N and FIRST-") {
  StepPick p;
  REQUIRE(parse_step_pick("3-10", &p));
  CHECK(p.first == 3);
  CHECK(p.last == 10);
  REQUIRE(parse_step_pick("5", &p));
  CHECK((p.first == 5 && p.last == 5));
  REQUIRE(parse_step_pick("2-", &p));
  CHECK((p.first == 2 && p.last == UINT64_MAX));
  for (const char* bad : {"", "-3", "a-b", "5-3", "1-2-3", "1 -2"}) CHECK_FALSE(parse_step_pick(bad, &p));
}

TEST_CASE("diff of two runs reports the known changes per step") {
  std::string a = run_trace(kA), b = run_trace(kB);
  SummaryModel ma = summary_fixture::summarise({{&a, "a.cutrace"}});
  SummaryModel mb = summary_fixture::summarise({{&b, "b.cutrace"}});
  Diff d = compare(ma, mb);
  REQUIRE(d.per_step);
  CHECK(d.a.steps == 4);
  CHECK(d.b.steps == 8);

  // Step time: 1 ms -> 2 ms, every step alike (IQR 0): beyond the spread.
  CHECK(d.cpu.a.median == 1'000'000);
  CHECK(d.cpu.b.median == 2'000'000);
  CHECK(d.cpu.median_change == 1'000'000);
  CHECK(d.cpu.ratio == doctest::Approx(2.0));
  CHECK(d.cpu.beyond_spread);
  CHECK(d.gpu.median_change == 500'000);

  const KernelDiff* slow = row(d, "k_slow");
  REQUIRE(slow);
  CHECK(slow->match == KernelMatch::Exact);
  CHECK(slow->a.count == 4);
  CHECK(slow->b.count == 8);
  CHECK(slow->a.per_step_ns == doctest::Approx(100'000));
  CHECK(slow->b.per_step_ns == doctest::Approx(200'000));
  CHECK(slow->change_ns == doctest::Approx(100'000));
  CHECK(slow->ratio == doctest::Approx(2.0));
  const KernelDiff* fresh = row(d, "k_new");
  REQUIRE(fresh);
  CHECK(fresh->match == KernelMatch::OnlyB);
  CHECK(fresh->a.names.empty());
  CHECK(fresh->change_ns == doctest::Approx(30'000));
  const KernelDiff* gone = row(d, "k_gone");
  REQUIRE(gone);
  CHECK(gone->match == KernelMatch::OnlyA);
  CHECK(gone->change_ns == doctest::Approx(-10'000));
  const KernelDiff* gemm = row(d, "ampere_sgemm_*_nn");
  REQUIRE(gemm);
  CHECK(gemm->match == KernelMatch::Normalised);
  CHECK(gemm->a.names == std::vector<std::string>{"ampere_sgemm_128x64_nn"});
  CHECK(gemm->b.names == std::vector<std::string>{"ampere_sgemm_256x128_nn"});
  CHECK(gemm->change_ns == doctest::Approx(0));
  const KernelDiff* same = row(d, "k_same");
  REQUIRE(same);
  CHECK(same->change_ns == doctest::Approx(0));
  // Sorted by contribution: +100 us, +30 us, -10 us, then the unchanged by name.
  REQUIRE(d.kernels.size() == 5);
  CHECK(d.kernels[0].name == "k_slow");
  CHECK(d.kernels[1].name == "k_new");
  CHECK(d.kernels[2].name == "k_gone");
  CHECK(d.kernels[3].name == "ampere_sgemm_*_nn");
  CHECK(d.kernel_change_ns == doctest::Approx(120'000));

  // Ranges: step_0..step_7 share a row; data_load 100 us -> 300 us per step.
  const RangeDiff* steps = range_row(d, "step_*");
  REQUIRE(steps);
  CHECK(steps->names_a == 4);
  CHECK(steps->names_b == 8);
  CHECK(steps->cpu_change_ns == doctest::Approx(1'000'000));
  const RangeDiff* load = range_row(d, "data_load");
  REQUIRE(load);
  CHECK(load->count_a == 4);
  CHECK(load->count_b == 8);
  CHECK(load->cpu_mean_b == 300'000);
  CHECK(load->cpu_median_a == 100'000);
  CHECK(load->cpu_median_b == 300'000);
  CHECK(load->cpu_change_ns == doctest::Approx(200'000));

  // Copies and syncs: the same per step.
  REQUIRE(d.copies.size() == 1);
  CHECK(d.copies[0].name == "memcpy HtoD");
  CHECK(d.copies[0].count_b == 8);
  CHECK(d.copies[0].bytes_b == 8000);
  CHECK(d.copies[0].change_ns == doctest::Approx(0));
  REQUIRE(d.syncs.size() == 1);
  CHECK(d.syncs[0].name == std::string("stream"));
  CHECK(d.syncs[0].change_ns == doctest::Approx(0));

  nlohmann::ordered_json j = diff_json(d, DiffSide{}, DiffSide{});
  CHECK(j["kernels"]["rows"][0]["name"] == "k_slow");
  CHECK(j["kernels"]["rows"][0]["ratio"].get<double>() == doctest::Approx(2.0));
  CHECK(j["kernels"]["rows"][1]["match"] == "only_b");
  CHECK(j["kernels"]["rows"][1]["a"].is_null());
  CHECK(j["steps"]["cpu"]["beyond_spread"] == true);
  CHECK(j["a"]["steps"] == 4);
}

TEST_CASE("diff of a run with itself shows no change") {
  std::string a = run_trace(kA);
  SummaryModel m1 = summary_fixture::summarise({{&a, "a.cutrace"}});
  SummaryModel m2 = summary_fixture::summarise({{&a, "a.cutrace"}});
  Diff d = compare(m1, m2);
  CHECK(d.cpu.median_change == 0);
  CHECK_FALSE(d.cpu.beyond_spread);
  CHECK_FALSE(d.gpu.beyond_spread);
  CHECK(d.kernel_change_ns == 0);
  for (const KernelDiff& k : d.kernels) {
    CHECK(k.match == KernelMatch::Exact);
    CHECK(k.change_ns == 0);
  }
  for (const RangeDiff& r : d.ranges) CHECK(r.cpu_change_ns == 0);
  for (const auto* v : {&d.copies, &d.syncs, &d.apis})
    for (const CountDiff& c : *v) CHECK(c.change_ns == 0);
}

TEST_CASE("a step change within the runs' own spread is not beyond it") {
  // Steps of 1.0, 1.4, 1.8, 2.2 ms (IQR 0.8 ms) against the same plus 0.2 ms: change 0.2 ms.
  auto make = [](int64_t extra) {
    std::string bytes;
    TraceBuilder b(&bytes, 0, 100);
    for (int i = 0; i < 4; ++i) {
      b.skip_to(10'000'000 + i * 5'000'000);
      b.range(("step_" + std::to_string(i)).c_str(), 1'000'000 + i * 400'000 + extra, -1, 0);
    }
    b.close(0);
    return bytes;
  };
  std::string a = make(0), b = make(200'000), c = make(2'000'000);
  SummaryModel ma = summary_fixture::summarise({{&a, "a.cutrace"}});
  SummaryModel mb = summary_fixture::summarise({{&b, "b.cutrace"}});
  SummaryModel mc = summary_fixture::summarise({{&c, "c.cutrace"}});
  Diff near = compare(ma, mb);
  CHECK(near.cpu.median_change == 200'000);
  CHECK(near.cpu.a.iqr() == 800'000);
  CHECK_FALSE(near.cpu.beyond_spread);
  Diff far = compare(ma, mc);
  CHECK(far.cpu.median_change == 2'000'000);
  CHECK(far.cpu.beyond_spread);
}

TEST_CASE("diff --steps limits each side to the picked steps") {
  cutrace_test::TempDir dir("cutrace_diff");
  std::string path = dir.path + "/b.cutrace";
  {
    std::string bytes = run_trace(kB);
    std::ofstream(path, std::ios::binary) << bytes;
  }
  DiffSide all = load_diff_side(path, SummaryOptions{}, std::nullopt);
  REQUIRE(all.ok);
  CHECK(all.model->steps().cpu.n == 8);
  DiffSide some = load_diff_side(path, SummaryOptions{}, StepPick{2, 4});
  REQUIRE(some.ok);
  CHECK(some.model->steps().cpu.n == 3);
  uint64_t slow = 0;
  for (const KernelStat& k : some.model->kernels())
    if (k.name == "k_slow") slow = k.time.count;
  CHECK(slow == 3);
  DiffSide none = load_diff_side(path, SummaryOptions{}, StepPick{8, 9});
  CHECK_FALSE(none.ok);
  CHECK(none.note.find("no file has so many steps (8 at most)") != std::string::npos);
}

TEST_CASE("diff sides: --rank keeps one rank of a job; --steps over several hosts needs one") {
  cutrace_test::TempDir dir("cutrace_diff_job");
  for (int rank : {0, 1}) {
    std::string bytes;
    TraceBuilder b(&bytes, rank, 100 + rank);  // rank 0 on node-a, rank 1 on node-b
    b.range("step_0", 1'000'000, -1, 0);
    b.kernel(rank == 0 ? "k_rank0" : "k_rank1", 10'000);
    b.close(0);
    std::ofstream(dir.path + "/r" + std::to_string(rank) + ".cutrace", std::ios::binary) << bytes;
  }
  SummaryOptions one;
  one.rank = 1;
  DiffSide side = load_diff_side(dir.path, one, std::nullopt);
  REQUIRE(side.ok);
  std::vector<KernelStat> ks = side.model->kernels();
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].name == "k_rank1");
  DiffSide both = load_diff_side(dir.path, SummaryOptions{}, StepPick{0, 0});
  CHECK_FALSE(both.ok);
  CHECK(both.note.find("several hosts") != std::string::npos);
  DiffSide picked = load_diff_side(dir.path, one, StepPick{0, 0});
  REQUIRE(picked.ok);
  CHECK(picked.model->steps().cpu.n == 1);
}
