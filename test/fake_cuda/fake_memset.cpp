// Memsets (cuMemsetD8/16/32, their 2D and Async forms). They really fill the target, which must
// lie inside a tracked allocation and be aligned to the element size, and occupy the stream for
// 500 + bytes/100 ns. Synchronous variants block until the fill's end.
#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::DefaultStream;

constexpr bool kBlocking = true;
constexpr bool kAsync = false;

CUresult memset2D(DefaultStream d, CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elementSize, size_t width,
                  size_t height, CUstream hStream, bool blocking) {
  if (CUresult r = fake::checkInit()) return r;
  fake::Lock lock = fake::lockState();
  fake::SetDesc set;
  if (CUresult r = fake::makeSet(dst, pitch, value, elementSize, width, height, &set)) return r;
  return fake::submitLocked(lock, hStream, d, fake::setOp(set), blocking);
}

CUresult memset1D(DefaultStream d, CUdeviceptr dst, uint32_t value, unsigned elementSize, size_t n, CUstream hStream,
                  bool blocking) {
  return memset2D(d, dst, n * elementSize, value, elementSize, n, 1, hStream, blocking);
}

// ---- the per-API adapters ----------------------------------------------------------------------

CUresult d8(DefaultStream d, CUdeviceptr p, unsigned char v, size_t n) {
  return memset1D(d, p, v, 1, n, nullptr, kBlocking);
}
CUresult d16(DefaultStream d, CUdeviceptr p, unsigned short v, size_t n) {
  return memset1D(d, p, v, 2, n, nullptr, kBlocking);
}
CUresult d32(DefaultStream d, CUdeviceptr p, unsigned v, size_t n) {
  return memset1D(d, p, v, 4, n, nullptr, kBlocking);
}
CUresult d8Async(DefaultStream d, CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
  return memset1D(d, p, v, 1, n, s, kAsync);
}
CUresult d16Async(DefaultStream d, CUdeviceptr p, unsigned short v, size_t n, CUstream s) {
  return memset1D(d, p, v, 2, n, s, kAsync);
}
CUresult d32Async(DefaultStream d, CUdeviceptr p, unsigned v, size_t n, CUstream s) {
  return memset1D(d, p, v, 4, n, s, kAsync);
}
CUresult d2d8(DefaultStream d, CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h) {
  return memset2D(d, p, pitch, v, 1, w, h, nullptr, kBlocking);
}
CUresult d2d16(DefaultStream d, CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h) {
  return memset2D(d, p, pitch, v, 2, w, h, nullptr, kBlocking);
}
CUresult d2d32(DefaultStream d, CUdeviceptr p, size_t pitch, unsigned v, size_t w, size_t h) {
  return memset2D(d, p, pitch, v, 4, w, h, nullptr, kBlocking);
}
CUresult d2d8Async(DefaultStream d, CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  return memset2D(d, p, pitch, v, 1, w, h, s, kAsync);
}
CUresult d2d16Async(DefaultStream d, CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  return memset2D(d, p, pitch, v, 2, w, h, s, kAsync);
}
CUresult d2d32Async(DefaultStream d, CUdeviceptr p, size_t pitch, unsigned v, size_t w, size_t h, CUstream s) {
  return memset2D(d, p, pitch, v, 4, w, h, s, kAsync);
}

}  // namespace

namespace fake {

CUresult makeSet(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elementSize, size_t width, size_t height,
                 SetDesc* out) {
  if (elementSize != 1 && elementSize != 2 && elementSize != 4) return CUDA_ERROR_INVALID_VALUE;
  if (dst % elementSize != 0 || (height > 1 && pitch % elementSize != 0)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t rowBytes = width * elementSize;
  if (height > 1 && pitch < rowBytes) return CUDA_ERROR_INVALID_VALUE;
  size_t extent = (width == 0 || height == 0) ? 0 : (height - 1) * pitch + rowBytes;
  if (!deviceRangeValid(dst, extent)) return CUDA_ERROR_INVALID_VALUE;
  out->dst = reinterpret_cast<char*>(dst);
  out->pitch = pitch;
  out->value = value;
  out->elementSize = elementSize;
  out->width = width;
  out->height = height;
  return CUDA_SUCCESS;
}

}  // namespace fake

FAKE_EXPORT_PTDS(cuMemsetD8_v2, d8, (CUdeviceptr dstDevice, unsigned char uc, size_t N), (dstDevice, uc, N))
FAKE_EXPORT_PTDS(cuMemsetD16_v2, d16, (CUdeviceptr dstDevice, unsigned short us, size_t N), (dstDevice, us, N))
FAKE_EXPORT_PTDS(cuMemsetD32_v2, d32, (CUdeviceptr dstDevice, unsigned int ui, size_t N), (dstDevice, ui, N))
FAKE_EXPORT_PTSZ(cuMemsetD8Async, d8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),
                 (dstDevice, uc, N, hStream))
FAKE_EXPORT_PTSZ(cuMemsetD16Async, d16Async, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream),
                 (dstDevice, us, N, hStream))
FAKE_EXPORT_PTSZ(cuMemsetD32Async, d32Async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),
                 (dstDevice, ui, N, hStream))
FAKE_EXPORT_PTDS(cuMemsetD2D8_v2, d2d8,
                 (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height),
                 (dstDevice, dstPitch, uc, Width, Height))
FAKE_EXPORT_PTDS(cuMemsetD2D16_v2, d2d16,
                 (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height),
                 (dstDevice, dstPitch, us, Width, Height))
FAKE_EXPORT_PTDS(cuMemsetD2D32_v2, d2d32,
                 (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height),
                 (dstDevice, dstPitch, ui, Width, Height))
FAKE_EXPORT_PTSZ(cuMemsetD2D8Async, d2d8Async,
                 (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height,
                  CUstream hStream),
                 (dstDevice, dstPitch, uc, Width, Height, hStream))
FAKE_EXPORT_PTSZ(cuMemsetD2D16Async, d2d16Async,
                 (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height,
                  CUstream hStream),
                 (dstDevice, dstPitch, us, Width, Height, hStream))
FAKE_EXPORT_PTSZ(cuMemsetD2D32Async, d2d32Async,
                 (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height,
                  CUstream hStream),
                 (dstDevice, dstPitch, ui, Width, Height, hStream))
