// The temporal breakdown (docs/SUMMARY.md) of hand-built timelines and of trace records, and the
// step histogram with its per-rank comparison.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test/unit/summary_fixture.h"
#include "tools/analysis/breakdown.h"
#include "tools/analysis/summary_model.h"

using namespace cutrace;
using namespace summary_fixture;

namespace {

// The hand-built timeline of docs/SUMMARY.md, ns (the GPU starts at 100):
//   K1 compute [100,300) ready 0        C1 comm [200,500) ready 50
//   idle [500,600): M1 copy [600,700) ready 550 > 500: host wait
//   idle [700,800): K2 compute [800,1000) ready 650 <= 700: kernel wait
//   S1 set [950,1100) ready 900         K3 compute [1100,1200) ready 1150
std::vector<GpuInterval> hand_built() {
  return {{100, 300, 0, GpuWork::Compute},      {600, 700, 550, GpuWork::Memcpy}, {800, 1000, 650, GpuWork::Compute},
          {1100, 1200, 1150, GpuWork::Compute}, {200, 500, 50, GpuWork::Comm},    {950, 1100, 900, GpuWork::Memset}};
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
  for (size_t i = 0; i + 12 <= many.size(); i += 12)
    std::shuffle(many.begin() + long(i), many.begin() + long(i + 12), rng);
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
  b.memcpy_at(trace::CopyKind::HtoD, 1000, o + 550, o + 600, o + 700, 1);
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
