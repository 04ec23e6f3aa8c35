// The bundled demo (`make demo`): a small "training loop" that runs on the fake driver and on a
// real GPU. 20 steps of: an HtoD copy from pinned memory, 15 "forward" launches on stream s0, an
// event recorded on s0 that s1 waits for, 15 "backward" launches on s1, a memset and a DtoH copy
// on s1, and a stream synchronisation; then a CUDA graph captured from s0 and replayed 5 times.
//
// On the fake driver the kernels are fake-module entries with realistic names and durations.
// On a real GPU they come from sample_kernels_ptx.h: `scale` (y = a * x) stands for the
// elementwise kernels and `spin` (busy-waits N clock cycles) for the others; the results of
// `scale` are checked (y == a * x on s0, z == b * y on s1, which also checks the event wait).
#include <nvtx3/nvToolsExt.h>
#include <cmath>
#include <vector>

#include "test/e2e/common.h"
#include "test/e2e/sample_kernels_ptx.h"

namespace {

constexpr int kSteps = 20;
constexpr int kGraphReplays = 5;
constexpr int kLayers = 5;
constexpr int kN = 1 << 20;  // floats per buffer (4 MiB)
constexpr float kA = 2.0f, kB = 0.5f;

// A kernel of the demo: on the fake driver its own fake function; on a GPU, `scale` or `spin`.
struct Kernel {
  const char* name;
  int fake_ns;       // fake duration
  bool elementwise;  // GPU: scale(out, in, factor, n); else spin(cycles for fake_ns)
  CUfunction f = nullptr;
};

Kernel g_kernels[] = {
    {"ampere_sgemm_128x64_nn", 180000, false},
    {"ampere_sgemm_64x64_tn", 95000, false},
    {"vectorized_elementwise_kernel", 8000, true},
    {"softmax_warp_forward", 24000, false},
    {"softmax_warp_backward", 30000, false},
    {"layer_norm_fwd_kernel", 12000, false},
    {"reduce_kernel", 15000, true},
    {"multi_tensor_apply_kernel", 45000, true},
};
enum { kGemmFwd, kGemmBwd, kElementwise, kSoftmaxFwd, kSoftmaxBwd, kLayerNorm, kReduce, kOptimizer };

bool g_real = false;
long long g_cycles_per_us = 1000;

void launch(int which, CUstream s, CUdeviceptr out, CUdeviceptr in, float factor) {
  const Kernel& k = g_kernels[which];
  int n = kN;
  if (!g_real) {
    CHECK(cuLaunchKernel(k.f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, nullptr, nullptr));
  } else if (k.elementwise) {
    void* args[] = {&out, &in, &factor, &n};
    CHECK(cuLaunchKernel(k.f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, nullptr));
  } else {
    long long cycles = g_cycles_per_us * k.fake_ns / 1000;
    void* args[] = {&cycles};
    CHECK(cuLaunchKernel(k.f, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr));
  }
}

bool check_scaled(const float* got, const float* x, float factor, const char* what, int step) {
  for (int i = 0; i < kN; ++i) {
    if (got[i] != factor * x[i]) {
      fprintf(stderr, "sample_app: step %d: %s[%d] = %g, expected %g\n", step, what, i, got[i], factor * x[i]);
      return false;
    }
  }
  return true;
}

}  // namespace

int main() {
  init_primary();
  g_real = !on_fake_driver();
  CUmodule m;
  if (g_real) {
    CHECK(cuModuleLoadData(&m, kSamplePtx));
    CUdevice dev;
    CHECK(cuCtxGetDevice(&dev));
    int khz = 0;
    CHECK(cuDeviceGetAttribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev));
    if (khz > 0) g_cycles_per_us = khz / 1000;
    for (Kernel& k : g_kernels) k.f = get_function(m, k.elementwise ? "scale" : "spin");
  } else {
    std::string text;
    for (const Kernel& k : g_kernels) text += "kernel " + std::string(k.name) + " " + std::to_string(k.fake_ns) + "\n";
    m = load_fake_module(text);
    for (Kernel& k : g_kernels) k.f = get_function(m, k.name);
  }

  const size_t bytes = kN * sizeof(float);
  CUdeviceptr x, y, z, grad;
  CHECK(cuMemAlloc(&x, bytes));
  CHECK(cuMemAlloc(&y, bytes));
  CHECK(cuMemAlloc(&z, bytes));
  CHECK(cuMemAlloc(&grad, bytes));
  float *host_x, *host_z;
  CHECK(cuMemAllocHost(reinterpret_cast<void**>(&host_x), bytes));
  CHECK(cuMemAllocHost(reinterpret_cast<void**>(&host_z), bytes));
  CUstream s0, s1;
  CHECK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CUevent forward_done;
  CHECK(cuEventCreate(&forward_done, CU_EVENT_DISABLE_TIMING));

  std::vector<float> want_y(kN);
  for (int step = 0; step < kSteps; ++step) {
    char step_name[32];
    snprintf(step_name, sizeof step_name, "step_%d", step);
    nvtxRangePushA(step_name);  // NVTX ranges, as a training script annotates its steps
    for (int i = 0; i < kN; ++i) host_x[i] = float((i + step) % 1000) * 0.25f;  // exact in float
    CHECK(cuMemcpyHtoDAsync(x, host_x, bytes, s0));
    nvtxRangePushA("forward");
    for (int l = 0; l < kLayers; ++l) {  // forward: y = a * x
      launch(kGemmFwd, s0, 0, 0, 0);
      launch(kElementwise, s0, y, x, kA);
      launch(l == 0 ? kLayerNorm : kSoftmaxFwd, s0, 0, 0, 0);
    }
    nvtxRangePop();
    CHECK(cuEventRecord(forward_done, s0));
    CHECK(cuStreamWaitEvent(s1, forward_done, 0));
    CHECK(cuMemsetD32Async(grad, 0, kN, s1));
    nvtxRangePushA("backward");
    for (int l = 0; l < kLayers; ++l) {  // backward: z = b * y
      launch(kSoftmaxBwd, s1, 0, 0, 0);
      launch(kGemmBwd, s1, 0, 0, 0);
      launch(l == kLayers - 1 ? kOptimizer : kReduce, s1, z, y, kB);
    }
    nvtxRangePop();
    CHECK(cuMemcpyDtoHAsync(host_z, z, bytes, s1));
    CHECK(cuStreamSynchronize(s1));
    nvtxRangePop();
    if (g_real) {
      for (int i = 0; i < kN; ++i) want_y[i] = kA * host_x[i];
      if (!check_scaled(host_z, want_y.data(), kB, "z", step)) return 1;
    }
  }

  // A CUDA graph of one forward layer, captured from s0 and replayed.
  CUgraph graph;
  CUgraphExec exec;
  CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  launch(kLayerNorm, s0, 0, 0, 0);
  launch(kGemmFwd, s0, 0, 0, 0);
  launch(kElementwise, s0, y, x, kA);
  launch(kSoftmaxFwd, s0, 0, 0, 0);
  CHECK(cuStreamEndCapture(s0, &graph));
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < kGraphReplays; ++r) CHECK(cuGraphLaunch(exec, s0));
  CHECK(cuStreamSynchronize(s0));
  if (g_real) {
    std::vector<float> got(kN);
    CHECK(cuMemcpyDtoH(got.data(), y, bytes));
    if (!check_scaled(got.data(), host_x, kA, "y (graph)", kSteps)) return 1;
  }
  CHECK(cuCtxSynchronize());

  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(graph));
  CHECK(cuEventDestroy(forward_done));
  CHECK(cuStreamDestroy(s0));
  CHECK(cuStreamDestroy(s1));
  CHECK(cuMemFreeHost(host_x));
  CHECK(cuMemFreeHost(host_z));
  for (CUdeviceptr p : {x, y, z, grad}) CHECK(cuMemFree(p));
  CHECK(cuModuleUnload(m));
  printf("sample_app: %d steps and %d graph replays on %s\n", kSteps, kGraphReplays,
         g_real ? "a GPU, results checked" : "the fake driver");
  printf("sample_app: OK\n");
  return 0;
}
