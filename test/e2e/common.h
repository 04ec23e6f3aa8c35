// Helpers shared by the end-to-end test programs (driver API only: they run on the fake
// driver in CI and on a real GPU).
#pragma once
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    CUresult r_ = (call);                                                                  \
    if (r_ != CUDA_SUCCESS) {                                                              \
      const char* s_ = nullptr;                                                            \
      cuGetErrorName(r_, &s_);                                                             \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

inline CUcontext init_primary(int ordinal = 0) {
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, ordinal));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  return ctx;
}

inline bool on_fake_driver() {
  char name[256] = {};
  cuDeviceGetName(name, sizeof name, 0);
  return strstr(name, "Fake") != nullptr;
}

// The fake driver's module format: "kernel <name> <duration_ns>" per line.
inline CUmodule load_fake_module(const std::string& text) {
  CUmodule m;
  CHECK(cuModuleLoadData(&m, text.c_str()));
  return m;
}

inline CUfunction get_function(CUmodule m, const char* name) {
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, m, name));
  return f;
}

// Appends kernel nodes to g, each depending on the one before (the first on `after`, if any), all
// with a grid of `grid` x 1 x 1 blocks of `block` x 1 x 1 threads; returns the last node.
inline CUgraphNode add_kernel_chain(CUgraph g, CUgraphNode after, const std::vector<CUfunction>& fs, unsigned grid,
                                    unsigned block) {
  CUgraphNode prev = after, node = nullptr;
  for (CUfunction f : fs) {
    CUDA_KERNEL_NODE_PARAMS kp{};
    kp.func = f;
    kp.gridDimX = grid, kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = block, kp.blockDimY = kp.blockDimZ = 1;
    CHECK(cuGraphAddKernelNode(&node, g, prev ? &prev : nullptr, prev ? 1 : 0, &kp));
    prev = node;
  }
  return node;
}
