// Memory copies (all sync/async, 2D/3D, peer variants) and memsets.
#include "shim/op.h"

namespace cutrace {
namespace {

using trace::CopyKind;
using trace::MemKind;

// Host memory whose pinned/pageable nature the collector determines from the address.
constexpr uint8_t kHost = uint8_t(MemKind::Unknown);
constexpr uint8_t kDev = uint8_t(MemKind::Device);

struct CopyDesc {
  CopyKind kind;
  uint64_t bytes, src, dst;
  uint8_t src_kind, dst_kind;
};

template <class PFN, class Call>
CUresult copy(const Binding& b, CUstream s, bool async, const CopyDesc& d, Call&& call) {
  return traced_gpu_op<PFN>(
      b, RawKind::Memcpy, s, async ? kRawAsync : kRawBlocking,
      [&](RawRecord& r) {
        r.copy.bytes = d.bytes, r.copy.src = d.src, r.copy.dst = d.dst;
        r.copy.copy_kind = uint8_t(d.kind), r.copy.src_kind = d.src_kind, r.copy.dst_kind = d.dst_kind;
      },
      call);
}

uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Memory type of a 2D/3D descriptor side: host (classified later), device, array, unified.
uint8_t side_kind(CUmemorytype t) {
  switch (t) {
    case CU_MEMORYTYPE_DEVICE: return kDev;
    case CU_MEMORYTYPE_ARRAY: return uint8_t(MemKind::Array);
    default: return kHost;  // host or unified: classified from the address
  }
}
uint64_t side_addr(CUmemorytype t, const void* host, CUdeviceptr dev) {
  return t == CU_MEMORYTYPE_HOST ? u(host) : uint64_t(dev);
}
template <class D>
CopyDesc desc_nd(const D* p, uint64_t bytes) {
  if (!p) return {CopyKind::Unknown, 0, 0, 0, kHost, kHost};
  return {CopyKind::Unknown,
          bytes,
          side_addr(p->srcMemoryType, p->srcHost, p->srcDevice),
          side_addr(p->dstMemoryType, p->dstHost, p->dstDevice),
          side_kind(p->srcMemoryType),
          side_kind(p->dstMemoryType)};
}
uint64_t bytes_2d(const CUDA_MEMCPY2D* p) { return p ? uint64_t(p->WidthInBytes) * p->Height : 0; }
template <class D>
uint64_t bytes_3d(const D* p) {
  return p ? uint64_t(p->WidthInBytes) * p->Height * p->Depth : 0;
}

// ---- 1D copies ----
using PFN_cpy = CUresult (*)(CUdeviceptr, CUdeviceptr, size_t);
CUresult cpy(const Binding& b, CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return copy<PFN_cpy>(b, nullptr, false, {CopyKind::Unknown, n, src, dst, kHost, kHost},
                       [&](PFN_cpy f) { return f(dst, src, n); });
}
using PFN_cpy_async = CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cpy_async(const Binding& b, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return copy<PFN_cpy_async>(b, s, true, {CopyKind::Unknown, n, src, dst, kHost, kHost},
                             [&](PFN_cpy_async f) { return f(dst, src, n, s); });
}
using PFN_peer = CUresult (*)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
CUresult peer(const Binding& b, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
  return copy<PFN_peer>(b, nullptr, false, {CopyKind::PtoP, n, src, dst, kDev, kDev},
                        [&](PFN_peer f) { return f(dst, dc, src, sc, n); });
}
using PFN_peer_async = CUresult (*)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
CUresult peer_async(const Binding& b, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
                    CUstream s) {
  return copy<PFN_peer_async>(b, s, true, {CopyKind::PtoP, n, src, dst, kDev, kDev},
                              [&](PFN_peer_async f) { return f(dst, dc, src, sc, n, s); });
}
using PFN_htod = CUresult (*)(CUdeviceptr, const void*, size_t);
CUresult htod(const Binding& b, CUdeviceptr dst, const void* src, size_t n) {
  return copy<PFN_htod>(b, nullptr, false, {CopyKind::HtoD, n, u(src), dst, kHost, kDev},
                        [&](PFN_htod f) { return f(dst, src, n); });
}
using PFN_htod_async = CUresult (*)(CUdeviceptr, const void*, size_t, CUstream);
CUresult htod_async(const Binding& b, CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return copy<PFN_htod_async>(b, s, true, {CopyKind::HtoD, n, u(src), dst, kHost, kDev},
                              [&](PFN_htod_async f) { return f(dst, src, n, s); });
}
using PFN_dtoh = CUresult (*)(void*, CUdeviceptr, size_t);
CUresult dtoh(const Binding& b, void* dst, CUdeviceptr src, size_t n) {
  return copy<PFN_dtoh>(b, nullptr, false, {CopyKind::DtoH, n, src, u(dst), kDev, kHost},
                        [&](PFN_dtoh f) { return f(dst, src, n); });
}
using PFN_dtoh_async = CUresult (*)(void*, CUdeviceptr, size_t, CUstream);
CUresult dtoh_async(const Binding& b, void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return copy<PFN_dtoh_async>(b, s, true, {CopyKind::DtoH, n, src, u(dst), kDev, kHost},
                              [&](PFN_dtoh_async f) { return f(dst, src, n, s); });
}
CUresult dtod(const Binding& b, CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return copy<PFN_cpy>(b, nullptr, false, {CopyKind::DtoD, n, src, dst, kDev, kDev},
                       [&](PFN_cpy f) { return f(dst, src, n); });
}
CUresult dtod_async(const Binding& b, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return copy<PFN_cpy_async>(b, s, true, {CopyKind::DtoD, n, src, dst, kDev, kDev},
                             [&](PFN_cpy_async f) { return f(dst, src, n, s); });
}

// ---- 2D / 3D copies ----
using PFN_2d = CUresult (*)(const CUDA_MEMCPY2D*);
CUresult cpy2d(const Binding& b, const CUDA_MEMCPY2D* p) {
  return copy<PFN_2d>(b, nullptr, false, desc_nd(p, bytes_2d(p)), [&](PFN_2d f) { return f(p); });
}
using PFN_2d_async = CUresult (*)(const CUDA_MEMCPY2D*, CUstream);
CUresult cpy2d_async(const Binding& b, const CUDA_MEMCPY2D* p, CUstream s) {
  return copy<PFN_2d_async>(b, s, true, desc_nd(p, bytes_2d(p)), [&](PFN_2d_async f) { return f(p, s); });
}
using PFN_3d = CUresult (*)(const CUDA_MEMCPY3D*);
CUresult cpy3d(const Binding& b, const CUDA_MEMCPY3D* p) {
  return copy<PFN_3d>(b, nullptr, false, desc_nd(p, bytes_3d(p)), [&](PFN_3d f) { return f(p); });
}
using PFN_3d_async = CUresult (*)(const CUDA_MEMCPY3D*, CUstream);
CUresult cpy3d_async(const Binding& b, const CUDA_MEMCPY3D* p, CUstream s) {
  return copy<PFN_3d_async>(b, s, true, desc_nd(p, bytes_3d(p)), [&](PFN_3d_async f) { return f(p, s); });
}
CopyDesc desc_peer(const CUDA_MEMCPY3D_PEER* p) {
  CopyDesc d = desc_nd(p, bytes_3d(p));
  d.kind = CopyKind::PtoP;
  return d;
}
using PFN_3d_peer = CUresult (*)(const CUDA_MEMCPY3D_PEER*);
CUresult cpy3d_peer(const Binding& b, const CUDA_MEMCPY3D_PEER* p) {
  return copy<PFN_3d_peer>(b, nullptr, false, desc_peer(p), [&](PFN_3d_peer f) { return f(p); });
}
using PFN_3d_peer_async = CUresult (*)(const CUDA_MEMCPY3D_PEER*, CUstream);
CUresult cpy3d_peer_async(const Binding& b, const CUDA_MEMCPY3D_PEER* p, CUstream s) {
  return copy<PFN_3d_peer_async>(b, s, true, desc_peer(p), [&](PFN_3d_peer_async f) { return f(p, s); });
}

// ---- memsets ----
template <class PFN, class Call>
CUresult set(const Binding& b, CUstream s, bool async, uint64_t dst, uint64_t bytes, uint32_t value, uint8_t elem,
             Call&& call) {
  return traced_gpu_op<PFN>(
      b, RawKind::Memset, s, async ? kRawAsync : kRawBlocking,
      [&](RawRecord& r) {
        r.set.bytes = bytes, r.set.value = value, r.set.elem = elem;
        (void)dst;
      },
      call);
}

template <class T>
CUresult setd(const Binding& b, CUdeviceptr p, T v, size_t n) {
  using PFN = CUresult (*)(CUdeviceptr, T, size_t);
  return set<PFN>(b, nullptr, false, p, n * sizeof(T), v, sizeof(T), [&](PFN f) { return f(p, v, n); });
}
template <class T>
CUresult setd_async(const Binding& b, CUdeviceptr p, T v, size_t n, CUstream s) {
  using PFN = CUresult (*)(CUdeviceptr, T, size_t, CUstream);
  return set<PFN>(b, s, true, p, n * sizeof(T), v, sizeof(T), [&](PFN f) { return f(p, v, n, s); });
}
template <class T>
CUresult setd2d(const Binding& b, CUdeviceptr p, size_t pitch, T v, size_t w, size_t h) {
  using PFN = CUresult (*)(CUdeviceptr, size_t, T, size_t, size_t);
  return set<PFN>(b, nullptr, false, p, w * h * sizeof(T), v, sizeof(T), [&](PFN f) { return f(p, pitch, v, w, h); });
}
template <class T>
CUresult setd2d_async(const Binding& b, CUdeviceptr p, size_t pitch, T v, size_t w, size_t h, CUstream s) {
  using PFN = CUresult (*)(CUdeviceptr, size_t, T, size_t, size_t, CUstream);
  return set<PFN>(b, s, true, p, w * h * sizeof(T), v, sizeof(T), [&](PFN f) { return f(p, pitch, v, w, h, s); });
}

using uc = unsigned char;
using us = unsigned short;
using ui = unsigned int;
using PFN_d8 = CUresult (*)(CUdeviceptr, uc, size_t);
using PFN_d16 = CUresult (*)(CUdeviceptr, us, size_t);
using PFN_d32 = CUresult (*)(CUdeviceptr, ui, size_t);
using PFN_d8a = CUresult (*)(CUdeviceptr, uc, size_t, CUstream);
using PFN_d16a = CUresult (*)(CUdeviceptr, us, size_t, CUstream);
using PFN_d32a = CUresult (*)(CUdeviceptr, ui, size_t, CUstream);
using PFN_2d8 = CUresult (*)(CUdeviceptr, size_t, uc, size_t, size_t);
using PFN_2d16 = CUresult (*)(CUdeviceptr, size_t, us, size_t, size_t);
using PFN_2d32 = CUresult (*)(CUdeviceptr, size_t, ui, size_t, size_t);
using PFN_2d8a = CUresult (*)(CUdeviceptr, size_t, uc, size_t, size_t, CUstream);
using PFN_2d16a = CUresult (*)(CUdeviceptr, size_t, us, size_t, size_t, CUstream);
using PFN_2d32a = CUresult (*)(CUdeviceptr, size_t, ui, size_t, size_t, CUstream);

}  // namespace

CUTRACE_DIRECT_WHEN_OFF(cpy)
CUTRACE_DIRECT_WHEN_OFF(cpy_async)
CUTRACE_DIRECT_WHEN_OFF(peer)
CUTRACE_DIRECT_WHEN_OFF(peer_async)
CUTRACE_DIRECT_WHEN_OFF(htod)
CUTRACE_DIRECT_WHEN_OFF(htod_async)
CUTRACE_DIRECT_WHEN_OFF(dtoh)
CUTRACE_DIRECT_WHEN_OFF(dtoh_async)
CUTRACE_DIRECT_WHEN_OFF(dtod)
CUTRACE_DIRECT_WHEN_OFF(dtod_async)
CUTRACE_DIRECT_WHEN_OFF(cpy2d)
CUTRACE_DIRECT_WHEN_OFF(cpy2d_async)
CUTRACE_DIRECT_WHEN_OFF(cpy3d)
CUTRACE_DIRECT_WHEN_OFF(cpy3d_async)
CUTRACE_DIRECT_WHEN_OFF(cpy3d_peer)
CUTRACE_DIRECT_WHEN_OFF(cpy3d_peer_async)
CUTRACE_DIRECT_WHEN_OFF(setd<uc>)
CUTRACE_DIRECT_WHEN_OFF(setd<us>)
CUTRACE_DIRECT_WHEN_OFF(setd<ui>)
CUTRACE_DIRECT_WHEN_OFF(setd_async<uc>)
CUTRACE_DIRECT_WHEN_OFF(setd_async<us>)
CUTRACE_DIRECT_WHEN_OFF(setd_async<ui>)
CUTRACE_DIRECT_WHEN_OFF(setd2d<uc>)
CUTRACE_DIRECT_WHEN_OFF(setd2d<us>)
CUTRACE_DIRECT_WHEN_OFF(setd2d<ui>)
CUTRACE_DIRECT_WHEN_OFF(setd2d_async<uc>)
CUTRACE_DIRECT_WHEN_OFF(setd2d_async<us>)
CUTRACE_DIRECT_WHEN_OFF(setd2d_async<ui>)
}  // namespace cutrace

using namespace cutrace;
CUTRACE_FUNC_PT(f_cpy, PFN_cpy, cpy, "cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds)
CUTRACE_FUNC_PT(f_cpy_async, PFN_cpy_async, cpy_async, "cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz)
CUTRACE_FUNC_PT(f_peer, PFN_peer, peer, "cuMemcpyPeer", 4000, cuMemcpyPeer, cuMemcpyPeer_ptds)
CUTRACE_FUNC_PT(f_peer_async, PFN_peer_async, peer_async, "cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync,
                cuMemcpyPeerAsync_ptsz)
CUTRACE_FUNC_PT(f_htod, PFN_htod, htod, "cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds)
CUTRACE_FUNC_PT(f_htod_async, PFN_htod_async, htod_async, "cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2,
                cuMemcpyHtoDAsync_v2_ptsz)
CUTRACE_FUNC_PT(f_dtoh, PFN_dtoh, dtoh, "cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds)
CUTRACE_FUNC_PT(f_dtoh_async, PFN_dtoh_async, dtoh_async, "cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2,
                cuMemcpyDtoHAsync_v2_ptsz)
CUTRACE_FUNC_PT(f_dtod, PFN_cpy, dtod, "cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds)
CUTRACE_FUNC_PT(f_dtod_async, PFN_cpy_async, dtod_async, "cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2,
                cuMemcpyDtoDAsync_v2_ptsz)
CUTRACE_FUNC_PT(f_2d, PFN_2d, cpy2d, "cuMemcpy2D", 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds)
CUTRACE_FUNC_PT(f_2du, PFN_2d, cpy2d, "cuMemcpy2DUnaligned", 3020, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds)
CUTRACE_FUNC_PT(f_2d_async, PFN_2d_async, cpy2d_async, "cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2,
                cuMemcpy2DAsync_v2_ptsz)
CUTRACE_FUNC_PT(f_3d, PFN_3d, cpy3d, "cuMemcpy3D", 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds)
CUTRACE_FUNC_PT(f_3d_async, PFN_3d_async, cpy3d_async, "cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2,
                cuMemcpy3DAsync_v2_ptsz)
CUTRACE_FUNC_PT(f_3d_peer, PFN_3d_peer, cpy3d_peer, "cuMemcpy3DPeer", 4000, cuMemcpy3DPeer, cuMemcpy3DPeer_ptds)
CUTRACE_FUNC_PT(f_3d_peer_async, PFN_3d_peer_async, cpy3d_peer_async, "cuMemcpy3DPeerAsync", 4000, cuMemcpy3DPeerAsync,
                cuMemcpy3DPeerAsync_ptsz)
CUTRACE_FUNC_PT(f_d8, PFN_d8, setd<uc>, "cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds)
CUTRACE_FUNC_PT(f_d16, PFN_d16, setd<us>, "cuMemsetD16", 3020, cuMemsetD16_v2, cuMemsetD16_v2_ptds)
CUTRACE_FUNC_PT(f_d32, PFN_d32, setd<ui>, "cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds)
CUTRACE_FUNC_PT(f_d8a, PFN_d8a, setd_async<uc>, "cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz)
CUTRACE_FUNC_PT(f_d16a, PFN_d16a, setd_async<us>, "cuMemsetD16Async", 3020, cuMemsetD16Async, cuMemsetD16Async_ptsz)
CUTRACE_FUNC_PT(f_d32a, PFN_d32a, setd_async<ui>, "cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz)
CUTRACE_FUNC_PT(f_2d8, PFN_2d8, setd2d<uc>, "cuMemsetD2D8", 3020, cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds)
CUTRACE_FUNC_PT(f_2d16, PFN_2d16, setd2d<us>, "cuMemsetD2D16", 3020, cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds)
CUTRACE_FUNC_PT(f_2d32, PFN_2d32, setd2d<ui>, "cuMemsetD2D32", 3020, cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds)
CUTRACE_FUNC_PT(f_2d8a, PFN_2d8a, setd2d_async<uc>, "cuMemsetD2D8Async", 3020, cuMemsetD2D8Async,
                cuMemsetD2D8Async_ptsz)
CUTRACE_FUNC_PT(f_2d16a, PFN_2d16a, setd2d_async<us>, "cuMemsetD2D16Async", 3020, cuMemsetD2D16Async,
                cuMemsetD2D16Async_ptsz)
CUTRACE_FUNC_PT(f_2d32a, PFN_2d32a, setd2d_async<ui>, "cuMemsetD2D32Async", 3020, cuMemsetD2D32Async,
                cuMemsetD2D32Async_ptsz)
