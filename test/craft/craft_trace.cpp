// Writes valid traces with hostile contents, for the hardening tests (test/e2e/hardening_checks.py)
// and the fuzz corpus:
//   craft_trace OUT plain              a small job: 2 streams, 10 kernels, an NVTX range, a copy,
//                                      a memset, a sync, CPU/GPU samples
//   craft_trace OUT stream ID          plain, and 5 kernels "k_far" on stream ID (2^30: a table by
//                                      stream id would be 8 GB)
//   craft_trace OUT module PATH        plain, with a call stack on every kernel and the sync whose
//                                      frames are in module PATH (a FIFO: a tool must not block)
//   craft_trace OUT names              plain, every name (kernels, ranges, marks, domains, thread,
//                                      device, API, host, cmdline, window reason) holding terminal
//                                      escapes, newlines and C1 controls
//   craft_trace OUT extreme            every id at its largest, times at both ends of int64, sizes
//                                      at 2^64-1: no tool may crash, overflow or allocate by them
//   craft_trace OUT blocks             one block per part, for damaging one: 0 the metadata, 1 only
//                                      the String "k_lost", 2..6 each 4 kernels (2 "k_lost" on
//                                      stream 1, 2 "k_kept" on stream 2) and a range "step_N",
//                                      7 the End record
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "trace/writer.h"

using namespace cutrace;

namespace {

enum Api : uint16_t { kLaunch = 1, kCopy = 2, kSet = 3, kSync = 4, kAlloc = 5 };

// The hostile part of every name in `names` mode: clear screen, window title (OSC), a clipboard
// write (OSC 52), a forged table row after a newline, a carriage return, DEL, C1 CSI (U+009B).
const char kEvil[] =
    "\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x07\nforged row 999\r\x7f\xc2\x9b"
    "31m";

struct Gen {
  TraceWriter w;
  bool evil = false;
  int64_t t = 1'000'000'000;
  int64_t gpu_free = 0;
  uint64_t corr = 0;
  uint32_t tid = 4242;
  uint32_t stack = 0;  // OpStack for each op when non-zero

  uint32_t name(const std::string& n) { return w.intern(evil ? n + kEvil : n); }
  void op(trace::OpCommon& o, uint32_t stream, int64_t gpu_ns, trace::RecType type) {
    o.corr = ++corr;
    o.cpu_begin = t;
    o.cpu_end = t + 3000;
    t += 5000;
    o.gpu_start = std::max(o.cpu_end + 2000, gpu_free);
    o.gpu_end = o.gpu_start + gpu_ns;
    gpu_free = o.gpu_end + 500;
    o.tid = tid;
    o.stream = stream;
    if (stack) op_stack(o.corr, type);
  }
  void op_stack(uint64_t c, trace::RecType type) {
    trace::OpStackRec s{};
    s.corr = c;
    s.stack = stack;
    s.op_type = uint16_t(type);
    w.add(s, trace::RecType::OpStack);
  }
  void kernel(uint32_t name_id, uint32_t stream, int64_t gpu_ns) {
    trace::KernelRec k{};
    op(k.op, stream, gpu_ns, trace::RecType::Kernel);
    k.op.api = kLaunch;
    k.name_id = name_id;
    k.grid[0] = 64, k.grid[1] = k.grid[2] = 1;
    k.block[0] = 128, k.block[1] = k.block[2] = 1;
    w.add(k, trace::RecType::Kernel);
  }
  void stream(uint32_t id) {
    trace::StreamRec sr{};
    sr.stream = id;
    sr.handle = 0x1000 + id;
    w.add(sr, trace::RecType::Stream);
  }
  void module_stack(const std::string& path) {
    trace::ModuleRec m{};
    m.module = 1;
    m.path_id = w.intern(path);
    m.base = 0x400000;
    m.size = 0x10000;
    w.add(m, trace::RecType::Module);
    trace::StackRec s{};
    s.h.type = uint16_t(trace::RecType::Stack);
    s.stack = 1;
    s.depth = 2;
    trace::StackFrame frames[2] = {{1, 0x1234}, {1, 0x5678}};
    w.append_var(&s, sizeof s, frames, sizeof frames);
    stack = 1;
  }

  void header() {
    w.meta("host", evil ? std::string("node-0") + kEvil : "node-0");
    w.meta("pid", std::to_string(tid));
    w.meta("rank", "0");
    w.meta("world_size", "1");
    w.meta("cmdline", evil ? std::string("python train.py ") + kEvil : "python train.py");
    w.api_name(kLaunch, evil ? std::string("cuLaunchKernel") + kEvil : "cuLaunchKernel");
    w.api_name(kCopy, "cuMemcpyHtoDAsync_v2");
    w.api_name(kSet, "cuMemsetD8Async");
    w.api_name(kSync, "cuStreamSynchronize");
    w.api_name(kAlloc, "cuMemAlloc_v2");
    trace::ThreadRec th{};
    th.tid = tid;
    th.name_id = name("python");
    w.add(th, trace::RecType::Thread);
    trace::DeviceRec d{};
    d.name_id = name("NVIDIA H200");
    d.cc_major = 9;
    d.sm_count = 132;
    d.total_mem = 141ull << 30;
    w.add(d, trace::RecType::Device);
    stream(1);
    stream(2);
  }

  // The plain job; the range "step_0" spans it all.
  void body() {
    trace::WindowRec win{};
    win.ts = t;
    win.reason_id = name("process");
    win.edge = uint8_t(trace::WindowEdge::Begin);
    w.add(win, trace::RecType::Window);
    int64_t begin = t;
    uint32_t a = name("k_alpha"), b = name("k_beta");
    for (int i = 0; i < 10; ++i) kernel(i % 2 ? b : a, 1 + uint32_t(i % 2), 20000);
    trace::MemcpyRec c{};
    op(c.op, 1, 8000, trace::RecType::Memcpy);
    c.op.api = kCopy;
    c.op.flags = trace::kOpAsync;
    c.bytes = 1 << 20;
    c.copy_kind = uint8_t(trace::CopyKind::HtoD);
    c.src_kind = uint8_t(trace::MemKind::Pinned);
    c.dst_kind = uint8_t(trace::MemKind::Device);
    w.add(c, trace::RecType::Memcpy);
    trace::MemsetRec m{};
    op(m.op, 1, 2000, trace::RecType::Memset);
    m.op.api = kSet;
    m.bytes = 1 << 20;
    m.element_size = 1;
    w.add(m, trace::RecType::Memset);
    trace::SyncRec sy{};
    sy.cpu_begin = t;
    sy.cpu_end = gpu_free + 1000;
    sy.tid = tid;
    sy.stream = 1;
    sy.api = kSync;
    sy.kind = uint8_t(trace::SyncKind::Stream);
    sy.corr = ++corr;
    if (stack) op_stack(sy.corr, trace::RecType::Sync);
    w.add(sy, trace::RecType::Sync);
    t = sy.cpu_end + 1000;
    range(name("step_0"), name("domain"), begin, t);
    trace::MarkRec mk{};
    mk.ts = t;
    mk.tid = tid;
    mk.name_id = name("mark");
    mk.domain_id = name("domain");
    mk.source = uint8_t(trace::RangeSource::Nvtx);
    w.add(mk, trace::RecType::Mark);
    trace::CpuSampleRec cs{};
    cs.h.type = uint16_t(trace::RecType::CpuSample);
    cs.ts = t;
    cs.ncores = 2;
    cs.total_util = 5000;
    cs.process_util = 9000;
    uint16_t cores[2] = {5000, 4000};
    w.append_var(&cs, sizeof cs, cores, sizeof cores);
    trace::GpuSampleRec gs{};
    gs.ts = t;
    gs.util = 70;
    gs.mem_used = 1ull << 30;
    gs.mem_total = 141ull << 30;
    w.add(gs, trace::RecType::GpuSample);
  }
  void range(uint32_t name_id, uint32_t domain, int64_t b, int64_t e) {
    trace::RangeRec r{};
    r.cpu_begin = b;
    r.cpu_end = e;
    r.tid = r.end_tid = tid;
    r.name_id = name_id;
    r.domain_id = domain;
    r.id = 1;
    r.kind = uint8_t(trace::RangeKind::PushPop);
    r.source = uint8_t(trace::RangeSource::Nvtx);
    w.add(r, trace::RecType::Range);
  }

  // Records whose every field is at an extreme; only String records are real.
  void extreme() {
    constexpr uint32_t U32 = std::numeric_limits<uint32_t>::max();
    constexpr uint16_t U16 = std::numeric_limits<uint16_t>::max();
    constexpr int64_t MIN = std::numeric_limits<int64_t>::min(), MAX = std::numeric_limits<int64_t>::max();
    constexpr uint64_t U64 = std::numeric_limits<uint64_t>::max();
    w.meta("pid", "-9223372036854775808");
    w.meta("rank", "2147483648");
    w.meta("world_size", "-1");
    w.meta("gpu_sample", "1e308");
    w.meta("exit_status", "99999999999999999999");
    trace::ThreadRec th{};
    th.tid = U32;
    th.name_id = U32;
    w.add(th, trace::RecType::Thread);
    trace::DeviceRec d{};
    d.device = U16;
    d.name_id = U32;
    d.sm_count = U16;
    d.total_mem = U64;
    w.add(d, trace::RecType::Device);
    trace::StreamRec sr{};
    sr.stream = U32;
    sr.device = U16;
    sr.handle = U64;
    w.add(sr, trace::RecType::Stream);
    trace::ModuleRec mo{};
    mo.module = U32;
    mo.path_id = U32;
    mo.base = U64;
    mo.size = U64;
    w.add(mo, trace::RecType::Module);
    trace::StackRec st{};
    st.h.type = uint16_t(trace::RecType::Stack);
    st.stack = U32;
    st.depth = U16;
    trace::StackFrame frames[2] = {{U32, U64}, {0, 0}};
    w.append_var(&st, sizeof st, frames, sizeof frames);
    const int64_t times[][4] = {{MIN, MAX, MIN, MAX}, {MAX, MIN, MAX, MIN}, {MIN, MIN, 1, MAX},
                                {MAX, MAX, MIN, 1},   {1, MAX, MAX, MAX},   {-1, MIN, -1, MIN}};
    for (const auto& tm : times) {
      auto common = [&](trace::OpCommon& o) {
        o.corr = U64 - uint64_t(&tm - times);
        o.cpu_begin = tm[0], o.cpu_end = tm[1], o.gpu_start = tm[2], o.gpu_end = tm[3];
        o.tid = U32, o.stream = U32 - uint32_t(&tm - times), o.device = U16, o.api = U16;
        o.result = std::numeric_limits<int32_t>::min();
      };
      trace::KernelRec k{};
      common(k.op);
      k.name_id = U32 - uint32_t(&tm - times);
      k.grid[0] = k.grid[1] = k.grid[2] = U32;
      k.block[0] = k.block[1] = k.block[2] = U32;
      k.dyn_smem = k.static_smem = U32;
      k.regs = U16;
      k.graph_id = U32;
      w.add(k, trace::RecType::Kernel);
      trace::MemcpyRec c{};
      common(c.op);
      c.bytes = U64;
      c.copy_kind = c.src_kind = c.dst_kind = 0xFF;
      c.src_device = c.dst_device = U16;
      w.add(c, trace::RecType::Memcpy);
      trace::MemsetRec m{};
      common(m.op);
      m.bytes = U64;
      w.add(m, trace::RecType::Memset);
      trace::SyncRec sy{};
      sy.cpu_begin = tm[0], sy.cpu_end = tm[1];
      sy.tid = U32, sy.stream = U32, sy.device = U16, sy.api = U16, sy.kind = 0xFF, sy.corr = U64;
      w.add(sy, trace::RecType::Sync);
      sy.kind = uint8_t(trace::SyncKind::Stream);
      w.add(sy, trace::RecType::Sync);
      trace::OpStackRec os{};
      os.corr = U64;
      os.stack = U32;
      os.op_type = U16;
      w.add(os, trace::RecType::OpStack);
      trace::MemoryRec me{};
      me.cpu_begin = tm[0], me.cpu_end = tm[1];
      me.address = U64, me.bytes = U64, me.tid = U32, me.stream = U32, me.device = U16, me.api = U16;
      me.op = uint8_t(trace::MemOp::Alloc);
      me.mem_kind = uint8_t(trace::MemKind::Device);
      w.add(me, trace::RecType::Memory);
      me.op = uint8_t(trace::MemOp::Free);
      w.add(me, trace::RecType::Memory);
      trace::ApiRec a{};
      a.cpu_begin = tm[0], a.cpu_end = tm[1];
      a.corr = U64, a.arg = U64, a.tid = U32, a.stream = U32, a.api = U16, a.device = U16;
      w.add(a, trace::RecType::Api);
      trace::RangeRec r{};
      r.cpu_begin = tm[0], r.cpu_end = tm[1], r.gpu_start = tm[2], r.gpu_end = tm[3];
      r.id = U64, r.tid = r.end_tid = U32, r.name_id = r.domain_id = U32 - uint32_t(&tm - times);
      r.category = r.color = r.gpu_ops = U32;
      r.depth = U16;
      r.kind = uint8_t(trace::RangeKind::PushPop);
      r.source = uint8_t(trace::RangeSource::Nvtx);
      w.add(r, trace::RecType::Range);
      trace::MarkRec mk{};
      mk.ts = tm[0], mk.tid = U32, mk.name_id = mk.domain_id = U32;
      w.add(mk, trace::RecType::Mark);
      trace::CpuSampleRec cs{};
      cs.h.type = uint16_t(trace::RecType::CpuSample);
      cs.ts = tm[0];
      cs.ncores = 2;
      cs.total_util = U16;
      cs.process_util = U32;
      uint16_t cores[2] = {U16, U16};
      w.append_var(&cs, sizeof cs, cores, sizeof cores);
      trace::GpuSampleRec gs{};
      gs.ts = tm[0], gs.device = U16, gs.util = gs.mem_util = gs.temp_c = U16;
      gs.sm_clock_mhz = gs.power_mw = U32, gs.mem_used = gs.mem_total = U64;
      w.add(gs, trace::RecType::GpuSample);
      trace::ClockSyncRec cl{};
      cl.monotonic_ns = tm[0], cl.realtime_ns = tm[1];
      w.add(cl, trace::RecType::ClockSync);
      trace::DroppedRec dr{};
      dr.ts = tm[0], dr.tid = U32, dr.count = U64;
      w.add(dr, trace::RecType::Dropped);
      trace::LossRec lo{};
      lo.begin_ns = tm[0], lo.end_ns = tm[1], lo.tid = U32, lo.reason = 0xFF;
      for (size_t k = 0; k < sizeof lo.count / sizeof lo.count[0]; ++k) lo.count[k] = U64;  // packed: no references
      w.add(lo, trace::RecType::Loss);
      trace::WindowRec win{};
      win.ts = tm[0], win.index = U32, win.reason_id = U32;
      win.edge = uint8_t(&tm - times) % 2 ? uint8_t(trace::WindowEdge::End) : uint8_t(trace::WindowEdge::Begin);
      w.add(win, trace::RecType::Window);
    }
  }
};

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s OUT plain|stream ID|module PATH|names|extreme|blocks\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage(argv[0]);
  std::string out = argv[1], mode = argv[2];
  const char* arg = argc > 3 ? argv[3] : nullptr;
  if ((mode == "stream" || mode == "module") != (arg != nullptr)) return usage(argv[0]);
  Gen g;
  g.evil = mode == "names";
  std::string err;
  unlink(out.c_str());
  if (!g.w.open(out, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  if (mode == "extreme") {
    g.extreme();
  } else if (mode == "blocks") {
    g.header();
    bool ok = g.w.flush();
    uint32_t lost = g.w.intern("k_lost");
    ok = ok && g.w.flush();
    uint32_t kept = g.w.intern("k_kept");
    for (int b = 0; ok && b < 5; ++b) {
      int64_t begin = g.t;
      for (int i = 0; i < 4; ++i) g.kernel(i % 2 ? kept : lost, 1 + uint32_t(i % 2), 20000);
      g.range(g.w.intern("step_" + std::to_string(b)), 0, begin, g.t);
      ok = g.w.flush();
    }
    if (!ok) {
      std::fprintf(stderr, "%s: %s\n", out.c_str(), g.w.error().c_str());
      return 1;
    }
  } else if (mode == "plain" || mode == "stream" || mode == "module" || mode == "names") {
    g.header();
    if (mode == "module") g.module_stack(arg);
    g.body();
    if (mode == "stream") {
      uint32_t far = uint32_t(std::strtoul(arg, nullptr, 0));
      g.stream(far);
      uint32_t k = g.w.intern("k_far");
      for (int i = 0; i < 5; ++i) g.kernel(k, far, 30000);
    }
  } else {
    return usage(argv[0]);
  }
  if (!g.w.close(0, trace::kEndClean)) {
    std::fprintf(stderr, "%s: %s\n", out.c_str(), g.w.error().c_str());
    return 1;
  }
  return 0;
}
