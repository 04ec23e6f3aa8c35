// Raw records into trace records (collector/collector_impl.h): GPU operations handed to the op
// resolver with their device and stream, annotations to the range tracker, call stacks linked.
#include "collector/collector_impl.h"
#include "collector/cupti_source.h"
#include "collector/nvtx_meta.h"
#include "runtime/driver.h"

namespace cutrace {

namespace {
trace::CopyKind copy_kind(uint8_t src, uint8_t dst) {
  auto host = [](uint8_t k) { return k == uint8_t(trace::MemKind::Pageable) || k == uint8_t(trace::MemKind::Pinned); };
  if (host(src) && host(dst)) return trace::CopyKind::HtoH;
  if (host(src)) return trace::CopyKind::HtoD;
  if (host(dst)) return trace::CopyKind::DtoH;
  return trace::CopyKind::DtoD;
}

void fill_common(trace::OpCommon& c, const RawRecord& r, uint32_t tid, int64_t t0, int64_t t1, uint16_t device,
                 uint32_t sid) {
  c.corr = r.corr, c.cpu_begin = t0, c.cpu_end = t1, c.tid = tid, c.stream = sid, c.device = device;
  c.api = r.api, c.result = r.result, c.gpu_start = c.gpu_end = 0;
  c.flags = uint16_t((r.result ? trace::kOpError : 0) | ((r.flags & kRawCaptured) ? trace::kOpCaptured : 0) |
                     ((r.flags & kRawAsync) ? trace::kOpAsync : 0) |
                     ((r.flags & kRawPerThread) ? trace::kOpPerThreadStream : 0) |
                     ((r.flags & kRawNotSampled) ? trace::kOpNotSampled : 0));
}
}  // namespace

uint16_t Collector::device_of(CUcontext ctx) {
  if (!ctx) return 0;
  auto it = ctx_device_.find(ctx);
  if (it != ctx_device_.end()) return it->second;
  CUdevice dev = 0;
  if (use_context(ctx)) driver().cuCtxGetDevice(&dev);
  ctx_device_[ctx] = uint16_t(dev);
  return uint16_t(dev);
}

uint8_t Collector::classify(uint64_t addr, uint8_t hint) {
  using trace::MemKind;
  if (hint != uint8_t(MemKind::Unknown)) return hint;
  const Driver& d = driver();
  unsigned type = 0;
  if (!d.cuPointerGetAttribute ||
      d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(addr)) != CUDA_SUCCESS)
    return uint8_t(MemKind::Pageable);
  if (type == CU_MEMORYTYPE_HOST) return uint8_t(MemKind::Pinned);
  int managed = 0;
  d.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, CUdeviceptr(addr));
  return uint8_t(managed ? MemKind::Managed : MemKind::Device);
}

void Collector::add_gpu_op(const Drained& d, int64_t t0, int64_t t1, uint16_t device, uint32_t sid) {
  const RawRecord& r = d.r;
  PendingOp op;
  op.ev_start = r.ev_start, op.ev_end = r.ev_end, op.ctx = r.ctx, op.owner = d.owner;
  op.blocking = (r.flags & kRawBlocking) != 0;
  op.cupti = (r.flags & kRawCupti) && r.result == CUDA_SUCCESS && !(r.flags & kRawCaptured);
  op.timed = (r.ev_end || op.cupti) && r.result == CUDA_SUCCESS && !(r.flags & kRawCaptured);
  op.gctx = op.timed && !op.cupti ? gpu_.context(r.ctx) : nullptr;
  // A new context's first anchor at once while its window is open (its operations wait for one).
  if (op.gctx && op.gctx->count == 0) while_capturing([&] { gpu_.anchor_new(); });
  op.cupti_corr = r.cupti_corr;
  if (r.kind == RawKind::Kernel) {
    trace::KernelRec& k = op.rec.kernel;
    k = trace::KernelRec{};
    k.h = {uint16_t(trace::RecType::Kernel), uint16_t(sizeof k)};
    fill_common(k.op, r, d.owner->tid, t0, t1, device, sid);
    k.kind = r.sub;
    const Names::Func& f = r.sub == uint8_t(trace::KernelKind::Graph) ? names_.graph(r.kernel.func, &k.graph_id)
                                                                      : names_.function(r.kernel.func, device);
    k.name_id = f.name_id, k.regs = f.regs, k.static_smem = f.static_smem;
    if (f.collective && !(r.flags & kRawCaptured)) op.coll_seq = ++collectives_launched_;
    std::copy(r.kernel.grid, r.kernel.grid + 3, k.grid);
    std::copy(r.kernel.block, r.kernel.block + 3, k.block);
    k.dyn_smem = r.kernel.shmem;
    op.type = trace::RecType::Kernel;
  } else if (r.kind == RawKind::Memcpy) {
    trace::MemcpyRec& c = op.rec.copy;
    c = trace::MemcpyRec{};
    c.h = {uint16_t(trace::RecType::Memcpy), uint16_t(sizeof c)};
    fill_common(c.op, r, d.owner->tid, t0, t1, device, sid);
    c.bytes = r.copy.bytes;
    c.src_kind = classify(r.copy.src, r.copy.src_kind);
    c.dst_kind = classify(r.copy.dst, r.copy.dst_kind);
    c.copy_kind = r.copy.copy_kind ? r.copy.copy_kind : uint8_t(copy_kind(c.src_kind, c.dst_kind));
    c.src_device = c.dst_device = device;
    op.type = trace::RecType::Memcpy;
  } else {
    trace::MemsetRec& s = op.rec.set;
    s = trace::MemsetRec{};
    s.h = {uint16_t(trace::RecType::Memset), uint16_t(sizeof s)};
    fill_common(s.op, r, d.owner->tid, t0, t1, device, sid);
    s.bytes = r.set.bytes, s.value = r.set.value, s.element_size = r.set.elem;
    op.type = trace::RecType::Memset;
  }
  op.stack = d.stack;
  ranges_.attach(d.owner->tid, &op.ranges);
  ops_.add(std::move(op));
}

void Collector::handle_annotation(const Drained& d, int64_t ts) {
  const RawRecord& r = d.r;
  uint32_t tid = d.owner->tid;
  auto name_id = [&] {
    if (r.flags & kRawNameSlot) return w_.intern(d.name);
    return r.nvtx.name ? w_.intern(r.nvtx.name) : 0u;
  };
  RangeTracker::Attrs a{0, 0, r.nvtx.category, r.nvtx.color, r.nvtx.source};
  if (r.flags & kRawPayload) a.payload_type = r.nvtx.payload_type, a.payload = r.nvtx.payload;
  if (r.kind == RawKind::RangePush || r.kind == RawKind::RangeStart || r.kind == RawKind::Mark) {
    a.name_id = name_id();
    a.domain_id = r.nvtx.domain ? w_.intern(static_cast<const char*>(r.nvtx.domain)) : 0;
  }
  switch (r.kind) {
    case RawKind::RangePush: ranges_.push(tid, ts, a, uint32_t(r.nvtx.id)); break;
    case RawKind::RangePop:
      ranges_.pop(tid, r.nvtx.domain ? w_.intern(static_cast<const char*>(r.nvtx.domain)) : 0, ts, uint32_t(r.nvtx.id));
      break;
    case RawKind::RangeStart: ranges_.start(r.nvtx.id, tid, ts, a); break;
    case RawKind::RangeEnd: ranges_.end(r.nvtx.id, tid, ts); break;
    case RawKind::Mark: {
      trace::MarkRec m{};
      m.ts = ts, m.tid = tid, m.name_id = a.name_id, m.domain_id = a.domain_id, m.category = a.category;
      m.color = a.color, m.source = a.source;
      if (a.payload_type) {  // directly before its mark (trace::PayloadRec)
        trace::PayloadRec p{};
        p.ts = ts, p.tid = tid, p.of = uint16_t(trace::RecType::Mark), p.type = a.payload_type, p.bits = a.payload;
        w_.add(p, trace::RecType::Payload);
      }
      w_.add(m, trace::RecType::Mark);
      break;
    }
    case RawKind::ThreadName: {
      trace::ThreadRec t{};
      t.tid = uint32_t(r.nvtx.id), t.name_id = name_id();
      w_.add(t, trace::RecType::Thread);
      break;
    }
    case RawKind::CategoryName: {  // Meta "nvtx_category/<id>/<domain>" (docs/FORMAT.md)
      // sub != 0: a CUDA resource's name (NvtxResource), Meta "nvtx_name/<kind>/<handle>".
      if (r.sub) {
        std::string key = resource_meta_key(NvtxResource(r.sub), r.nvtx.id);
        if (!key.empty()) w_.meta(key, r.flags & kRawNameSlot ? d.name.c_str() : r.nvtx.name ? r.nvtx.name : "");
        break;
      }
      const char* dom = r.nvtx.domain ? static_cast<const char*>(r.nvtx.domain) : "";
      const char* text = r.flags & kRawNameSlot ? d.name.c_str() : r.nvtx.name ? r.nvtx.name : "";
      w_.meta(category_meta_key(uint32_t(r.nvtx.id), dom), text);
      break;
    }
    default: break;
  }
}

void Collector::link_stack(const Drained& d, trace::RecType op_type) {
  if (!d.stack) return;
  trace::OpStackRec o{};
  o.corr = d.r.corr, o.stack = d.stack, o.op_type = uint16_t(op_type);
  w_.add(o, trace::RecType::OpStack);
}

void Collector::handle(const Drained& d) {
  const RawRecord& r = d.r;
  int64_t t0 = clock_.to_ns(r.t0), t1 = clock_.to_ns(r.t1);
  uint16_t device = device_of(r.ctx);
  uint32_t tid = d.owner->tid;
  bool pt = (r.flags & kRawPerThread) != 0;
  auto sid = [&] { return ops_.stream_id(r.stream, r.ctx, tid, pt, device); };
  switch (r.kind) {
    case RawKind::Kernel:
    case RawKind::Memcpy:
    case RawKind::Memset:
      link_stack(d, r.kind == RawKind::Kernel   ? trace::RecType::Kernel
                    : r.kind == RawKind::Memcpy ? trace::RecType::Memcpy
                                                : trace::RecType::Memset);
      add_gpu_op(d, t0, t1, device, sid());
      return;  // the op holds the owner reference until it is written
    case RawKind::Sync:
    case RawKind::StreamWait: {
      trace::SyncRec s{};
      s.cpu_begin = t0, s.cpu_end = t1, s.event = reinterpret_cast<uint64_t>(r.ev.event), s.tid = tid;
      bool has_stream = r.kind == RawKind::StreamWait || r.sub == uint8_t(trace::SyncKind::Stream) ||
                        r.sub == uint8_t(trace::SyncKind::StreamQuery);
      s.stream = has_stream ? sid() : 0;
      s.device = device, s.api = r.api, s.result = r.result, s.corr = r.corr;
      s.kind = r.kind == RawKind::StreamWait ? uint8_t(trace::SyncKind::StreamWait) : r.sub;
      if (r.kind == RawKind::StreamWait && r.result == CUDA_SUCCESS) ops_.stream_waits(s.stream, r.ev.event);
      link_stack(d, trace::RecType::Sync);
      w_.add(s, trace::RecType::Sync);
      break;
    }
    case RawKind::EventRecord: {
      trace::ApiRec a{};
      a.cpu_begin = t0, a.cpu_end = t1, a.corr = r.corr, a.arg = reinterpret_cast<uint64_t>(r.ev.event);
      a.tid = tid, a.stream = sid(), a.api = r.api, a.device = device, a.result = r.result;
      if (r.result == CUDA_SUCCESS) ops_.event_recorded(r.ev.event, a.stream);
      w_.add(a, trace::RecType::Api);
      break;
    }
    case RawKind::Memory: {
      trace::MemoryRec m{};
      m.cpu_begin = t0, m.cpu_end = t1, m.address = r.mem.address, m.bytes = r.mem.bytes, m.tid = tid;
      m.stream = r.stream ? sid() : 0;
      m.device = device, m.api = r.api, m.result = r.result, m.op = r.sub, m.mem_kind = r.mem.mem_kind;
      w_.add(m, trace::RecType::Memory);
      break;
    }
    case RawKind::RangePush:
    case RawKind::RangePop:
    case RawKind::RangeStart:
    case RawKind::RangeEnd:
    case RawKind::Mark:
    case RawKind::ThreadName:
    case RawKind::CategoryName: handle_annotation(d, t0); break;
    case RawKind::Window: window_edge(trace::WindowEdge(r.sub), t0, r.nvtx.name ? r.nvtx.name : "api"); break;
    case RawKind::Context: break;  // consumed by read_records
  }
  --d.owner->pending_refs;
}

}  // namespace cutrace
