// Fake CUPTI: activity kinds, the client's buffer and timestamp callbacks, the records of the
// fake driver's GPU operations and the walk over a delivered buffer (fake_cupti.h: the model).
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_set>

#include "test/fake_cupti/fake_cupti.h"

namespace fake_cupti {
namespace {

constexpr size_t kAlign = 8;  // records start on 8-byte boundaries, as CUPTI requires of buffers

size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

size_t recordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return alignUp(sizeof(CUpti_ActivityKernel10));
    case CUPTI_ACTIVITY_KIND_MEMCPY: return alignUp(sizeof(CUpti_ActivityMemcpy6));
    case CUPTI_ACTIVITY_KIND_MEMSET: return alignUp(sizeof(CUpti_ActivityMemset4));
    default: return 0;
  }
}

bool* kindFlag(Activity& a, CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL: return &a.kernel;
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return &a.concurrentKernel;
    case CUPTI_ACTIVITY_KIND_MEMCPY: return &a.memcpy;
    case CUPTI_ACTIVITY_KIND_MEMSET: return &a.memset;
    default: return nullptr;
  }
}

// Kernel names, kept for the records' `name` pointers (the driver's string lives only during the hook).
const char* intern(const char* name) {
  static auto* names = new std::unordered_set<std::string>();  // never freed: records may outlive us
  return names->insert(name ? name : "").first->c_str();
}

// Room for one record of `size` bytes in the buffer being filled, closing it and asking the client
// for a new one as needed (lock held); null if none can be had.
uint8_t* room(Activity& a, size_t size) {
  Buffer& f = a.filling;
  bool full = f.used + size > f.size || (f.maxRecords && f.records.size() >= f.maxRecords);
  if (f.data != nullptr && !full) return f.data + f.used;
  if (f.data != nullptr) a.closed.push_back(std::move(f));
  f = Buffer{};
  if (a.requested == nullptr) return nullptr;
  a.requested(&f.data, &f.size, &f.maxRecords);
  if (f.data == nullptr || f.size < size || reinterpret_cast<uintptr_t>(f.data) % kAlign != 0) {
    f = Buffer{};
    return nullptr;
  }
  return f.data;
}

void fillKernel(CUpti_ActivityKernel10* k, CUpti_ActivityKind kind, const FakeCudaGpuOp& op) {
  k->kind = kind;
  k->deviceId = op.device;
  k->contextId = op.context_id;
  k->streamId = op.stream_id;
  k->correlationId = op.correlation_id;
  k->gridX = k->gridY = k->gridZ = 1;
  k->blockX = k->blockY = k->blockZ = 1;
  k->name = intern(op.name);
  k->graphId = op.graph_id;
}

void fillMemcpy(CUpti_ActivityMemcpy6* m, const FakeCudaGpuOp& op) {
  bool srcHost = op.src_memory == FAKE_CUDA_MEMORY_PAGEABLE || op.src_memory == FAKE_CUDA_MEMORY_PINNED;
  bool dstHost = op.dst_memory == FAKE_CUDA_MEMORY_PAGEABLE || op.dst_memory == FAKE_CUDA_MEMORY_PINNED;
  m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m->copyKind = srcHost ? (dstHost ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOH : CUPTI_ACTIVITY_MEMCPY_KIND_HTOD)
                        : (dstHost ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOH : CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
  m->srcKind = uint8_t(op.src_memory);
  m->dstKind = uint8_t(op.dst_memory);
  m->bytes = op.bytes;
  m->deviceId = op.device;
  m->contextId = op.context_id;
  m->streamId = op.stream_id;
  m->correlationId = op.correlation_id;
  m->graphId = op.graph_id;
}

void fillMemset(CUpti_ActivityMemset4* m, const FakeCudaGpuOp& op) {
  m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m->bytes = op.bytes;
  m->memoryKind = uint16_t(op.dst_memory);
  m->deviceId = op.device;
  m->contextId = op.context_id;
  m->streamId = op.stream_id;
  m->correlationId = op.correlation_id;
  m->graphId = op.graph_id;
}

// The timestamps of the record at `p`.
void setTimes(uint8_t* p, uint64_t start, uint64_t end) {
  auto* rec = reinterpret_cast<CUpti_Activity*>(p);
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(p);
      k->start = start, k->end = end;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(p);
      m->start = start, m->end = end;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(p);
      m->start = start, m->end = end;
      break;
    }
    default: break;
  }
}

}  // namespace

Activity& activity() {
  static Activity* a = new Activity;  // never destroyed: the driver may report ops during exit
  return *a;
}

bool armedIdle() {
  Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mu);
  return a.armed && !(a.kernel || a.concurrentKernel || a.memcpy || a.memset);
}

void finalizeActivity() {
  Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mu);
  a.kernel = a.concurrentKernel = a.memcpy = a.memset = a.armed = false;
  a.requested = nullptr;
  a.completed = nullptr;
  a.clientOffsetNs = 0;
  a.filling = Buffer{};  // undelivered buffers are gone (the client's memory, not freed here)
  a.closed.clear();
  a.dropped = 0;
}

// FAKE_CUPTI_DROP_KERNELS=name,name,...: kernels whose records are dropped (counted by
// cuptiActivityGetNumDroppedRecords), as CUPTI drops records when its buffers run out.
bool dropKernel(const char* name) {
  static const EnvNameList dropped("FAKE_CUPTI_DROP_KERNELS");
  return dropped.has(name);
}

void gpuOp(const FakeCudaGpuOp* op) {
  Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mu);
  if (op->kind == FAKE_CUDA_OP_KERNEL && (a.concurrentKernel || a.kernel) && dropKernel(op->name)) {
    ++a.dropped;
    return;
  }
  CUpti_ActivityKind kind;
  switch (op->kind) {
    case FAKE_CUDA_OP_KERNEL:
      if (!a.concurrentKernel && !a.kernel) return;
      kind = a.concurrentKernel ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
      break;
    case FAKE_CUDA_OP_MEMCPY:
      if (!a.memcpy) return;
      kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      break;
    case FAKE_CUDA_OP_MEMSET:
      if (!a.memset) return;
      kind = CUPTI_ACTIVITY_KIND_MEMSET;
      break;
    default: return;
  }
  size_t size = recordSize(kind);
  uint8_t* p = room(a, size);
  if (p == nullptr) {
    ++a.dropped;
    return;
  }
  std::memset(p, 0, size);
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: fillMemcpy(reinterpret_cast<CUpti_ActivityMemcpy6*>(p), *op); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: fillMemset(reinterpret_cast<CUpti_ActivityMemset4*>(p), *op); break;
    default: fillKernel(reinterpret_cast<CUpti_ActivityKernel10*>(p), kind, *op); break;
  }
  a.filling.records.push_back(PendingRecord{a.filling.used, op->start_ns, op->end_ns});
  a.filling.used += size;
}

void stampRecords(const Activity& a, Buffer& b, int64_t now) {
  for (const PendingRecord& r : b.records) {
    if (r.endNs <= now) {
      setTimes(b.data + r.offset, uint64_t(r.startNs + a.clientOffsetNs), uint64_t(r.endNs + a.clientOffsetNs));
    } else {
      setTimes(b.data + r.offset, 0, 0);  // in flight: a forced flush loses its timestamps
    }
  }
}

}  // namespace fake_cupti

using fake_cupti::activity;

FAKE_CUPTI_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  fake_cupti::Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mu);
  bool* flag = fake_cupti::kindFlag(a, kind);
  if (flag == nullptr) return CUPTI_ERROR_NOT_COMPATIBLE;  // a kind the fake does not produce
  if (!fake_cupti::installHooks()) return CUPTI_ERROR_NOT_INITIALIZED;
  *flag = true;
  a.armed = true;
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  fake_cupti::Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mu);
  bool* flag = fake_cupti::kindFlag(a, kind);
  if (flag == nullptr) return CUPTI_ERROR_NOT_COMPATIBLE;
  *flag = false;
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                          CUpti_BuffersCallbackCompleteFunc completed) {
  if (requested == nullptr || completed == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  fake_cupti::Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mu);
  a.requested = requested;
  a.completed = completed;
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback) {
  if (callback == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  // The client's clock against CLOCK_MONOTONIC (client code: called unlocked), from the tightest
  // of 32 brackets [before, after] of a call: 0 if the client's time falls inside it (the same
  // clock), else its distance to the bracket's middle, rounded to the microsecond.
  int64_t offset = 0, best = INT64_MAX;
  for (int i = 0; i < 32; ++i) {
    int64_t before = fake_cupti::nowNs();
    int64_t client = int64_t(callback());
    int64_t after = fake_cupti::nowNs();
    if (after - before >= best) continue;
    best = after - before;
    offset = client >= before && client <= after ? 0 : client - (before + best / 2);
  }
  offset = (offset >= 0 ? offset + 500 : offset - 500) / 1000 * 1000;
  fake_cupti::Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mu);
  a.clientOffsetNs = offset;
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t validBufferSizeBytes,
                                                      CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t* p = buffer;
  if (*record != nullptr) {
    size_t size = fake_cupti::recordSize((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    p = reinterpret_cast<uint8_t*>(*record) + size;
  }
  uint8_t* end = buffer + validBufferSizeBytes;
  if (p + sizeof(CUpti_Activity) > end) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  size_t size = fake_cupti::recordSize(reinterpret_cast<CUpti_Activity*>(p)->kind);
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (p + size > end) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(p);
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  fake_cupti::Activity& a = activity();
  std::lock_guard<std::mutex> lock(a.mu);
  *dropped = a.dropped;  // since the last call, as CUPTI counts
  a.dropped = 0;
  return CUPTI_SUCCESS;
}
