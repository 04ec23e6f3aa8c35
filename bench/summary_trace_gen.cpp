// Writes a synthetic trace shaped like a data-parallel training job, for bench/summary_speed.sh:
// steps of ~1,500 kernel launches from 120 names on a compute stream, NCCL kernels on a second
// stream overlapping them, copies on a third, memsets, event records and stream waits, a
// synchronisation per step, allocations, NVTX ranges (step_<n> and per-layer), CPU and GPU
// samples every 100 ms. Records are written in GPU completion order per stream with the streams
// interleaved, as the collector does. Timestamps advance like a real run (launches every
// few us, kernels of 2-200 us), so the file compresses like a real trace (~30 bytes a record).
//
//   g++ -O2 -std=c++17 -I. bench/summary_trace_gen.cpp build/lib/libcutrace_format.a
//       /usr/lib/x86_64-linux-gnu/liblz4.a -o /tmp/summary_trace_gen
//   /tmp/summary_trace_gen OUT.cutrace [records] [v2|v1]     (v1: format 1.1, unpacked)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "trace/writer.h"

using namespace cutrace;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.cutrace [records (default 10000000)]\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  uint64_t want = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10000000;
  unlink(path.c_str());
  TraceWriter w;
  if (argc > 3 && std::string(argv[3]) == "v1") w.write_v1();
  std::string err;
  if (!w.open(path, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  w.meta("host", "bench");
  w.meta("pid", "1");
  w.meta("rank", "0");
  w.meta("world_size", "1");
  w.meta("gpu_timing", "cupti");
  const char* apis[] = {"cuLaunchKernel", "cuLaunchKernelEx",  "cuMemcpyHtoDAsync",   "cuMemsetD8Async",
                        "cuEventRecord",  "cuStreamWaitEvent", "cuStreamSynchronize", "cuEventQuery",
                        "cuMemAlloc",     "cuMemFree"};
  for (uint16_t i = 0; i < 10; ++i) w.api_name(i + 1, apis[i]);
  trace::DeviceRec dev{};
  dev.name_id = w.intern("NVIDIA H200");
  dev.cc_major = 9;
  dev.sm_count = 132;
  w.add(dev, trace::RecType::Device);
  std::vector<uint32_t> names;
  const char* types[] = {"float", "c10::BFloat16", "c10::Half", "float"};
  for (int k = 0; k < 120; ++k) {
    names.push_back(w.intern("void at::native::vectorized_elementwise_kernel<4, at::native::op_" + std::to_string(k) +
                             "<" + types[k % 4] + ">, std::array<char*, 3ul> >(int)"));
  }
  uint32_t nccl = w.intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  std::vector<uint32_t> layers;
  for (int l = 0; l < 12; ++l) layers.push_back(w.intern("layer_" + std::to_string(l)));

  std::mt19937 rng(42);
  auto jitter = [&](int64_t base, int64_t spread) { return base + int64_t(rng() % uint32_t(spread)); };
  int64_t cpu = 1000000000;                    // host clock
  int64_t gpu_free[4] = {cpu, cpu, cpu, cpu};  // per stream: when its last op ends
  uint64_t corr = 0, records = 0, step = 0;
  int64_t next_sample = cpu;
  struct Pending {
    int64_t end;
    std::vector<char> rec;
  };
  std::vector<Pending> pending;  // written in end order, a few at a time (completion polling)
  auto flush = [&](int64_t upto) {
    std::sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.end < b.end; });
    size_t n = 0;
    while (n < pending.size() && pending[n].end <= upto) w.append(pending[n++].rec.data()), ++records;
    pending.erase(pending.begin(), pending.begin() + long(n));
  };
  auto op = [&](trace::OpCommon& c, uint32_t stream, uint16_t api, int64_t gpu_ns) {
    c.corr = ++corr;
    c.cpu_begin = cpu;
    c.cpu_end = cpu = jitter(cpu + 2000, 3000);
    c.gpu_start = std::max(gpu_free[stream], c.cpu_end + jitter(1500, 1500));
    c.gpu_end = gpu_free[stream] = c.gpu_start + gpu_ns;
    c.tid = 100;
    c.stream = stream;
    c.api = api;
    cpu += jitter(500, 2000);
  };
  auto queue = [&](const void* rec, size_t size, int64_t end) {
    const char* p = static_cast<const char*>(rec);
    pending.push_back({end, std::vector<char>(p, p + size)});
  };

  while (records < want) {
    int64_t step_begin = cpu;
    for (int l = 0; l < 12 && records < want; ++l) {
      int64_t layer_begin = cpu, layer_gpu0 = 0, layer_gpu1 = 0;
      for (int i = 0; i < 120; ++i) {
        trace::KernelRec k{};
        op(k.op, 1, 1 + (i % 7 == 0), jitter(2000, i % 10 == 0 ? 200000 : 30000));
        k.name_id = names[(l * 7 + i) % names.size()];
        k.grid[0] = 1024;
        k.grid[1] = k.grid[2] = k.block[1] = k.block[2] = 1;
        k.block[0] = 256;
        k.h.type = uint16_t(trace::RecType::Kernel);
        k.h.size = sizeof k;
        queue(&k, sizeof k, k.op.gpu_end);
        if (!layer_gpu0) layer_gpu0 = k.op.gpu_start;
        layer_gpu1 = k.op.gpu_end;
        if (i % 20 == 0) {
          trace::MemsetRec m{};
          op(m.op, 1, 4, jitter(800, 400));
          m.op.flags = trace::kOpAsync;
          m.bytes = 4096;
          m.h.type = uint16_t(trace::RecType::Memset);
          m.h.size = sizeof m;
          queue(&m, sizeof m, m.op.gpu_end);
        }
        if (i % 12 == 0) {
          trace::ApiRec a{};
          a.cpu_begin = cpu;
          a.cpu_end = cpu = jitter(cpu + 800, 600);
          a.corr = ++corr;
          a.api = 5 + (i % 24 == 0);
          a.stream = 1;
          a.h.type = uint16_t(trace::RecType::Api);
          a.h.size = sizeof a;
          w.append(&a);
          ++records;
        }
      }
      trace::KernelRec c{};  // a gradient bucket's all-reduce, overlapping the next layer
      op(c.op, 2, 2, jitter(100000, 100000));
      c.name_id = nccl;
      c.h.type = uint16_t(trace::RecType::Kernel);
      c.h.size = sizeof c;
      queue(&c, sizeof c, c.op.gpu_end);
      trace::RangeRec g{};
      g.cpu_begin = layer_begin;
      g.cpu_end = cpu;
      g.gpu_start = layer_gpu0;
      g.gpu_end = layer_gpu1;
      g.id = ++corr;
      g.tid = g.end_tid = 100;
      g.name_id = layers[size_t(l)];
      g.gpu_ops = 120;
      g.depth = 1;
      g.kind = uint8_t(trace::RangeKind::PushPop);
      g.source = uint8_t(trace::RangeSource::Nvtx);
      g.h.type = uint16_t(trace::RecType::Range);
      g.h.size = sizeof g;
      queue(&g, sizeof g, layer_gpu1);
      flush(cpu - 200000);  // what completed a while ago has been written by now
    }
    trace::MemcpyRec m{};  // next batch
    op(m.op, 3, 3, jitter(50000, 10000));
    m.op.flags = trace::kOpAsync;
    m.bytes = 8 << 20;
    m.copy_kind = uint8_t(trace::CopyKind::HtoD);
    m.h.type = uint16_t(trace::RecType::Memcpy);
    m.h.size = sizeof m;
    queue(&m, sizeof m, m.op.gpu_end);
    for (int a = 0; a < 4; ++a) {  // allocator churn
      trace::MemoryRec r{};
      r.cpu_begin = cpu;
      r.cpu_end = cpu = jitter(cpu + 3000, 5000);
      r.address = 0x7f0000000000ull + uint64_t(a) * 4096;
      r.bytes = 1 << 20;
      r.api = 9 + (a % 2);
      r.op = uint8_t(a % 2 ? trace::MemOp::Free : trace::MemOp::Alloc);
      r.h.type = uint16_t(trace::RecType::Memory);
      r.h.size = sizeof r;
      w.append(&r);
      ++records;
    }
    trace::SyncRec s{};  // loss.item()
    s.cpu_begin = cpu;
    s.cpu_end = cpu = std::max(cpu, std::max(gpu_free[1], gpu_free[2])) + 3000;
    s.kind = uint8_t(trace::SyncKind::Stream);
    s.api = 7;
    s.stream = 1;
    s.corr = ++corr;
    s.h.type = uint16_t(trace::RecType::Sync);
    s.h.size = sizeof s;
    w.append(&s);
    ++records;
    flush(cpu);
    trace::RangeRec g{};
    g.cpu_begin = step_begin;
    g.cpu_end = cpu;
    g.id = ++corr;
    g.tid = g.end_tid = 100;
    g.name_id = w.intern("step_" + std::to_string(step++));
    g.kind = uint8_t(trace::RangeKind::PushPop);
    g.source = uint8_t(trace::RangeSource::Nvtx);
    g.h.type = uint16_t(trace::RecType::Range);
    g.h.size = sizeof g;
    w.append(&g);
    ++records;
    while (next_sample < cpu) {
      trace::CpuSampleRec c{};
      c.ts = next_sample;
      c.ncores = 2;
      c.total_util = uint16_t(jitter(3000, 2000));
      c.process_util = uint32_t(jitter(9000, 2000));
      uint16_t cores[2] = {c.total_util, c.total_util};
      c.h.type = uint16_t(trace::RecType::CpuSample);
      w.append_var(&c, sizeof c, cores, sizeof cores);
      trace::GpuSampleRec gs{};
      gs.ts = next_sample;
      gs.util = uint16_t(jitter(60, 40));
      gs.power_mw = 400000;
      w.add(gs, trace::RecType::GpuSample);
      records += 2;
      next_sample += 100000000;
    }
  }
  flush(std::numeric_limits<int64_t>::max());
  if (!w.close(0, trace::kEndClean)) {
    std::fprintf(stderr, "%s\n", w.error().c_str());
    return 1;
  }
  std::printf("%s: %llu records, %llu steps, %.1f MB\n", path.c_str(), (unsigned long long)w.records(),
              (unsigned long long)step, double(w.bytes_written()) / 1e6);
  return 0;
}
