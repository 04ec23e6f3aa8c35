// Kernel launches: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel (and _ptsz). A
// launch is validated, then occupies the stream for the kernel's duration from its module image.
// Kernel parameters, launch attributes and the kernels' memory effects are ignored.
#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::DefaultStream;

constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned kMaxGridDim[3] = {2147483647u, 65535, 65535};

struct LaunchDims {
  unsigned grid[3];
  unsigned block[3];
};

CUresult validateDims(const LaunchDims& dims) {
  unsigned long long threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (dims.grid[i] == 0 || dims.grid[i] > kMaxGridDim[i]) return CUDA_ERROR_INVALID_VALUE;
    if (dims.block[i] == 0 || dims.block[i] > kMaxBlockDim[i]) return CUDA_ERROR_INVALID_VALUE;
    threads *= dims.block[i];
  }
  return threads <= kMaxThreadsPerBlock ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult launch(DefaultStream d, CUfunction f, const LaunchDims& dims, CUstream hStream) {
  if (CUresult r = fake::checkInit()) return r;
  fake::Lock lock = fake::lockState();
  CUfunc_st* func = fake::resolveFunction(f);
  if (func == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = validateDims(dims)) return r;
  if (func->failLaunch) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  return fake::submitLocked(lock, hStream, d, fake::kernelOp(func), false);
}

CUresult launchKernel(DefaultStream d, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, unsigned sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return launch(d, f, LaunchDims{{gx, gy, gz}, {bx, by, bz}}, hStream);
}

CUresult launchKernelEx(DefaultStream d, const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                        void** extra) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LaunchDims dims{{config->gridDimX, config->gridDimY, config->gridDimZ},
                  {config->blockDimX, config->blockDimY, config->blockDimZ}};
  return launch(d, f, dims, config->hStream);
}

CUresult launchCooperative(DefaultStream d, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned sharedMemBytes, CUstream hStream, void** kernelParams) {
  return launch(d, f, LaunchDims{{gx, gy, gz}, {bx, by, bz}}, hStream);
}

}  // namespace

FAKE_EXPORT_PTSZ(cuLaunchKernel, launchKernel,
                 (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                  unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
                  CUstream hStream, void** kernelParams, void** extra),
                 (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra))

FAKE_EXPORT_PTSZ(cuLaunchKernelEx, launchKernelEx,
                 (const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra),
                 (config, f, kernelParams, extra))

FAKE_EXPORT_PTSZ(cuLaunchCooperativeKernel, launchCooperative,
                 (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                  unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
                  CUstream hStream, void** kernelParams),
                 (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams))
