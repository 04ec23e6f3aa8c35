// Synthetic traces for the exporter tests (export_chrome_test.cpp, export_perfetto_test.cpp):
// every record type an exporter draws, with explicit times so that tests can check exact values.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "test/unit/temp_dir.h"
#include "tools/analysis/align.h"
#include "trace/format.h"
#include "trace/writer.h"

namespace export_fixture {

using namespace cutrace;

// The kernel name every escaping test throws at the exporters.
inline const char* const kHostile = "<img src=x onerror=alert(1)>\"\\";

struct TempDir : cutrace_test::TempDir {
  TempDir() : cutrace_test::TempDir("cutrace_export_test") {}
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Api ids of the builder.
enum Api : uint16_t {
  kLaunch = 1,
  kMemcpyAsync = 2,
  kMemsetAsync = 3,
  kStreamSync = 4,
  kMemAlloc = 5,
  kEventRecord = 6
};

class Builder {
 public:
  // pid's main thread is named "trainer"; devices 0 and 1 exist, stream 1 is on device `device`.
  Builder(const std::string& path, int rank, int world, int pid, int64_t start_mono, uint16_t device = 0)
      : device_(device), pid_(uint32_t(pid)) {
    std::string err;
    REQUIRE_MESSAGE(w_.open(path, &err), err);
    w_.meta("host", "node-" + std::to_string(rank));
    w_.meta("pid", std::to_string(pid));
    w_.meta("rank", std::to_string(rank));
    w_.meta("world_size", std::to_string(world));
    w_.meta("cmdline", "/usr/bin/python3 train.py --steps 2");
    w_.meta("start_monotonic_ns", std::to_string(start_mono));
    trace::ClockSyncRec c{};
    c.monotonic_ns = start_mono;
    c.realtime_ns = start_mono + 1'700'000'000'000'000'000;
    w_.add(c, trace::RecType::ClockSync);
    w_.api_name(kLaunch, "cuLaunchKernel");
    w_.api_name(kMemcpyAsync, "cuMemcpyHtoDAsync");
    w_.api_name(kMemsetAsync, "cuMemsetD8Async");
    w_.api_name(kStreamSync, "cuStreamSynchronize");
    w_.api_name(kMemAlloc, "cuMemAlloc");
    w_.api_name(kEventRecord, "cuEventRecord");
    for (uint16_t d = 0; d < 2; ++d) {
      trace::DeviceRec dev{};
      dev.device = d;
      dev.name_id = w_.intern("NVIDIA H200");
      dev.cc_major = 9;
      dev.cc_minor = 0;
      dev.sm_count = 132;
      dev.total_mem = 150109880320ull;
      w_.add(dev, trace::RecType::Device);
    }
    trace::ThreadRec t{};
    t.tid = pid_;
    t.name_id = w_.intern("trainer");
    w_.add(t, trace::RecType::Thread);
    trace::StreamRec s{};
    s.stream = 1;
    s.device = device;
    w_.add(s, trace::RecType::Stream);
  }

  // gpu_start/gpu_end 0: no GPU time. Returns the correlation id.
  uint64_t kernel(const char* name, int64_t cpu_b, int64_t cpu_e, int64_t gpu_s, int64_t gpu_e, uint32_t stream = 1,
                  uint32_t tid = 0) {
    trace::KernelRec k{};
    op(k.op, kLaunch, cpu_b, cpu_e, gpu_s, gpu_e, stream, tid);
    k.name_id = w_.intern(name);
    k.grid[0] = 4, k.grid[1] = 2, k.grid[2] = 1;
    k.block[0] = 128, k.block[1] = 1, k.block[2] = 1;
    k.regs = 32;
    k.static_smem = 1024;
    k.dyn_smem = 2048;
    w_.add(k, trace::RecType::Kernel);
    return k.op.corr;
  }
  uint64_t memcpy(uint64_t bytes, int64_t cpu_b, int64_t cpu_e, int64_t gpu_s, int64_t gpu_e) {
    trace::MemcpyRec m{};
    op(m.op, kMemcpyAsync, cpu_b, cpu_e, gpu_s, gpu_e, 1, 0);
    m.bytes = bytes;
    m.copy_kind = uint8_t(trace::CopyKind::HtoD);
    m.src_kind = uint8_t(trace::MemKind::Pinned);
    m.dst_kind = uint8_t(trace::MemKind::Device);
    w_.add(m, trace::RecType::Memcpy);
    return m.op.corr;
  }
  uint64_t memset(uint64_t bytes, int64_t cpu_b, int64_t cpu_e, int64_t gpu_s, int64_t gpu_e) {
    trace::MemsetRec m{};
    op(m.op, kMemsetAsync, cpu_b, cpu_e, gpu_s, gpu_e, 1, 0);
    m.bytes = bytes;
    m.element_size = 1;
    w_.add(m, trace::RecType::Memset);
    return m.op.corr;
  }
  void sync(int64_t cpu_b, int64_t cpu_e) {
    trace::SyncRec s{};
    s.cpu_begin = cpu_b;
    s.cpu_end = cpu_e;
    s.tid = pid_;
    s.stream = 1;
    s.device = device_;
    s.api = kStreamSync;
    s.kind = uint8_t(trace::SyncKind::Stream);
    s.corr = ++corr_;
    w_.add(s, trace::RecType::Sync);
  }
  void api(int64_t cpu_b, int64_t cpu_e) {
    trace::ApiRec a{};
    a.cpu_begin = cpu_b;
    a.cpu_end = cpu_e;
    a.corr = ++corr_;
    a.tid = pid_;
    a.stream = 1;
    a.api = kEventRecord;
    a.device = device_;
    w_.add(a, trace::RecType::Api);
  }
  void alloc(uint64_t bytes, int64_t cpu_b, int64_t cpu_e) {
    trace::MemoryRec m{};
    m.cpu_begin = cpu_b;
    m.cpu_end = cpu_e;
    m.address = 0x7f0000000000ull;
    m.bytes = bytes;
    m.tid = pid_;
    m.device = device_;
    m.api = kMemAlloc;
    m.op = uint8_t(trace::MemOp::Alloc);
    m.mem_kind = uint8_t(trace::MemKind::Device);
    w_.add(m, trace::RecType::Memory);
  }
  void range(const char* name, int64_t cpu_b, int64_t cpu_e, int64_t gpu_s, int64_t gpu_e,
             trace::RangeKind kind = trace::RangeKind::PushPop, const char* domain = nullptr, uint32_t end_tid = 0) {
    trace::RangeRec g{};
    g.cpu_begin = cpu_b;
    g.cpu_end = cpu_e;
    g.gpu_start = gpu_s;
    g.gpu_end = gpu_e;
    g.id = ++range_id_;
    g.tid = pid_;
    g.end_tid = end_tid ? end_tid : pid_;
    g.name_id = w_.intern(name);
    g.domain_id = domain ? w_.intern(domain) : 0;
    g.gpu_ops = 1;
    g.kind = uint8_t(kind);
    g.source = uint8_t(trace::RangeSource::Nvtx);
    w_.add(g, trace::RecType::Range);
  }
  void mark(const char* name, int64_t ts) {
    trace::MarkRec m{};
    m.ts = ts;
    m.tid = pid_;
    m.name_id = w_.intern(name);
    m.source = uint8_t(trace::RangeSource::Nvtx);
    w_.add(m, trace::RecType::Mark);
  }
  void cpu_sample(int64_t ts, uint16_t total, uint32_t process) {
    struct {
      trace::CpuSampleRec c;
      uint16_t cores[2];
    } __attribute__((packed)) rec{};
    rec.c.h.type = uint16_t(trace::RecType::CpuSample);
    rec.c.ts = ts;
    rec.c.ncores = 2;
    rec.c.total_util = total;
    rec.c.process_util = process;
    rec.cores[0] = rec.cores[1] = total;
    w_.append_var(&rec.c, sizeof rec.c, rec.cores, sizeof rec.cores);
  }
  void gpu_sample(int64_t ts, uint16_t device, uint16_t util, uint64_t mem_used) {
    trace::GpuSampleRec g{};
    g.ts = ts;
    g.device = device;
    g.util = util;
    g.mem_used = mem_used;
    g.mem_total = 150109880320ull;
    w_.add(g, trace::RecType::GpuSample);
  }
  void window(int64_t ts, trace::WindowEdge edge) {
    trace::WindowRec w{};
    w.ts = ts;
    w.reason_id = w_.intern("process");
    w.edge = uint8_t(edge);
    w_.add(w, trace::RecType::Window);
  }
  void close() { REQUIRE(w_.close(0, trace::kEndClean)); }

 private:
  void op(trace::OpCommon& o, uint16_t api, int64_t cpu_b, int64_t cpu_e, int64_t gpu_s, int64_t gpu_e, uint32_t stream,
          uint32_t tid) {
    o.corr = ++corr_;
    o.cpu_begin = cpu_b;
    o.cpu_end = cpu_e;
    o.gpu_start = gpu_s;
    o.gpu_end = gpu_e;
    o.tid = tid ? tid : pid_;
    o.stream = stream;
    o.device = device_;
    o.api = api;
    if (!gpu_s) o.flags |= trace::kOpNoGpuTime;
  }

  TraceWriter w_;
  uint16_t device_;
  uint32_t pid_;
  uint64_t corr_ = 1000;
  uint64_t range_id_ = 0;
};

// The standard trace of the tests, with times relative to `t0` (the capture start):
//   alloc; 3 kernels ("gemm", the hostile name, "no_time" without GPU time); a memcpy and a
//   memset; a sync; an event record; push/pop "step" around the kernels with "inner" nested,
//   both with GPU projections; start/end "async" ending on another thread; a mark; 2 CPU
//   samples; GPU samples of device 0 (used) and device 1 (not used); window begin/end.
// GPU operations with time: 4 (gemm, hostile, memcpy, memset).
inline void standard_trace(Builder& b, int64_t t0) {
  b.window(t0 + 100, trace::WindowEdge::Begin);
  b.alloc(1 << 20, t0 + 1'000, t0 + 2'000);
  b.range("async", t0 + 2'500, t0 + 60'000, t0 + 10'000, t0 + 40'000, trace::RangeKind::StartEnd, nullptr, 4343);
  b.kernel("gemm", t0 + 5'000, t0 + 6'000, t0 + 10'000, t0 + 20'000);
  b.kernel(kHostile, t0 + 7'000, t0 + 8'000, t0 + 20'000, t0 + 25'000);
  b.kernel("no_time", t0 + 8'500, t0 + 8'900, 0, 0);
  b.range("inner", t0 + 6'500, t0 + 9'000, t0 + 20'000, t0 + 25'000);
  b.memcpy(4'000, t0 + 9'000, t0 + 9'500, t0 + 25'000, t0 + 27'000);
  b.memset(1'000, t0 + 9'600, t0 + 9'800, t0 + 27'000, t0 + 27'500);
  b.range("step", t0 + 4'000, t0 + 30'000, t0 + 10'000, t0 + 27'500, trace::RangeKind::PushPop, "mylib");
  b.sync(t0 + 10'000, t0 + 29'000);
  b.api(t0 + 29'100, t0 + 29'200);
  b.mark("checkpoint", t0 + 29'500);
  b.cpu_sample(t0 + 50'000, 1234, 10050);
  b.cpu_sample(t0 + 150'000, 2345, 9000);
  b.gpu_sample(t0 + 50'000, 0, 87, 3ull << 30);
  b.gpu_sample(t0 + 50'000, 1, 5, 1ull << 30);
  b.window(t0 + 200'000, trace::WindowEdge::End);
}

inline Alignment alignment_of(const std::vector<std::pair<std::string, int64_t>>& file_offsets) {
  Alignment a;
  a.method = "realtime";
  int rank = 0;
  for (const auto& [file, off] : file_offsets) {
    RankClock rc;
    rc.file = file;
    rc.rank = rank++;
    rc.offset_ns = off;
    a.ranks.push_back(rc);
  }
  return a;
}

}  // namespace export_fixture
