// A synthetic data-parallel job for the job-level tests (alignment, merged files, stragglers):
// every rank runs the same steps; in each, Forward (a compute kernel), Backward (CPU work of the
// rank's own length), then an NCCL all-reduce that ends on every rank when the last rank has
// arrived, plus 500 us, and a stream synchronisation until then.
//
// Times are built on one true clock. A rank's CLOCK_MONOTONIC is true - mono_base, its
// CLOCK_REALTIME true + realtime_err: a perfect alignment puts every rank on rank 0's wall clock,
// so rank r's correction is exactly realtime_err(0) - realtime_err(r).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "trace/writer.h"

namespace cutrace_test {

struct SimRank {
  int rank = 0;
  std::string host = "node-a";
  int64_t mono_base = 1'699'999'000'000'000'000;  // true - monotonic (a boot time)
  int64_t realtime_err = 0;                       // its wall clock's error
  int first_step = 0, last_step = 59;             // the steps its capture window holds
  int64_t backward_ns = 91'000;
  std::set<int> slow_steps;  // steps whose Backward takes slow_backward_ns instead
  int64_t slow_backward_ns = 0;
  bool nccl = true;
  bool step_names = true;    // step_<k> ranges around each step
  std::set<int> lost_steps;  // steps whose collective record was lost
  int step_name_offset = 0;  // it names step k "step_<k + offset>"
  bool noisy_ends = false;   // its collectives end up to +-400 us off the others' (they do not match)
};

struct SimJob {
  static constexpr int64_t kT0 = 1'700'000'000'000'000'000;
  static constexpr int64_t kForwardNs = 300'000;
  static constexpr int64_t kTransferNs = 500'000;
  int64_t period = 11'700'000;
  bool jitter = false;  // step starts vary by up to +-200 us (no two steps alike)
  std::vector<SimRank> ranks;

  // A pseudo-random value in [-n, n] for step k (no two steps' alike, no period).
  static int64_t noise(int k, int64_t n) {
    uint64_t x = uint64_t(k + 1) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return int64_t(x % uint64_t(2 * n + 1)) - n;
  }
  int64_t step_begin(int k) const {
    int64_t j = jitter ? noise(k, 200) * 1000 : 0;
    return kT0 + int64_t(k) * period + j;
  }
  int64_t arrival(int k, const SimRank& r) const {
    return step_begin(k) + 20'000 + kForwardNs + (r.slow_steps.count(k) ? r.slow_backward_ns : r.backward_ns);
  }
  int64_t collective_end(int k) const {
    int64_t last = 0;
    for (const SimRank& r : ranks) last = std::max(last, arrival(k, r));
    return last + kTransferNs;
  }

  // Writes rank i's trace into dir; returns its path.
  std::string write(const std::string& dir, size_t i) const {
    const SimRank& r = ranks[i];
    std::string path =
        dir + "/" + r.host + ".rank" + std::to_string(r.rank) + ".pid" + std::to_string(100 + r.rank) + ".cutrace";
    cutrace::TraceWriter w;
    std::string err;
    if (!w.open(path, &err)) return "";
    w.meta("host", r.host);
    w.meta("pid", std::to_string(100 + r.rank));
    w.meta("rank", std::to_string(r.rank));
    w.meta("world_size", std::to_string(ranks.size()));
    w.meta("launcher", "torchrun");
    w.meta("gpu_timing", "cupti");
    w.api_name(1, "cuLaunchKernel");
    w.api_name(2, "cuStreamSynchronize");
    auto mono = [&](int64_t t) { return t - r.mono_base; };
    auto clock = [&](int64_t t) {
      cutrace::trace::ClockSyncRec c{};
      c.monotonic_ns = mono(t);
      c.realtime_ns = t + r.realtime_err;
      w.add(c, cutrace::trace::RecType::ClockSync);
    };
    auto range = [&](const std::string& name, int64_t b, int64_t e, uint16_t depth) {
      cutrace::trace::RangeRec g{};
      g.cpu_begin = mono(b);
      g.cpu_end = mono(e);
      g.name_id = w.intern(name);
      g.tid = 1;
      g.end_tid = 1;
      g.depth = depth;
      g.kind = uint8_t(cutrace::trace::RangeKind::PushPop);
      g.source = uint8_t(cutrace::trace::RangeSource::Nvtx);
      w.add(g, cutrace::trace::RecType::Range);
    };
    uint64_t corr = 1;
    auto kernel = [&](const char* name, int64_t launch, int64_t gs, int64_t ge, uint32_t stream, uint32_t grid) {
      cutrace::trace::KernelRec k{};
      k.op.corr = corr++;
      k.op.cpu_begin = mono(launch);
      k.op.cpu_end = mono(launch) + 3000;
      k.op.gpu_start = mono(gs);
      k.op.gpu_end = mono(ge);
      k.op.tid = 1;
      k.op.stream = stream;
      k.op.api = 1;
      k.name_id = w.intern(name);
      k.grid[0] = grid, k.grid[1] = k.grid[2] = 1;
      k.block[0] = 256, k.block[1] = k.block[2] = 1;
      w.add(k, cutrace::trace::RecType::Kernel);
    };
    clock(step_begin(r.first_step) - 1'000'000);
    for (int k = r.first_step; k <= r.last_step; ++k) {
      int64_t s = step_begin(k), a = arrival(k, r), e = collective_end(k);
      kernel("gemm_fwd", s + 20'000, s + 25'000, s + 25'000 + kForwardNs, 7, 64);
      range("Forward", s + 20'000, s + 20'000 + 5'000, 1);
      range("Backward", s + 20'000 + kForwardNs, a, 1);
      if (r.nccl && !r.lost_steps.count(k))
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", a, a + 5'000,
               e + (r.noisy_ends ? noise(k + 1000, 400) * 1000 : 0), 9, 2);
      cutrace::trace::SyncRec y{};
      y.cpu_begin = mono(a + 10'000);
      y.cpu_end = mono(e + 5'000);
      y.kind = uint8_t(cutrace::trace::SyncKind::Stream);
      y.api = 2;
      y.stream = 9;
      w.add(y, cutrace::trace::RecType::Sync);
      if (r.step_names) range("step_" + std::to_string(k + r.step_name_offset), s, e + 10'000, 0);
    }
    clock(collective_end(r.last_step) + 1'000'000);
    w.close(0, cutrace::trace::kEndClean);
    return path;
  }
  std::vector<std::string> write_all(const std::string& dir) const {
    std::vector<std::string> out;
    for (size_t i = 0; i < ranks.size(); ++i) out.push_back(write(dir, i));
    return out;
  }
};

// Two ranks on two hosts as the issue found them: rank 1's window opens at step 26 (60 and 34
// collectives), host b's monotonic clock is 2.5 s ahead of host a's, its wall clock 3 ms ahead.
inline SimJob two_hosts_windows_apart() {
  SimJob j;
  SimRank a;
  SimRank b;
  b.rank = 1;
  b.host = "node-b";
  b.mono_base = a.mono_base - 2'500'000'000;
  b.realtime_err = 3'000'000;
  b.first_step = 26;
  j.ranks = {a, b};
  return j;
}

}  // namespace cutrace_test
