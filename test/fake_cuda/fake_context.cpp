// Contexts: the per-thread context stack, user-created contexts and per-device primary contexts.
// Destroying a context destroys its streams; events, modules, graphs and memory are process-global
// in the fake and survive it. A primary context keeps its identity for the life of the process
// and is "active" while its retain count is positive.
#include <algorithm>

#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::Lock;

thread_local std::vector<CUctx_st*> t_contextStack;  // back() is the current context

constexpr unsigned kApiVersion = 3020;
constexpr int kLeastStreamPriority = 0;
constexpr int kGreatestStreamPriority = -5;

CUctx_st* newContext(CUdevice dev, unsigned flags, bool primary) {
  CUctx_st* ctx = new CUctx_st;
  ctx->device = dev;
  ctx->flags = flags;
  ctx->id = fake::nextId();
  ctx->primary = primary;
  fake::registerHandle(ctx, fake::Kind::kContext);
  ctx->legacyStream = fake::newStream(ctx, 0, 0);
  ctx->legacyStream->builtin = true;
  return ctx;
}

void deleteContext(CUctx_st* ctx) {
  std::vector<CUstream_st*> streams = ctx->streams;
  for (CUstream_st* stream : streams) fake::deleteStream(stream);
  fake::unregisterHandle(ctx);
  delete ctx;
}

CUctx_st* primaryContext(CUdevice dev) {
  CUctx_st*& primary = fake::state().primaryContexts[dev];
  if (primary == nullptr) primary = newContext(dev, 0, true);
  return primary;
}

CUresult checkDevice(CUdevice dev) {
  if (CUresult r = fake::checkInit()) return r;
  return fake::validDevice(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult createContext(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  *pctx = newContext(dev, flags, false);
  t_contextStack.push_back(*pctx);
  return CUDA_SUCCESS;
}

CUresult destroyContext(CUcontext handle) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  CUctx_st* ctx = fake::lookup<CUctx_st>(handle);
  if (ctx == nullptr || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  t_contextStack.erase(std::remove(t_contextStack.begin(), t_contextStack.end(), ctx), t_contextStack.end());
  deleteContext(ctx);
  return CUDA_SUCCESS;
}

CUresult pushCurrent(CUcontext handle) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  if (fake::lookup<CUctx_st>(handle) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  t_contextStack.push_back(handle);
  return CUDA_SUCCESS;
}

CUresult popCurrent(CUcontext* pctx) {
  if (CUresult r = fake::checkInit()) return r;
  if (t_contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = t_contextStack.back();
  t_contextStack.pop_back();
  return CUDA_SUCCESS;
}

CUresult synchronizeContext(Lock& lock, CUctx_st* ctx) {
  int64_t readyNs = fake::contextReadyNs(ctx);
  ++fake::state().stats.syncs;
  lock.unlock();
  fake::sleepUntil(readyNs);
  return CUDA_SUCCESS;
}

CUresult primaryRelease(CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  Lock lock = fake::lockState();
  CUctx_st* ctx = primaryContext(dev);
  if (ctx->primaryRefs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --ctx->primaryRefs;
  return CUDA_SUCCESS;
}

CUresult primaryReset(CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  Lock lock = fake::lockState();
  primaryContext(dev)->primaryRefs = 0;
  return CUDA_SUCCESS;
}

CUresult primarySetFlags(CUdevice dev, unsigned flags) {
  if (CUresult r = checkDevice(dev)) return r;
  Lock lock = fake::lockState();
  primaryContext(dev)->flags = flags;
  return CUDA_SUCCESS;
}

}  // namespace

namespace fake {

bool validDevice(CUdevice dev) { return dev >= 0 && dev < deviceCount(); }

CUctx_st* currentContext() {
  if (t_contextStack.empty()) return nullptr;
  CUctx_st* ctx = lookup<CUctx_st>(t_contextStack.back());
  if (ctx != nullptr && ctx->primary && ctx->primaryRefs == 0) return nullptr;  // released
  return ctx;
}

CUresult requireContext(CUctx_st** out) {
  if (CUresult r = checkInit()) return r;
  *out = currentContext();
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult contextOrCurrent(CUcontext ctx, CUctx_st** out) {
  if (ctx == nullptr) return requireContext(out);
  if (CUresult r = checkInit()) return r;
  *out = lookup<CUctx_st>(ctx);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

int64_t contextReadyNs(const CUctx_st* ctx) {
  int64_t ready = 0;
  for (const CUstream_st* stream : ctx->streams) ready = std::max(ready, stream->readyNs);
  return ready;
}

}  // namespace fake

// ---- context creation and the context stack -----------------------------------------------------

FAKE_API CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return createContext(pctx, flags, dev);
}

FAKE_API CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return createContext(pctx, flags, dev);
}

FAKE_API CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams, unsigned int flags,
                                 CUdevice dev) {
  return createContext(pctx, flags, dev);
}

FAKE_API CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                                 CUdevice dev) {
  return createContext(pctx, flags, dev);
}

FAKE_API CUresult cuCtxDestroy(CUcontext ctx) { return destroyContext(ctx); }

FAKE_API CUresult cuCtxDestroy_v2(CUcontext ctx) { return destroyContext(ctx); }

FAKE_API CUresult cuCtxPushCurrent(CUcontext ctx) { return pushCurrent(ctx); }

FAKE_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return pushCurrent(ctx); }

FAKE_API CUresult cuCtxPopCurrent(CUcontext* pctx) { return popCurrent(pctx); }

FAKE_API CUresult cuCtxPopCurrent_v2(CUcontext* pctx) { return popCurrent(pctx); }

FAKE_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (CUresult r = fake::checkInit()) return r;
  if (ctx == nullptr) {
    if (!t_contextStack.empty()) t_contextStack.pop_back();
    return CUDA_SUCCESS;
  }
  Lock lock = fake::lockState();
  if (fake::lookup<CUctx_st>(ctx) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_contextStack.empty()) {
    t_contextStack.push_back(ctx);
  } else {
    t_contextStack.back() = ctx;
  }
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (CUresult r = fake::checkInit()) return r;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  *pctx = fake::currentContext();
  return CUDA_SUCCESS;
}

// ---- context queries ----------------------------------------------------------------------------

FAKE_API CUresult cuCtxGetDevice(CUdevice* device) {
  if (CUresult r = fake::checkInit()) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext handle) {
  if (CUresult r = fake::checkInit()) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::contextOrCurrent(handle, &ctx)) return r;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxGetFlags(unsigned int* flags) {
  if (CUresult r = fake::checkInit()) return r;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxSetFlags(unsigned int flags) {
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  ctx->flags = flags;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxGetId(CUcontext handle, unsigned long long* ctxId) {
  if (CUresult r = fake::checkInit()) return r;
  if (ctxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::contextOrCurrent(handle, &ctx)) return r;
  *ctxId = ctx->id;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxGetApiVersion(CUcontext handle, unsigned int* version) {
  if (CUresult r = fake::checkInit()) return r;
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::contextOrCurrent(handle, &ctx)) return r;
  *version = kApiVersion;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  if (leastPriority != nullptr) *leastPriority = kLeastStreamPriority;
  if (greatestPriority != nullptr) *greatestPriority = kGreatestStreamPriority;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxSynchronize(void) {
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  return synchronizeContext(lock, ctx);
}

FAKE_API CUresult cuCtxSynchronize_v2(CUcontext handle) {
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::contextOrCurrent(handle, &ctx)) return r;
  return synchronizeContext(lock, ctx);
}

FAKE_API CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return fake::lookup<CUctx_st>(peerContext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

FAKE_API CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  return fake::lookup<CUctx_st>(peerContext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// ---- primary contexts ---------------------------------------------------------------------------

FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (CUresult r = checkDevice(dev)) return r;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = primaryContext(dev);
  ++ctx->primaryRefs;
  *pctx = ctx;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return primaryRelease(dev); }

FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return primaryRelease(dev); }

FAKE_API CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return primaryReset(dev); }

FAKE_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) { return primaryReset(dev); }

FAKE_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) { return primarySetFlags(dev, flags); }

FAKE_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return primarySetFlags(dev, flags);
}

FAKE_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (CUresult r = checkDevice(dev)) return r;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = primaryContext(dev);
  *flags = ctx->flags;
  *active = ctx->primaryRefs > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}
