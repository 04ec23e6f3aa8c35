// Streams: creation, the special handles (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD),
// synchronisation and queries. Each (thread, context) pair gets its own per-thread default stream
// on first use. The legacy stream's implicit synchronisation with other blocking streams is not
// modelled: every stream has an independent timeline.
#include <algorithm>
#include <utility>

#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::DefaultStream;
using fake::Lock;

// The calling thread's per-thread default streams, keyed by context id (ids are never reused, so
// an entry of a destroyed context is simply never matched again).
thread_local std::vector<std::pair<uint64_t, CUstream_st*>> t_perThreadStreams;

constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;

CUstream_st* perThreadStream(CUctx_st* ctx) {
  for (auto& entry : t_perThreadStreams) {
    if (entry.first == ctx->id && fake::lookup<CUstream_st>(entry.second) != nullptr) {
      return entry.second;
    }
  }
  CUstream_st* stream = fake::newStream(ctx, 0, 0);
  stream->builtin = true;
  t_perThreadStreams.emplace_back(ctx->id, stream);
  return stream;
}

CUresult createStream(CUstream* phStream, unsigned flags, int priority) {
  if (CUresult r = fake::checkInit()) return r;
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  priority = std::min(kLeastPriority, std::max(kGreatestPriority, priority));
  *phStream = fake::newStream(ctx, flags, priority);
  return CUDA_SUCCESS;
}

CUresult destroyStream(CUstream handle) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  CUstream_st* stream = fake::lookup<CUstream_st>(handle);
  if (stream == nullptr || stream->builtin) return CUDA_ERROR_INVALID_HANDLE;
  fake::deleteStream(stream);
  return CUDA_SUCCESS;
}

CUresult streamSynchronize(DefaultStream d, CUstream handle) {
  Lock lock = fake::lockState();
  CUstream_st* stream = nullptr;
  if (CUresult r = fake::resolveStream(handle, d, &stream)) return r;
  if (stream->capture != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  int64_t readyNs = stream->readyNs;
  ++fake::state().stats.syncs;
  lock.unlock();
  fake::sleepUntil(readyNs);
  return CUDA_SUCCESS;
}

CUresult streamQuery(DefaultStream d, CUstream handle) {
  return fake::withStream(handle, d, [](CUstream_st* stream) {
    if (stream->capture != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return stream->readyNs <= fake::nowNs() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  });
}

CUresult streamWaitEvent(DefaultStream d, CUstream handle, CUevent hEvent, unsigned flags) {
  return fake::withStream(handle, d, [hEvent](CUstream_st* stream) {
    CUevent_st* event = fake::lookup<CUevent_st>(hEvent);
    if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (event->recorded == CUevent_st::Recorded::kOnStream && stream->capture == nullptr) {
      stream->readyNs = std::max(stream->readyNs, event->timeNs);
    }
    return CUDA_SUCCESS;
  });
}

CUresult streamGetCtx(DefaultStream d, CUstream handle, CUcontext* pctx) {
  if (CUresult r = fake::checkInit()) return r;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fake::withStream(handle, d, [pctx](CUstream_st* stream) {
    *pctx = stream->ctx;
    return CUDA_SUCCESS;
  });
}

CUresult streamGetCtx2(DefaultStream d, CUstream handle, CUcontext* pctx, CUgreenCtx* pGreenCtx) {
  if (CUresult r = fake::checkInit()) return r;
  if (pctx == nullptr || pGreenCtx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pGreenCtx = nullptr;
  return streamGetCtx(d, handle, pctx);
}

CUresult streamGetDevice(DefaultStream d, CUstream handle, CUdevice* device) {
  if (CUresult r = fake::checkInit()) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fake::withStream(handle, d, [device](CUstream_st* stream) {
    *device = stream->ctx->device;
    return CUDA_SUCCESS;
  });
}

CUresult streamGetId(DefaultStream d, CUstream handle, unsigned long long* id) {
  if (CUresult r = fake::checkInit()) return r;
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fake::withStream(handle, d, [id](CUstream_st* stream) {
    *id = stream->id;
    return CUDA_SUCCESS;
  });
}

CUresult streamGetPriority(DefaultStream d, CUstream handle, int* priority) {
  if (CUresult r = fake::checkInit()) return r;
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fake::withStream(handle, d, [priority](CUstream_st* stream) {
    *priority = stream->priority;
    return CUDA_SUCCESS;
  });
}

CUresult streamGetFlags(DefaultStream d, CUstream handle, unsigned* flags) {
  if (CUresult r = fake::checkInit()) return r;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fake::withStream(handle, d, [flags](CUstream_st* stream) {
    *flags = stream->flags;
    return CUDA_SUCCESS;
  });
}

}  // namespace

namespace fake {

CUstream_st* newStream(CUctx_st* ctx, unsigned flags, int priority) {
  CUstream_st* stream = new CUstream_st;
  stream->ctx = ctx;
  stream->flags = flags;
  stream->priority = priority;
  stream->id = nextId();
  ctx->streams.push_back(stream);
  registerHandle(stream, Kind::kStream);
  return stream;
}

void deleteStream(CUstream_st* stream) {
  deleteCapture(stream);
  std::vector<CUstream_st*>& streams = stream->ctx->streams;
  streams.erase(std::remove(streams.begin(), streams.end(), stream), streams.end());
  unregisterHandle(stream);
  delete stream;
}

CUresult resolveStream(CUstream handle, DefaultStream d, CUstream_st** out) {
  if (handle == nullptr) {
    handle = d == DefaultStream::kPerThread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  }
  if (handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    CUctx_st* ctx = nullptr;
    if (CUresult r = requireContext(&ctx)) return r;
    *out = handle == CU_STREAM_LEGACY ? ctx->legacyStream : perThreadStream(ctx);
    return CUDA_SUCCESS;
  }
  if (CUresult r = checkInit()) return r;
  *out = lookup<CUstream_st>(handle);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // namespace fake

FAKE_API CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) { return createStream(phStream, Flags, 0); }

FAKE_API CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return createStream(phStream, flags, priority);
}

FAKE_API CUresult cuStreamDestroy(CUstream hStream) { return destroyStream(hStream); }

FAKE_API CUresult cuStreamDestroy_v2(CUstream hStream) { return destroyStream(hStream); }

FAKE_EXPORT_PTSZ(cuStreamSynchronize, streamSynchronize, (CUstream hStream), (hStream))
FAKE_EXPORT_PTSZ(cuStreamQuery, streamQuery, (CUstream hStream), (hStream))
FAKE_EXPORT_PTSZ(cuStreamWaitEvent, streamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),
                 (hStream, hEvent, Flags))
FAKE_EXPORT_PTSZ(cuStreamGetCtx, streamGetCtx, (CUstream hStream, CUcontext* pctx), (hStream, pctx))
FAKE_EXPORT_PTSZ(cuStreamGetCtx_v2, streamGetCtx2, (CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx),
                 (hStream, pCtx, pGreenCtx))
FAKE_EXPORT_PTSZ(cuStreamGetDevice, streamGetDevice, (CUstream hStream, CUdevice* device), (hStream, device))
FAKE_EXPORT_PTSZ(cuStreamGetId, streamGetId, (CUstream hStream, unsigned long long* streamId), (hStream, streamId))
FAKE_EXPORT_PTSZ(cuStreamGetPriority, streamGetPriority, (CUstream hStream, int* priority), (hStream, priority))
FAKE_EXPORT_PTSZ(cuStreamGetFlags, streamGetFlags, (CUstream hStream, unsigned int* flags), (hStream, flags))
