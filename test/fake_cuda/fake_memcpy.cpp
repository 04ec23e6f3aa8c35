// Memory copies. Every flavour becomes a CopyDesc that really moves the bytes (device memory is
// host memory) and occupies the stream for 1000 + bytes/10 ns. Sides declared as device memory
// must lie inside a tracked allocation (else CUDA_ERROR_INVALID_VALUE); host and unified sides are
// trusted. CUDA arrays are not supported (CUDA_ERROR_NOT_SUPPORTED). Synchronous variants block
// the caller until the copy's end on the legacy stream (`_ptds`: the per-thread stream).
#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::CopyDesc;
using fake::DefaultStream;
using fake::Lock;

enum class Check { kHost, kDevice };

constexpr bool kBlocking = true;
constexpr bool kAsync = false;

char* asPtr(CUdeviceptr p) { return reinterpret_cast<char*>(p); }

// Validates and submits a linear copy of n bytes.
CUresult copyLinear(DefaultStream d, CUstream hStream, void* dst, Check dstCheck, const void* src, Check srcCheck,
                    size_t n, bool blocking) {
  if (CUresult r = fake::checkInit()) return r;
  if (n > 0 && (dst == nullptr || src == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  auto devOk = [n](const void* p, Check c) {
    return c == Check::kHost || fake::deviceRangeValid(reinterpret_cast<CUdeviceptr>(p), n);
  };
  if (!devOk(dst, dstCheck) || !devOk(src, srcCheck)) return CUDA_ERROR_INVALID_VALUE;
  CopyDesc copy;
  copy.src = static_cast<const char*>(src);
  copy.dst = static_cast<char*>(dst);
  copy.widthBytes = copy.srcPitch = copy.dstPitch = n;
  copy.srcSlicePitch = copy.dstSlicePitch = n;
  return fake::submitLocked(lock, hStream, d, fake::copyOp(copy), blocking);
}

// One side of a 2D/3D copy, in the fields shared by CUDA_MEMCPY2D/3D/3D_PEER.
struct Side {
  CUmemorytype type;
  const void* host;
  CUdeviceptr device;
  size_t x, y, z, pitch, height;
};

// Resolves a side to its first byte, checking a device side's whole extent (lock held).
CUresult resolveSide(const Side& s, size_t width, size_t rows, size_t depth, char** out) {
  if (rows > 1 && s.pitch < width) return CUDA_ERROR_INVALID_VALUE;
  if (depth > 1 && s.height < rows) return CUDA_ERROR_INVALID_VALUE;
  size_t offset = (s.z * s.height + s.y) * s.pitch + s.x;
  bool empty = width == 0 || rows == 0 || depth == 0;
  size_t extent = empty ? 0 : ((depth - 1) * s.height + (rows - 1)) * s.pitch + width;
  switch (s.type) {
    case CU_MEMORYTYPE_HOST: *out = static_cast<char*>(const_cast<void*>(s.host)) + offset; break;
    case CU_MEMORYTYPE_DEVICE:
      if (!fake::deviceRangeValid(s.device + offset, extent)) return CUDA_ERROR_INVALID_VALUE;
      *out = asPtr(s.device) + offset;
      break;
    case CU_MEMORYTYPE_UNIFIED: *out = asPtr(s.device) + offset; break;
    case CU_MEMORYTYPE_ARRAY: return CUDA_ERROR_NOT_SUPPORTED;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return (*out == nullptr && extent > 0) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult makeCopy(const Side& src, const Side& dst, size_t width, size_t rows, size_t depth, CopyDesc* out) {
  char* srcPtr = nullptr;
  char* dstPtr = nullptr;
  if (CUresult r = resolveSide(src, width, rows, depth, &srcPtr)) return r;
  if (CUresult r = resolveSide(dst, width, rows, depth, &dstPtr)) return r;
  out->src = srcPtr;
  out->dst = dstPtr;
  out->widthBytes = width;
  out->height = rows;
  out->depth = depth;
  out->srcPitch = src.pitch;
  out->srcSlicePitch = src.pitch * src.height;
  out->dstPitch = dst.pitch;
  out->dstSlicePitch = dst.pitch * dst.height;
  return CUDA_SUCCESS;
}

template <class P>
Side srcSide(const P& p, size_t z, size_t height) {
  return Side{p.srcMemoryType, p.srcHost, p.srcDevice, p.srcXInBytes, p.srcY, z, p.srcPitch, height};
}

template <class P>
Side dstSide(const P& p, size_t z, size_t height) {
  return Side{p.dstMemoryType, p.dstHost, p.dstDevice, p.dstXInBytes, p.dstY, z, p.dstPitch, height};
}

CUresult copy2D(DefaultStream d, const CUDA_MEMCPY2D* p, CUstream hStream, bool blocking) {
  if (CUresult r = fake::checkInit()) return r;
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CopyDesc copy;
  size_t rows = p->Height;
  if (CUresult r = makeCopy(srcSide(*p, 0, rows), dstSide(*p, 0, rows), p->WidthInBytes, rows, 1, &copy)) {
    return r;
  }
  return fake::submitLocked(lock, hStream, d, fake::copyOp(copy), blocking);
}

template <class P>
CUresult copy3DLocked(Lock& lock, DefaultStream d, const P* p, CUstream hStream, bool blocking) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (p->srcLOD != 0 || p->dstLOD != 0) return CUDA_ERROR_INVALID_VALUE;
  CopyDesc copy;
  if (CUresult r = makeCopy(srcSide(*p, p->srcZ, p->srcHeight), dstSide(*p, p->dstZ, p->dstHeight), p->WidthInBytes,
                            p->Height, p->Depth, &copy)) {
    return r;
  }
  return fake::submitLocked(lock, hStream, d, fake::copyOp(copy), blocking);
}

CUresult copy3D(DefaultStream d, const CUDA_MEMCPY3D* p, CUstream hStream, bool blocking) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  return copy3DLocked(lock, d, p, hStream, blocking);
}

CUresult copy3DPeer(DefaultStream d, const CUDA_MEMCPY3D_PEER* p, CUstream hStream, bool blocking) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  if (p != nullptr && (!fake::lookup<CUctx_st>(p->srcContext) || !fake::lookup<CUctx_st>(p->dstContext))) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return copy3DLocked(lock, d, p, hStream, blocking);
}

CUresult copyPeer(DefaultStream d, CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n,
                  CUstream hStream, bool blocking) {
  if (CUresult r = fake::checkInit()) return r;
  {
    Lock lock = fake::lockState();
    if (!fake::lookup<CUctx_st>(dstCtx) || !fake::lookup<CUctx_st>(srcCtx)) {
      return CUDA_ERROR_INVALID_CONTEXT;
    }
  }
  return copyLinear(d, hStream, asPtr(dst), Check::kDevice, asPtr(src), Check::kDevice, n, blocking);
}

// ---- the per-API adapters (stream-selection mode first, as FAKE_EXPORT_PT* expects) ----------

CUresult memcpySync(DefaultStream d, CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return copyLinear(d, nullptr, asPtr(dst), Check::kHost, asPtr(src), Check::kHost, n, kBlocking);
}
CUresult memcpyAsync(DefaultStream d, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return copyLinear(d, s, asPtr(dst), Check::kHost, asPtr(src), Check::kHost, n, kAsync);
}
CUresult htodSync(DefaultStream d, CUdeviceptr dst, const void* src, size_t n) {
  return copyLinear(d, nullptr, asPtr(dst), Check::kDevice, src, Check::kHost, n, kBlocking);
}
CUresult htodAsync(DefaultStream d, CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return copyLinear(d, s, asPtr(dst), Check::kDevice, src, Check::kHost, n, kAsync);
}
CUresult dtohSync(DefaultStream d, void* dst, CUdeviceptr src, size_t n) {
  return copyLinear(d, nullptr, dst, Check::kHost, asPtr(src), Check::kDevice, n, kBlocking);
}
CUresult dtohAsync(DefaultStream d, void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return copyLinear(d, s, dst, Check::kHost, asPtr(src), Check::kDevice, n, kAsync);
}
CUresult dtodSync(DefaultStream d, CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return copyLinear(d, nullptr, asPtr(dst), Check::kDevice, asPtr(src), Check::kDevice, n, kBlocking);
}
CUresult dtodAsync(DefaultStream d, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return copyLinear(d, s, asPtr(dst), Check::kDevice, asPtr(src), Check::kDevice, n, kAsync);
}
CUresult peerSync(DefaultStream d, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
  return copyPeer(d, dst, dc, src, sc, n, nullptr, kBlocking);
}
CUresult peerAsync(DefaultStream d, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
                   CUstream s) {
  return copyPeer(d, dst, dc, src, sc, n, s, kAsync);
}
CUresult copy2DSync(DefaultStream d, const CUDA_MEMCPY2D* p) { return copy2D(d, p, nullptr, kBlocking); }
CUresult copy2DAsync(DefaultStream d, const CUDA_MEMCPY2D* p, CUstream s) { return copy2D(d, p, s, kAsync); }
CUresult copy3DSync(DefaultStream d, const CUDA_MEMCPY3D* p) { return copy3D(d, p, nullptr, kBlocking); }
CUresult copy3DAsync(DefaultStream d, const CUDA_MEMCPY3D* p, CUstream s) { return copy3D(d, p, s, kAsync); }
CUresult copy3DPeerSync(DefaultStream d, const CUDA_MEMCPY3D_PEER* p) { return copy3DPeer(d, p, nullptr, kBlocking); }
CUresult copy3DPeerAsync(DefaultStream d, const CUDA_MEMCPY3D_PEER* p, CUstream s) {
  return copy3DPeer(d, p, s, kAsync);
}

}  // namespace

namespace fake {

CUresult copyFrom3D(const CUDA_MEMCPY3D& p, CopyDesc* out) {
  if (p.srcLOD != 0 || p.dstLOD != 0) return CUDA_ERROR_INVALID_VALUE;
  return makeCopy(srcSide(p, p.srcZ, p.srcHeight), dstSide(p, p.dstZ, p.dstHeight), p.WidthInBytes, p.Height, p.Depth,
                  out);
}

}  // namespace fake

// ---- exports ----------------------------------------------------------------------------------

FAKE_EXPORT_PTDS(cuMemcpy, memcpySync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount))
FAKE_EXPORT_PTSZ(cuMemcpyAsync, memcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
                 (dst, src, ByteCount, hStream))

FAKE_EXPORT_PTDS(cuMemcpyHtoD_v2, htodSync, (CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount),
                 (dstDevice, srcHost, ByteCount))
FAKE_EXPORT_PTSZ(cuMemcpyHtoDAsync_v2, htodAsync,
                 (CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream),
                 (dstDevice, srcHost, ByteCount, hStream))
FAKE_EXPORT_PTDS(cuMemcpyDtoH_v2, dtohSync, (void* dstHost, CUdeviceptr srcDevice, size_t ByteCount),
                 (dstHost, srcDevice, ByteCount))
FAKE_EXPORT_PTSZ(cuMemcpyDtoHAsync_v2, dtohAsync,
                 (void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
                 (dstHost, srcDevice, ByteCount, hStream))
FAKE_EXPORT_PTDS(cuMemcpyDtoD_v2, dtodSync, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
                 (dstDevice, srcDevice, ByteCount))
FAKE_EXPORT_PTSZ(cuMemcpyDtoDAsync_v2, dtodAsync,
                 (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
                 (dstDevice, srcDevice, ByteCount, hStream))

FAKE_EXPORT_PTDS(cuMemcpyPeer, peerSync,
                 (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                  size_t ByteCount),
                 (dstDevice, dstContext, srcDevice, srcContext, ByteCount))
FAKE_EXPORT_PTSZ(cuMemcpyPeerAsync, peerAsync,
                 (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                  size_t ByteCount, CUstream hStream),
                 (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream))

FAKE_EXPORT_PTDS(cuMemcpy2D_v2, copy2DSync, (const CUDA_MEMCPY2D* pCopy), (pCopy))
FAKE_EXPORT_PTDS(cuMemcpy2DUnaligned_v2, copy2DSync, (const CUDA_MEMCPY2D* pCopy), (pCopy))
FAKE_EXPORT_PTSZ(cuMemcpy2DAsync_v2, copy2DAsync, (const CUDA_MEMCPY2D* pCopy, CUstream hStream), (pCopy, hStream))
FAKE_EXPORT_PTDS(cuMemcpy3D_v2, copy3DSync, (const CUDA_MEMCPY3D* pCopy), (pCopy))
FAKE_EXPORT_PTSZ(cuMemcpy3DAsync_v2, copy3DAsync, (const CUDA_MEMCPY3D* pCopy, CUstream hStream), (pCopy, hStream))
FAKE_EXPORT_PTDS(cuMemcpy3DPeer, copy3DPeerSync, (const CUDA_MEMCPY3D_PEER* pCopy), (pCopy))
FAKE_EXPORT_PTSZ(cuMemcpy3DPeerAsync, copy3DPeerAsync, (const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream),
                 (pCopy, hStream))
