// Introspection entry points of the fake CUDA driver (build/test/fake_cuda/libcuda.so.1).
// Tests resolve them with dlsym (or link the fake) to check what a program under test really did
// on the "GPU", e.g. that a profiler created no events while capture was off.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Counters since load (or since the last fakeCudaResetStats). Calls that fail validation or are
// captured into a graph count nothing; graph nodes are counted only in graph_launches.
typedef struct FakeCudaStats {
  uint64_t launches;          // kernels enqueued by cuLaunchKernel / Ex / Cooperative
  uint64_t memcpys;           // memcpy operations enqueued (all cuMemcpy* flavours)
  uint64_t memsets;           // memset operations enqueued (all cuMemsetD* flavours)
  uint64_t events_created;    // successful cuEventCreate
  uint64_t events_destroyed;  // successful cuEventDestroy
  uint64_t event_records;     // successful cuEventRecord / cuEventRecordWithFlags
  uint64_t syncs;             // cuStreamSynchronize + cuEventSynchronize + cuCtxSynchronize
  uint64_t graph_launches;    // successful cuGraphLaunch
} FakeCudaStats;

void fakeCudaGetStats(FakeCudaStats* out);
void fakeCudaResetStats(void);

typedef void (*FakeCudaGetStatsFn)(FakeCudaStats*);
typedef void (*FakeCudaResetStatsFn)(void);

#ifdef __cplusplus
}
#endif
