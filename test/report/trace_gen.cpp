// Writes a synthetic multi-rank job for the report's browser tests and its frame-time benchmark
// (bench/report_fps.sh):
//   report_trace_gen OUTDIR RANKS STEPS KERNELS_PER_STEP [STRAGGLER]
// Per rank: one file OUTDIR/node-<rank/2>.rank<r>.pid<p>.cutrace with steps (NVTX ranges
// "step_<n>", nested "forward" and "backward"), kernel launches (compute kernels on stream 1, one
// NCCL kernel per step on stream 2, one named "<img src=x onerror=alert(1)>" per step: the page
// must show it as text), a copy and a set per step, a stream synchronisation per step, device
// allocations, and CPU and GPU samples every 5 ms. Times are deterministic (no randomness).
// With STRAGGLER (a rank), the ranks keep one schedule as a data-parallel job does: step s
// starts at the same time on every rank (1.001 s + 4 ms x s), rank STRAGGLER's backward takes
// 1.5 ms more CPU time, and every rank's NCCL kernel ends 300 us before the next step: the
// others wait for the straggler in it.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trace/writer.h"

using namespace cutrace;

namespace {

enum Api : uint16_t { kLaunch = 1, kCopy = 2, kSet = 3, kSync = 4, kAlloc = 5 };

struct Gen {
  TraceWriter w;
  int64_t t = 1'000'000'000;  // host clock, ns
  int64_t gpu_free[3] = {0, 0, 0};
  uint64_t corr = 0;
  uint32_t tid = 0;

  void op(trace::OpCommon& o, uint32_t stream, int64_t gpu_ns) {
    o.corr = ++corr;
    o.cpu_begin = t;
    o.cpu_end = t + 3000;
    t += 3500;
    o.gpu_start = std::max(o.cpu_end + 2000, gpu_free[stream]);
    o.gpu_end = o.gpu_start + gpu_ns;
    gpu_free[stream] = o.gpu_end + 500;
    o.tid = tid;
    o.stream = stream;
  }
  // gpu_end > 0: the kernel ends then (a collective that ends when the last rank arrives).
  void kernel(uint32_t name, uint32_t stream, int64_t gpu_ns, int64_t gpu_end = 0) {
    trace::KernelRec k{};
    op(k.op, stream, gpu_ns);
    if (gpu_end > k.op.gpu_start) k.op.gpu_end = gpu_end, gpu_free[stream] = gpu_end + 500;
    k.op.api = kLaunch;
    k.name_id = name;
    k.grid[0] = 1024, k.grid[1] = k.grid[2] = 1;
    k.block[0] = 256, k.block[1] = k.block[2] = 1;
    k.regs = 64;
    w.add(k, trace::RecType::Kernel);
  }
  void range(uint32_t name, int64_t b, int64_t e, uint16_t depth) {
    trace::RangeRec r{};
    r.cpu_begin = b;
    r.cpu_end = e;
    r.tid = r.end_tid = tid;
    r.name_id = name;
    r.depth = depth;
    r.kind = uint8_t(trace::RangeKind::PushPop);
    r.source = uint8_t(trace::RangeSource::Nvtx);
    w.add(r, trace::RecType::Range);
  }
};

int write_rank(const std::string& dir, int rank, int ranks, int steps, int kernels, int straggler) {
  constexpr int64_t kScheduleBase = 1'001'000'000, kPeriod = 4'000'000;
  int pid = 1000 + rank;
  std::string host = "node-" + std::to_string(rank / 2);
  std::string path = dir + "/" + host + ".rank" + std::to_string(rank) + ".pid" + std::to_string(pid) + ".cutrace";
  unlink(path.c_str());
  Gen g;
  g.tid = uint32_t(pid);
  std::string err;
  if (!g.w.open(path, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  TraceWriter& w = g.w;
  w.meta("host", host);
  w.meta("pid", std::to_string(pid));
  w.meta("rank", std::to_string(rank));
  w.meta("world_size", std::to_string(ranks));
  w.meta("cmdline", "python train.py --model gpt --synthetic");
  w.api_name(kLaunch, "cuLaunchKernel");
  w.api_name(kCopy, "cuMemcpyHtoDAsync_v2");
  w.api_name(kSet, "cuMemsetD8Async");
  w.api_name(kSync, "cuStreamSynchronize");
  w.api_name(kAlloc, "cuMemAlloc_v2");
  trace::ThreadRec th{};
  th.tid = g.tid;
  th.name_id = w.intern("python");
  w.add(th, trace::RecType::Thread);
  trace::DeviceRec d{};
  d.device = 0;
  d.name_id = w.intern("NVIDIA H200");
  d.cc_major = 9;
  d.sm_count = 132;
  d.total_mem = 141ull << 30;
  w.add(d, trace::RecType::Device);
  for (uint32_t s = 1; s <= 2; ++s) {
    trace::StreamRec sr{};
    sr.stream = s;
    sr.handle = 0x1000 + s;
    w.add(sr, trace::RecType::Stream);
  }
  const char* names[] = {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn",
                         "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
                         "flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false, cutlass::half_t>>",
                         "void at::native::reduce_kernel<512, 1>",
                         "layer_norm_fwd_kernel_fp32",
                         "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64"};
  std::vector<uint32_t> ids;
  for (const char* n : names) ids.push_back(w.intern(n));
  uint32_t evil = w.intern("<img src=x onerror=alert(1)>");
  uint32_t nccl = w.intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  uint32_t fwd = w.intern("forward"), bwd = w.intern("backward");

  for (int i = 0; i < 4; ++i) {  // 4 allocations of 256 MiB
    trace::MemoryRec m{};
    m.cpu_begin = g.t;
    m.cpu_end = g.t += 20000;
    m.address = 0x7f0000000000ull + uint64_t(i) * (256ull << 20);
    m.bytes = 256ull << 20;
    m.tid = g.tid;
    m.api = kAlloc;
    m.op = uint8_t(trace::MemOp::Alloc);
    m.mem_kind = uint8_t(trace::MemKind::Device);
    w.add(m, trace::RecType::Memory);
  }
  int64_t next_sample = g.t;
  for (int s = 0; s < steps; ++s) {
    if (straggler >= 0) g.t = std::max(g.t, kScheduleBase + s * kPeriod);
    int64_t step_begin = g.t;
    g.t += 2000 + (rank * 500);
    int64_t half = g.t;
    for (int k = 0; k < kernels; ++k) {
      if (k == kernels / 2) {
        g.range(fwd, half, g.t, 1);
        half = g.t;
      }
      uint32_t name = k == 1 ? evil : ids[size_t((k * 7 + s) % ids.size())];
      g.kernel(name, 1, 3000 + int((k * 7 + s) % ids.size()) * 4000 + (k % 11) * 1000 + rank * 200);
    }
    if (rank == straggler) g.t += 1'500'000;
    g.range(bwd, half, g.t, 1);
    g.kernel(nccl, 2, 60000, straggler >= 0 ? kScheduleBase + s * kPeriod + kPeriod - 300'000 : 0);
    trace::MemcpyRec c{};
    g.op(c.op, 1, 8000);
    c.op.api = kCopy;
    c.op.flags = trace::kOpAsync;
    c.bytes = 4 << 20;
    c.copy_kind = uint8_t(trace::CopyKind::HtoD);
    c.src_kind = uint8_t(trace::MemKind::Pinned);
    c.dst_kind = uint8_t(trace::MemKind::Device);
    w.add(c, trace::RecType::Memcpy);
    trace::MemsetRec m{};
    g.op(m.op, 1, 2000);
    m.op.api = kSet;
    m.bytes = 1 << 20;
    m.element_size = 1;
    w.add(m, trace::RecType::Memset);
    trace::SyncRec sy{};
    sy.cpu_begin = g.t;
    sy.cpu_end = std::max(g.gpu_free[1], g.gpu_free[2]) + 1000;
    sy.tid = g.tid;
    sy.stream = 1;
    sy.api = kSync;
    sy.kind = uint8_t(trace::SyncKind::Stream);
    sy.corr = ++g.corr;
    w.add(sy, trace::RecType::Sync);
    g.t = sy.cpu_end + 5000;
    g.range(w.intern("step_" + std::to_string(s)), step_begin, g.t, 0);
    for (; next_sample < g.t; next_sample += 5'000'000) {
      trace::CpuSampleRec cs{};
      cs.h.type = uint16_t(trace::RecType::CpuSample);
      cs.ts = next_sample;
      cs.ncores = 2;
      cs.total_util = uint16_t(3000 + (next_sample / 5'000'000 % 7) * 500);
      cs.process_util = 9000;
      uint16_t cores[2] = {5000, 4000};
      w.append_var(&cs, sizeof cs, cores, sizeof cores);
      trace::GpuSampleRec gs{};
      gs.ts = next_sample;
      gs.util = uint16_t(60 + (next_sample / 5'000'000 % 5) * 8);
      gs.mem_used = (1ull << 30) + uint64_t(next_sample / 5'000'000 % 9) * (64ull << 20);
      gs.mem_total = 141ull << 30;
      gs.power_mw = 500000;
      w.add(gs, trace::RecType::GpuSample);
    }
  }
  if (!w.close(0, trace::kEndClean)) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), w.error().c_str());
    return 1;
  }
  std::printf("%s\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: %s OUTDIR RANKS STEPS KERNELS_PER_STEP [STRAGGLER]\n", argv[0]);
    return 2;
  }
  int ranks = std::atoi(argv[2]), steps = std::atoi(argv[3]), kernels = std::atoi(argv[4]);
  if (ranks < 1 || steps < 1 || kernels < 2) {
    std::fprintf(stderr, "ranks >= 1, steps >= 1, kernels >= 2\n");
    return 2;
  }
  for (int r = 0; r < ranks; ++r)
    if (int rc = write_rank(argv[1], r, ranks, steps, kernels, argc == 6 ? std::atoi(argv[5]) : -1)) return rc;
  return 0;
}
