// Allocations and frees (device, stream-ordered, pinned host, managed): enough to draw device
// memory in use over time.
#include "shim/op.h"

namespace cutrace {
namespace {

using trace::MemKind;
using trace::MemOp;

// `bytes` and `addr` are read after the real call (they may come from its outputs).
template <class PFN, class Bytes, class Addr, class Call>
CUresult mem(const Binding& b, MemOp op, MemKind kind, CUstream s, Bytes&& bytes, Addr&& addr, Call&& call) {
  return traced_call<PFN>(
      b, RawKind::Memory, s,
      [&](RawRecord& r, CUresult res) {
        r.sub = uint8_t(op);
        r.mem.mem_kind = uint8_t(kind);
        r.mem.bytes = res == CUDA_SUCCESS ? bytes() : 0;
        r.mem.address = res == CUDA_SUCCESS ? addr() : 0;
      },
      call);
}

using PFN_alloc = CUresult (*)(CUdeviceptr*, size_t);
CUresult alloc(const Binding& b, CUdeviceptr* p, size_t n) {
  return mem<PFN_alloc>(
      b, MemOp::Alloc, MemKind::Device, nullptr, [&] { return uint64_t(n); }, [&] { return uint64_t(*p); },
      [&](PFN_alloc f) { return f(p, n); });
}
using PFN_alloc_pitch = CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
CUresult alloc_pitch(const Binding& b, CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned elem) {
  return mem<PFN_alloc_pitch>(
      b, MemOp::Alloc, MemKind::Device, nullptr, [&] { return uint64_t(*pitch) * h; }, [&] { return uint64_t(*p); },
      [&](PFN_alloc_pitch f) { return f(p, pitch, w, h, elem); });
}
using PFN_free = CUresult (*)(CUdeviceptr);
CUresult free_dev(const Binding& b, CUdeviceptr p) {
  return mem<PFN_free>(
      b, MemOp::Free, MemKind::Device, nullptr, [] { return uint64_t(0); }, [&] { return uint64_t(p); },
      [&](PFN_free f) { return f(p); });
}
using PFN_alloc_host = CUresult (*)(void**, size_t);
CUresult alloc_host(const Binding& b, void** p, size_t n) {
  return mem<PFN_alloc_host>(
      b, MemOp::Alloc, MemKind::Pinned, nullptr, [&] { return uint64_t(n); },
      [&] { return reinterpret_cast<uint64_t>(*p); }, [&](PFN_alloc_host f) { return f(p, n); });
}
using PFN_host_alloc = CUresult (*)(void**, size_t, unsigned);
CUresult host_alloc(const Binding& b, void** p, size_t n, unsigned flags) {
  return mem<PFN_host_alloc>(
      b, MemOp::Alloc, MemKind::Pinned, nullptr, [&] { return uint64_t(n); },
      [&] { return reinterpret_cast<uint64_t>(*p); }, [&](PFN_host_alloc f) { return f(p, n, flags); });
}
using PFN_free_host = CUresult (*)(void*);
CUresult free_host(const Binding& b, void* p) {
  return mem<PFN_free_host>(
      b, MemOp::Free, MemKind::Pinned, nullptr, [] { return uint64_t(0); },
      [&] { return reinterpret_cast<uint64_t>(p); }, [&](PFN_free_host f) { return f(p); });
}
using PFN_alloc_managed = CUresult (*)(CUdeviceptr*, size_t, unsigned);
CUresult alloc_managed(const Binding& b, CUdeviceptr* p, size_t n, unsigned flags) {
  return mem<PFN_alloc_managed>(
      b, MemOp::Alloc, MemKind::Managed, nullptr, [&] { return uint64_t(n); }, [&] { return uint64_t(*p); },
      [&](PFN_alloc_managed f) { return f(p, n, flags); });
}
using PFN_alloc_async = CUresult (*)(CUdeviceptr*, size_t, CUstream);
CUresult alloc_async(const Binding& b, CUdeviceptr* p, size_t n, CUstream s) {
  return mem<PFN_alloc_async>(
      b, MemOp::Alloc, MemKind::Device, s, [&] { return uint64_t(n); }, [&] { return uint64_t(*p); },
      [&](PFN_alloc_async f) { return f(p, n, s); });
}
using PFN_alloc_pool = CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
CUresult alloc_pool(const Binding& b, CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s) {
  return mem<PFN_alloc_pool>(
      b, MemOp::Alloc, MemKind::Device, s, [&] { return uint64_t(n); }, [&] { return uint64_t(*p); },
      [&](PFN_alloc_pool f) { return f(p, n, pool, s); });
}
using PFN_free_async = CUresult (*)(CUdeviceptr, CUstream);
CUresult free_async(const Binding& b, CUdeviceptr p, CUstream s) {
  return mem<PFN_free_async>(
      b, MemOp::Free, MemKind::Device, s, [] { return uint64_t(0); }, [&] { return uint64_t(p); },
      [&](PFN_free_async f) { return f(p, s); });
}

}  // namespace

CUTRACE_DIRECT_WHEN_OFF(alloc)
CUTRACE_DIRECT_WHEN_OFF(alloc_pitch)
CUTRACE_DIRECT_WHEN_OFF(free_dev)
CUTRACE_DIRECT_WHEN_OFF(alloc_host)
CUTRACE_DIRECT_WHEN_OFF(host_alloc)
CUTRACE_DIRECT_WHEN_OFF(free_host)
CUTRACE_DIRECT_WHEN_OFF(alloc_managed)
CUTRACE_DIRECT_WHEN_OFF(alloc_async)
CUTRACE_DIRECT_WHEN_OFF(alloc_pool)
CUTRACE_DIRECT_WHEN_OFF(free_async)
}  // namespace cutrace

using namespace cutrace;
CUTRACE_FUNC(f_alloc, PFN_alloc, alloc, "cuMemAlloc", 3020, cuMemAlloc_v2)
CUTRACE_FUNC(f_alloc_pitch, PFN_alloc_pitch, alloc_pitch, "cuMemAllocPitch", 3020, cuMemAllocPitch_v2)
CUTRACE_FUNC(f_free, PFN_free, free_dev, "cuMemFree", 3020, cuMemFree_v2)
CUTRACE_FUNC(f_alloc_host, PFN_alloc_host, alloc_host, "cuMemAllocHost", 3020, cuMemAllocHost_v2)
CUTRACE_FUNC(f_host_alloc, PFN_host_alloc, host_alloc, "cuMemHostAlloc", 2020, cuMemHostAlloc)
CUTRACE_FUNC(f_free_host, PFN_free_host, free_host, "cuMemFreeHost", 2000, cuMemFreeHost)
CUTRACE_FUNC(f_alloc_managed, PFN_alloc_managed, alloc_managed, "cuMemAllocManaged", 6000, cuMemAllocManaged)
CUTRACE_FUNC_PT(f_alloc_async, PFN_alloc_async, alloc_async, "cuMemAllocAsync", 11020, cuMemAllocAsync,
                cuMemAllocAsync_ptsz)
CUTRACE_FUNC_PT(f_alloc_pool, PFN_alloc_pool, alloc_pool, "cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync,
                cuMemAllocFromPoolAsync_ptsz)
CUTRACE_FUNC_PT(f_free_async, PFN_free_async, free_async, "cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz)
