// The fake driver's side of the fake CUPTI (fake_cuda_cupti.h): API calls and GPU operations
// handed to the hooks a fake CUPTI installed, and the operation log of FAKE_CUDA_OP_LOG.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "test/fake_cuda/fake_internal.h"

namespace fake {
namespace {

std::atomic<const FakeCudaCuptiHooks*> g_hooks{nullptr};
// Correlation id of the calling thread's current ApiCall (0 outside one): tags the ops it submits.
thread_local uint32_t t_correlation = 0;

FakeCudaMemory memoryAt(const void* address) {
  const Allocation* a = findAllocation(reinterpret_cast<uintptr_t>(address));
  if (a == nullptr) return FAKE_CUDA_MEMORY_PAGEABLE;
  switch (a->kind) {
    case MemKind::kDevice: return FAKE_CUDA_MEMORY_DEVICE;
    case MemKind::kManaged: return FAKE_CUDA_MEMORY_MANAGED;
    case MemKind::kHostAlloc:
    case MemKind::kHostRegistered: return FAKE_CUDA_MEMORY_PINNED;
  }
  return FAKE_CUDA_MEMORY_PAGEABLE;
}

// Reports `op` (a graph: each node, back to back) starting at `start`; returns its end.
// `graph_id`: of the graph launch `op` is a node of (0: none).
int64_t reportTo(const FakeCudaCuptiHooks* hooks, const CUstream_st* stream, const Op& op, int64_t start,
                 uint32_t graph_id = 0) {
  if (op.kind == OpKind::kGraph) {
    for (const Op& child : op.children) start = reportTo(hooks, stream, child, start, 1);
    return start;
  }
  FakeCudaGpuOp g{};
  g.graph_id = graph_id;
  g.correlation_id = t_correlation;
  g.start_ns = start;
  g.end_ns = start + static_cast<int64_t>(op.durationNs);
  g.device = static_cast<uint32_t>(stream->ctx->device);
  g.context_id = static_cast<uint32_t>(stream->ctx->id);
  g.stream_id = static_cast<uint32_t>(stream->id);
  switch (op.kind) {
    case OpKind::kKernel:
      g.kind = FAKE_CUDA_OP_KERNEL;
      g.name = op.func ? op.func->name.c_str() : "";
      break;
    case OpKind::kCopy:
      g.kind = FAKE_CUDA_OP_MEMCPY;
      g.bytes = op.copy.bytes();
      g.src_memory = memoryAt(op.copy.src);
      g.dst_memory = memoryAt(op.copy.dst);
      break;
    case OpKind::kSet:
      g.kind = FAKE_CUDA_OP_MEMSET;
      g.bytes = op.set.bytes();
      g.dst_memory = memoryAt(op.set.dst);
      break;
    case OpKind::kGraph: break;
  }
  hooks->gpu_op(&g);
  return g.end_ns;
}

// FAKE_CUDA_OP_LOG: opened on first use (lock held), -1 when unset or unwritable.
int opLog() {
  static int fd = [] {
    const char* path = std::getenv("FAKE_CUDA_OP_LOG");
    return path && *path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
  }();
  return fd;
}

const char* kindName(OpKind kind) {
  switch (kind) {
    case OpKind::kKernel: return "kernel";
    case OpKind::kCopy: return "memcpy";
    case OpKind::kSet: return "memset";
    case OpKind::kGraph: return "graph";
  }
  return "?";
}

}  // namespace

ApiCall::ApiCall(uint32_t cbid, const char* name)
    : hooks_(g_hooks.load(std::memory_order_acquire)), call_{cbid, name, 0, CUDA_SUCCESS, 0} {
  if (hooks_ == nullptr) return;
  hooks_->api_enter(&call_);
  t_correlation = call_.correlation_id;
}

ApiCall::~ApiCall() {
  if (hooks_ == nullptr) return;
  t_correlation = 0;
  hooks_->api_exit(&call_);
}

void reportOp(const CUstream_st* stream, const Op& op, const Span& span) {
  if (const FakeCudaCuptiHooks* hooks = g_hooks.load(std::memory_order_acquire))
    reportTo(hooks, stream, op, span.start);
  if (int fd = opLog(); fd >= 0) {
    char line[96];
    int n = std::snprintf(line, sizeof line, "%s %lld %lld\n", kindName(op.kind), static_cast<long long>(span.start),
                          static_cast<long long>(span.end));
    if (write(fd, line, static_cast<size_t>(n)) != n) {}
    // A graph's nodes too, back to back from its start: "graph_kernel START END" (graph_memcpy,
    // graph_memset, graph_graph).
    int64_t start = span.start;
    if (op.kind == OpKind::kGraph)
      for (const Op& child : op.children) {
        int64_t end = start + static_cast<int64_t>(child.durationNs);
        n = std::snprintf(line, sizeof line, "graph_%s %lld %lld\n", kindName(child.kind),
                          static_cast<long long>(start), static_cast<long long>(end));
        if (write(fd, line, static_cast<size_t>(n)) != n) {}
        start = end;
      }
  }
}

}  // namespace fake

FAKE_API void fakeCudaSetCuptiHooks(const FakeCudaCuptiHooks* hooks) {
  fake::g_hooks.store(hooks, std::memory_order_release);
}
