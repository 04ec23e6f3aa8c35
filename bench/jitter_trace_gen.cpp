// Writes a kernel-heavy trace with GPU-like jitter, for bench/trace_size.sh: the fake driver's
// timings are more regular than a GPU's, so this is the harder case for the packed encoding.
//   - 50 kernel names (some launched with two configurations), in a fixed per-step order like a
//     model's forward/backward, spread over S streams (2..6; stream 1 gets most of them);
//   - one launching thread: calls take 2-5 us, the next launch follows 4-8 us later (uniform);
//   - GPU durations log-uniform in 3-300 us, drawn independently for every launch;
//   - start: "end" timing (the default): inferred as max(previous end on the stream, cpu_end),
//     as the collector does; "exact": measured, i.e. that plus a random 0.5-3 us gap;
//   - an event record every 10 launches, a stream wait every 50, a sync and 4 allocations a step;
//   - operation records in GPU completion order per stream, streams interleaved (collector order).
//
//   g++ -O2 -std=c++17 -I. bench/jitter_trace_gen.cpp build/lib/libcutrace_format.a \
//       /usr/lib/x86_64-linux-gnu/liblz4.a -o /tmp/jitter_trace_gen
//   /tmp/jitter_trace_gen OUT.cutrace [kernels=1000000] [streams=4] [end|exact] [v2|v1]
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "trace/writer.h"

using namespace cutrace;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.cutrace [kernels] [streams 2..6] [end|exact] [v2|v1]\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  uint64_t want = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  uint32_t nstreams = std::clamp<uint32_t>(argc > 3 ? uint32_t(std::atoi(argv[3])) : 4, 2, 6);
  bool exact = argc > 4 && !std::strcmp(argv[4], "exact");
  bool v1 = argc > 5 && !std::strcmp(argv[5], "v1");
  unlink(path.c_str());
  TraceWriter w;
  if (v1) w.write_v1();
  std::string err;
  if (!w.open(path, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  w.meta("host", "jitter");
  w.meta("pid", "1");
  w.meta("gpu_timing", exact ? "exact" : "end");
  const char* apis[] = {"cuLaunchKernel",      "cuEventRecord", "cuStreamWaitEvent",
                        "cuStreamSynchronize", "cuMemAlloc",    "cuMemFree"};
  for (uint16_t i = 0; i < 6; ++i) w.api_name(i + 1, apis[i]);

  std::mt19937_64 rng(1234);
  auto uni = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint64_t(hi - lo + 1)); };
  struct Kind {
    uint32_t name;
    uint32_t grid, block, smem;
    uint16_t regs;
    uint32_t stream;
  };
  std::vector<Kind> kinds;
  const char* stems[] = {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
                         "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl",
                         "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float",
                         "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps",
                         "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t"};
  for (int k = 0; k < 50; ++k) {
    Kind kd;
    kd.name = w.intern(std::string(stems[k % 5]) + "_" + std::to_string(k) + ">(...)");
    kd.grid = uint32_t(uni(1, 4096));
    kd.block = uint32_t(32 << uni(0, 5));
    kd.smem = uint32_t(uni(0, 3)) * 16384;
    kd.regs = uint16_t(uni(16, 255));
    kd.stream = k % 10 == 9 ? 2 + uint32_t(k / 10) % (nstreams - 1) : 1;  // comms/copies elsewhere
    kinds.push_back(kd);
  }
  std::vector<int> step_order;  // a model's kernel sequence: 300 launches a step
  for (int i = 0; i < 300; ++i) step_order.push_back(int(rng() % kinds.size()));

  int64_t cpu = 1000000000;
  std::vector<int64_t> free_at(nstreams + 1, cpu);
  uint64_t corr = 0, kernels = 0;
  struct Pending {
    int64_t end;
    trace::KernelRec k;
  };
  std::vector<Pending> pending;
  auto flush = [&](int64_t upto) {
    std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.end < b.end; });
    size_t n = 0;
    while (n < pending.size() && pending[n].end <= upto) w.add(pending[n++].k, trace::RecType::Kernel);
    pending.erase(pending.begin(), pending.begin() + long(n));
  };
  auto api = [&](uint16_t id, uint32_t stream, uint64_t arg) {
    trace::ApiRec a{};
    a.cpu_begin = cpu;
    a.cpu_end = cpu += uni(800, 2000);
    a.corr = ++corr;
    a.arg = arg;
    a.tid = 4242;
    a.stream = stream;
    a.api = id;
    w.add(a, trace::RecType::Api);
    cpu += uni(500, 1500);
  };
  const double lo = std::log(3000.0), hi = std::log(300000.0);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  while (kernels < want) {
    for (size_t i = 0; i < step_order.size() && kernels < want; ++i) {
      const Kind& kd = kinds[size_t(step_order[i])];
      trace::KernelRec k{};
      k.op.corr = ++corr;
      k.op.cpu_begin = cpu;
      k.op.cpu_end = cpu + uni(2000, 5000);
      int64_t dur = int64_t(std::exp(lo + (hi - lo) * u01(rng)));
      int64_t start = std::max(free_at[kd.stream], k.op.cpu_end);
      if (exact) start += uni(500, 3000);
      k.op.gpu_start = start;
      k.op.gpu_end = free_at[kd.stream] = start + dur;
      k.op.tid = 4242;
      k.op.stream = kd.stream;
      k.op.api = 1;
      k.op.flags = exact ? 0 : trace::kOpInferredStart;
      k.name_id = kd.name;
      k.grid[0] = kd.grid + (i % 7 == 0 && (kernels / 300) % 2 ? 1 : 0);  // a second config
      k.grid[1] = k.grid[2] = 1;
      k.block[0] = kd.block;
      k.block[1] = k.block[2] = 1;
      k.dyn_smem = kd.smem;
      k.regs = kd.regs;
      pending.push_back({k.op.gpu_end, k});
      ++kernels;
      cpu = k.op.cpu_begin + uni(4000, 8000);
      if (i % 10 == 9) api(2, kd.stream, 0x7f3a00001000ull + (i % 4) * 0x40);
      if (i % 50 == 49) api(3, 1 + (kd.stream % nstreams), 0x7f3a00001000ull + (i % 4) * 0x40);
      if (i % 20 == 19) flush(cpu - 500000);  // what finished a while ago has been written
    }
    for (int a = 0; a < 4; ++a) {  // allocator churn
      trace::MemoryRec m{};
      m.cpu_begin = cpu;
      m.cpu_end = cpu += uni(3000, 8000);
      m.address = 0x7f0000000000ull + uint64_t(uni(0, 255)) * 0x200000;
      m.bytes = a % 2 ? 0 : uint64_t(1) << uni(12, 26);
      m.tid = 4242;
      m.api = 5 + (a % 2);
      m.op = uint8_t(a % 2 ? trace::MemOp::Free : trace::MemOp::Alloc);
      m.mem_kind = uint8_t(trace::MemKind::Device);
      w.add(m, trace::RecType::Memory);
    }
    trace::SyncRec s{};  // loss.item()
    s.cpu_begin = cpu;
    s.cpu_end = cpu = *std::max_element(free_at.begin(), free_at.end()) + uni(2000, 6000);
    s.tid = 4242;
    s.stream = 1;
    s.api = 4;
    s.kind = uint8_t(trace::SyncKind::Stream);
    s.corr = ++corr;
    w.add(s, trace::RecType::Sync);
    flush(cpu);
  }
  flush(std::numeric_limits<int64_t>::max());
  if (!w.close(0, trace::kEndClean)) {
    std::fprintf(stderr, "%s\n", w.error().c_str());
    return 1;
  }
  std::printf("%s: %llu kernels, %llu records, %llu bytes, %.2f B/kernel\n", path.c_str(), (unsigned long long)kernels,
              (unsigned long long)w.records(), (unsigned long long)w.bytes_written(),
              double(w.bytes_written()) / double(kernels));
  return 0;
}
