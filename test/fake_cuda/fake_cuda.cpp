// Core of the fake CUDA driver: global state, the clock, configuration, the handle registry, the
// stream timeline and op submission, plus the test-introspection exports (fake_cuda_stats.h).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "test/fake_cuda/fake_internal.h"

namespace fake {
namespace {

std::atomic<bool> g_initialized{false};

int64_t envInt(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (*end != '\0') return fallback;
  return std::min<int64_t>(std::max<int64_t>(value, lo), hi);
}

void countExecuted(FakeCudaStats& stats, OpKind kind) {
  switch (kind) {
    case OpKind::kKernel: ++stats.launches; break;
    case OpKind::kCopy: ++stats.memcpys; break;
    case OpKind::kSet: ++stats.memsets; break;
    case OpKind::kGraph: ++stats.graph_launches; break;
  }
}

}  // namespace

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// In slices of at most 100 ms, to the same deadline: a sanitizer's runtime delivers a signal that
// came during a blocking call when the call returns (ThreadSanitizer holds it until then).
void sleepUntil(int64_t deadlineNs) {
  constexpr int64_t kSliceNs = 100000000;
  for (;;) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t nowNs = int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
    if (nowNs >= deadlineNs) return;
    const int64_t until = deadlineNs - nowNs > kSliceNs ? nowNs + kSliceNs : deadlineNs;
    timespec ts;
    ts.tv_sec = until / 1000000000;
    ts.tv_nsec = until % 1000000000;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);  // EINTR: the loop goes on
  }
}

int64_t launchLatencyNs() {
  static const int64_t latency = envInt("FAKE_CUDA_LAUNCH_LATENCY_NS", 2000, 0, 1000000000);
  return latency;
}

int64_t idleRecordStallNs() {
  static const int64_t stall = envInt("FAKE_CUDA_IDLE_RECORD_STALL_NS", 0, 0, 1000000000);
  static const int64_t every = envInt("FAKE_CUDA_IDLE_RECORD_STALL_EVERY", 1, 1, 1000000);
  static int64_t records = 0;
  return stall > 0 && ++records % every == 0 ? stall : 0;
}

int deviceCount() {
  static const int count = static_cast<int>(envInt("FAKE_CUDA_DEVICE_COUNT", 2, 0, kMaxDevices));
  return count;
}

State& state() {
  static State* s = new State;  // never destroyed: entry points may run during process exit
  return *s;
}

Lock::Lock() : held_(true) { state().mu.lock(); }

Lock::~Lock() {
  if (held_) state().mu.unlock();
}

void Lock::unlock() {
  if (held_) state().mu.unlock();
  held_ = false;
}

Lock lockState() { return Lock(); }

uint64_t nextId() { return ++state().lastId; }

CUresult checkInit() {
  return g_initialized.load(std::memory_order_acquire) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

void markInitialized() { g_initialized.store(true, std::memory_order_release); }

void registerHandle(const void* handle, Kind kind) { state().live[handle] = HandleInfo{kind}; }

void unregisterHandle(const void* handle) { state().live.erase(handle); }

bool isLive(const void* handle, Kind kind) {
  auto it = state().live.find(handle);
  return it != state().live.end() && it->second.kind == kind;
}

// ---- ops ----------------------------------------------------------------------------------------

void CopyDesc::run() const {
  for (size_t z = 0; z < depth; ++z) {
    for (size_t y = 0; y < height; ++y) {
      std::memmove(dst + z * dstSlicePitch + y * dstPitch, src + z * srcSlicePitch + y * srcPitch, widthBytes);
    }
  }
}

void SetDesc::run() const {
  for (size_t y = 0; y < height; ++y) {
    char* row = dst + y * pitch;
    if (elementSize == 1) {
      std::memset(row, static_cast<int>(value & 0xff), width);
      continue;
    }
    for (size_t x = 0; x < width; ++x) {
      if (elementSize == 2) {
        uint16_t v16 = static_cast<uint16_t>(value);
        std::memcpy(row + 2 * x, &v16, 2);
      } else {
        std::memcpy(row + 4 * x, &value, 4);
      }
    }
  }
}

void Op::applyBytes() const {
  switch (kind) {
    case OpKind::kKernel: break;  // kernels have no visible memory effects in the fake
    case OpKind::kCopy: copy.run(); break;
    case OpKind::kSet: set.run(); break;
    case OpKind::kGraph:
      for (const Op& child : children) child.applyBytes();
      break;
  }
}

Op kernelOp(CUfunc_st* func) {
  Op op;
  op.kind = OpKind::kKernel;
  op.durationNs = func->durationNs;
  op.func = func;
  return op;
}

Op copyOp(const CopyDesc& copy) {
  Op op;
  op.kind = OpKind::kCopy;
  op.durationNs = copyDurationNs(copy.bytes());
  op.copy = copy;
  return op;
}

Op setOp(const SetDesc& set) {
  Op op;
  op.kind = OpKind::kSet;
  op.durationNs = setDurationNs(set.bytes());
  op.set = set;
  return op;
}

// ---- timeline -----------------------------------------------------------------------------------

Span enqueue(CUstream_st* stream, uint64_t durationNs) {
  int64_t start = std::max(stream->readyNs, nowNs() + launchLatencyNs());
  Span span{start, start + static_cast<int64_t>(durationNs)};
  stream->readyNs = span.end;
  return span;
}

CUresult submitLocked(Lock& lock, CUstream handle, DefaultStream d, const Op& op, bool blocking) {
  CUstream_st* stream = nullptr;
  if (CUresult r = resolveStream(handle, d, &stream)) return r;
  if (stream->capture != nullptr) {
    if (blocking) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    captureOp(stream, op);
    return CUDA_SUCCESS;
  }
  Span span = enqueue(stream, op.durationNs);
  countExecuted(state().stats, op.kind);
  reportOp(stream, op, span);
  lock.unlock();
  op.applyBytes();
  if (blocking) sleepUntil(span.end);
  return CUDA_SUCCESS;
}

CUresult submit(CUstream handle, DefaultStream d, const Op& op, bool blocking) {
  Lock lock = lockState();
  return submitLocked(lock, handle, d, op, blocking);
}

}  // namespace fake

// ---- introspection for tests --------------------------------------------------------------------

FAKE_API void fakeCudaGetStats(FakeCudaStats* out) {
  if (out == nullptr) return;
  fake::Lock lock = fake::lockState();
  *out = fake::state().stats;
}

FAKE_API void fakeCudaResetStats(void) {
  fake::Lock lock = fake::lockState();
  fake::state().stats = FakeCudaStats{};
}
