// The fake CUDA driver's side of the fake CUPTI (test/fake_cupti/, build/test/fake_cupti/libcupti.so):
// test hooks through which a profiling library sees the driver calls and the virtual GPU's work,
// as real CUPTI sees the real driver's. Neither library links the other: the fake CUPTI looks
// fakeCudaSetCuptiHooks up with dlsym(RTLD_DEFAULT) when a client first subscribes or enables an
// activity kind (no fake driver loaded: CUPTI reports CUPTI_ERROR_NOT_INITIALIZED).
//
// fakeCudaSetCuptiHooks is the one exported test hook of this header (fake_internal.h's export
// rule); like fakeCudaGetStats it is no CUDA name. With no hooks set (the default) the driver
// behaves exactly as before.
#pragma once

#include <cuda.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// One call of an entry point defined with FAKE_EXPORT_PTSZ / FAKE_EXPORT_PTDS (fake_internal.h:
// every launch, graph launch, copy and memset, and the stream-ordered calls), on the caller's
// stack from api_enter to api_exit.
typedef struct FakeCudaApiCall {
  uint32_t cbid;              // its CUPTI_DRIVER_TRACE_CBID_<name> (cupti_driver_cbid.h)
  const char* name;           // its exported name, e.g. "cuLaunchKernel_ptsz"
  uint32_t correlation_id;    // set by api_enter; carried by the records of the work it submits
  CUresult result;            // valid in api_exit
  uint64_t correlation_data;  // the subscriber's per-call scratch (CUpti_CallbackData)
} FakeCudaApiCall;

typedef enum FakeCudaOpKind { FAKE_CUDA_OP_KERNEL, FAKE_CUDA_OP_MEMCPY, FAKE_CUDA_OP_MEMSET } FakeCudaOpKind;

// Memory of one side of a copy or of a memset target; the values are CUpti_ActivityMemoryKind's.
typedef enum FakeCudaMemory {
  FAKE_CUDA_MEMORY_PAGEABLE = 1,  // host memory the driver does not know
  FAKE_CUDA_MEMORY_PINNED = 2,    // cuMemAllocHost / cuMemHostAlloc / cuMemHostRegister
  FAKE_CUDA_MEMORY_DEVICE = 3,
  FAKE_CUDA_MEMORY_MANAGED = 5,
} FakeCudaMemory;

// One kernel, copy or memset the virtual GPU will run (a graph launch reports each of its nodes,
// back to back from the graph's start, with the graph launch's correlation id).
typedef struct FakeCudaGpuOp {
  FakeCudaOpKind kind;
  uint32_t correlation_id;   // of the API call that submitted it (0: outside a hooked call)
  int64_t start_ns, end_ns;  // its span on the virtual GPU, CLOCK_MONOTONIC ns
  uint32_t device, context_id, stream_id;
  uint64_t bytes;                         // copies and memsets
  FakeCudaMemory src_memory, dst_memory;  // copies: both sides; memsets: dst_memory
  const char* name;                       // kernels: the function's name (valid during the hook only)
  uint32_t graph_id;                      // a node of a graph launch: the graph's id (never 0), else 0
} FakeCudaGpuOp;

typedef struct FakeCudaCuptiHooks {
  void (*api_enter)(FakeCudaApiCall* call);  // before the call's work: sets call->correlation_id
  void (*api_exit)(FakeCudaApiCall* call);   // after it
  // At submission, with the driver's lock held: must not call the driver.
  void (*gpu_op)(const FakeCudaGpuOp* op);
} FakeCudaCuptiHooks;

// Installs `hooks` (which must stay valid; null removes them) for every later call.
void fakeCudaSetCuptiHooks(const FakeCudaCuptiHooks* hooks);
typedef void (*FakeCudaSetCuptiHooksFn)(const FakeCudaCuptiHooks*);

#ifdef __cplusplus
}
#endif
