// Helpers shared by the end-to-end test programs (driver API only: they run on the fake
// driver in CI and on a real GPU).
#pragma once
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    CUresult r_ = (call);                                                                \
    if (r_ != CUDA_SUCCESS) {                                                            \
      const char* s_ = nullptr;                                                          \
      cuGetErrorName(r_, &s_);                                                           \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
      exit(1);                                                                           \
    }                                                                                    \
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
