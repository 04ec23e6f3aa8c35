// The synthetic traces of the summary tests (summary_test.cpp, breakdown_test.cpp): a TraceBuilder
// that writes every record type the summary reads, with explicit times, and summarise() of files.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "tools/analysis/summary_model.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace summary_fixture {

using namespace cutrace;

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
    trace::DeviceRec d{};
    d.name_id = w_.intern("NVIDIA H200");
    d.cc_major = 9;
    d.sm_count = 132;
    d.total_mem = 141ull << 30;
    w_.add(d, trace::RecType::Device);
  }

  // gpu_ns < 0: no GPU time. The GPU starts 400 ns after the launch call returns.
  void kernel(const char* name, int64_t gpu_ns, uint16_t flags = 0, uint8_t kind = 0) {
    trace::KernelRec k{};
    set_op(k.op, gpu_ns, flags);
    k.op.api = kLaunch;
    k.name_id = w_.intern(name);
    k.kind = kind;
    w_.add(k, trace::RecType::Kernel);
  }
  // A kernel launched with grid (grid_x, 1, 1) and block (128, 1, 1).
  void kernel_grid(const char* name, int64_t gpu_ns, uint32_t grid_x, uint16_t flags = 0) {
    trace::KernelRec k{};
    set_op(k.op, gpu_ns, flags);
    k.op.api = kLaunch;
    k.name_id = w_.intern(name);
    k.grid[0] = grid_x, k.grid[1] = k.grid[2] = 1;
    k.block[0] = 128, k.block[1] = k.block[2] = 1;
    w_.add(k, trace::RecType::Kernel);
  }
  void meta(const char* key, const char* value) { w_.meta(key, value); }
  // Explicit times (ns). The launch call takes 10 ns: cpu_begin = cpu_end - 10.
  void kernel_at(const char* name, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end, uint32_t stream,
                 uint16_t flags = 0) {
    trace::KernelRec k{};
    at(k.op, cpu_end, gpu_start, gpu_end, stream, flags);
    k.op.api = kLaunch;
    k.name_id = w_.intern(name);
    w_.add(k, trace::RecType::Kernel);
  }
  void memcpy_at(trace::CopyKind kind, uint64_t bytes, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end,
                 uint32_t stream, uint16_t flags = trace::kOpAsync) {
    trace::MemcpyRec m{};
    at(m.op, cpu_end, gpu_start, gpu_end, stream, flags);
    m.op.api = kCopy;
    m.copy_kind = uint8_t(kind);
    m.bytes = bytes;
    w_.add(m, trace::RecType::Memcpy);
  }
  void memset_at(uint64_t bytes, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end, uint32_t stream) {
    trace::MemsetRec m{};
    at(m.op, cpu_end, gpu_start, gpu_end, stream, trace::kOpAsync);
    m.op.api = kSet;
    m.bytes = bytes;
    w_.add(m, trace::RecType::Memset);
  }
  void memcpy(trace::CopyKind kind, uint64_t bytes, int64_t gpu_ns) {
    trace::MemcpyRec m{};
    set_op(m.op, gpu_ns, 0);
    m.op.api = kCopy;
    m.copy_kind = uint8_t(kind);
    m.bytes = bytes;
    w_.add(m, trace::RecType::Memcpy);
  }
  void memset(uint64_t bytes, int64_t gpu_ns) {
    trace::MemsetRec m{};
    set_op(m.op, gpu_ns, 0);
    m.op.api = kSet;
    m.bytes = bytes;
    w_.add(m, trace::RecType::Memset);
  }
  void sync(trace::SyncKind kind, int64_t cpu_ns, int32_t result = 0) {
    trace::SyncRec s{};
    s.cpu_begin = now_ += 1000;
    s.cpu_end = s.cpu_begin + cpu_ns;
    s.kind = uint8_t(kind);
    s.api = kSync;
    s.result = result;
    w_.add(s, trace::RecType::Sync);
  }
  void sync_at(trace::SyncKind kind, int64_t cpu_begin, int64_t cpu_end) {
    trace::SyncRec s{};
    s.cpu_begin = cpu_begin;
    s.cpu_end = cpu_end;
    s.kind = uint8_t(kind);
    s.api = kSync;
    w_.add(s, trace::RecType::Sync);
  }
  void api(int32_t result) {
    trace::ApiRec a{};
    a.cpu_begin = now_ += 1000;
    a.cpu_end = a.cpu_begin + 10;
    a.api = kEvent;
    a.result = result;
    w_.add(a, trace::RecType::Api);
  }
  void alloc(int64_t cpu_ns) {
    trace::MemoryRec m{};
    m.cpu_begin = now_ += 1000;
    m.cpu_end = m.cpu_begin + cpu_ns;
    m.api = kAlloc;
    m.op = uint8_t(trace::MemOp::Alloc);
    m.bytes = 4096;
    w_.add(m, trace::RecType::Memory);
  }
  // gpu_ns < 0: no GPU projection (no timed GPU work inside). cpu_ns < 0: end before begin.
  void range(const char* name, int64_t cpu_ns, int64_t gpu_ns, uint32_t ops, const char* domain = nullptr,
             trace::RangeKind kind = trace::RangeKind::PushPop, trace::RangeSource source = trace::RangeSource::Api,
             uint16_t depth = 0) {
    trace::RangeRec g{};
    g.cpu_begin = now_ += 10000;
    g.cpu_end = g.cpu_begin + cpu_ns;
    if (gpu_ns >= 0) {
      g.gpu_start = g.cpu_begin + 500;
      g.gpu_end = g.gpu_start + gpu_ns;
    }
    g.id = ++range_id_;
    g.tid = 42;
    g.end_tid = kind == trace::RangeKind::StartEnd ? 43 : 42;
    g.name_id = w_.intern(name);
    g.domain_id = domain ? w_.intern(domain) : 0;
    g.color = 0xff00ff00;
    g.gpu_ops = ops;
    g.depth = depth;
    g.kind = uint8_t(kind);
    g.source = uint8_t(source);
    w_.add(g, trace::RecType::Range);
  }
  void mark(const char* name, trace::RangeSource source = trace::RangeSource::Api) {
    trace::MarkRec k{};
    k.ts = now_ += 1000;
    k.tid = 42;
    k.name_id = w_.intern(name);
    k.source = uint8_t(source);
    w_.add(k, trace::RecType::Mark);
  }
  void cpu_sample(uint16_t total, uint32_t process) {
    trace::CpuSampleRec c{};
    c.ts = now_ += 1000;
    c.ncores = 2;
    c.total_util = total;
    c.process_util = process;
    uint16_t cores[2] = {total, total};
    c.h.type = uint16_t(trace::RecType::CpuSample);
    w_.append_var(&c, sizeof c, cores, sizeof cores);
  }
  void gpu_sample(uint16_t device, uint16_t util, uint64_t mem_used) {
    trace::GpuSampleRec g{};
    g.ts = now_ += 1000;
    g.device = device;
    g.util = util;
    g.mem_util = uint16_t(util / 2);
    g.power_mw = 100000;
    g.mem_used = mem_used;
    w_.add(g, trace::RecType::GpuSample);
  }
  void window(uint32_t index, trace::WindowEdge edge, int64_t ts) {
    trace::WindowRec w{};
    w.ts = ts;
    w.index = index;
    w.reason_id = w_.intern("cudaProfilerApi");
    w.edge = uint8_t(edge);
    w_.add(w, trace::RecType::Window);
  }
  void skip_to(int64_t t) { now_ = t; }  // the next range/mark/op times start after t
  void dropped(uint64_t n) {
    trace::DroppedRec d{};
    d.count = n;
    w_.add(d, trace::RecType::Dropped);
  }
  void close(uint64_t dropped_total) { w_.close(dropped_total, trace::kEndClean); }

 private:
  void set_op(trace::OpCommon& op, int64_t gpu_ns, uint16_t flags) {
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
  void at(trace::OpCommon& op, int64_t cpu_end, int64_t gpu_start, int64_t gpu_end, uint32_t stream, uint16_t flags) {
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

inline SummaryModel summarise(const std::vector<std::pair<const std::string*, const char*>>& files,
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

inline SummaryModel summarise(const std::string& rank1, const std::string& rank0) {
  return summarise({{&rank1, "node-b.rank1.pid200.cutrace"}, {&rank0, "node-a.rank0.pid100.cutrace"}});
}

}  // namespace summary_fixture
