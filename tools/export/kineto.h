// What the Chrome export needs to write a trace in the vocabulary of PyTorch's profiler (Kineto)
// and CUPTI: runtime names and CUPTI callback ids of the driver calls cutrace records, the
// occupancy figures Kineto puts on kernels, and the collective an NCCL kernel's name describes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "trace/format.h"

namespace cutrace::kineto {

// A driver call as Kineto shows it. cutrace records calls at the driver API, which cannot tell
// whether cudart made the call (docs/EXPORT.md): a driver function that has a runtime
// counterpart is written as that runtime call (cat cuda_runtime, CUPTI's runtime cbid), the
// others keep their driver name (cat cuda_driver, CUPTI's driver cbid). cbid -1: not known.
struct CallName {
  std::string_view name;  // "cudaLaunchKernel", or the driver name itself
  int cbid = -1;
  bool runtime = false;
};
CallName call_name(std::string_view driver_name);

// Kineto's kernel occupancy args: grid blocks and warps per SM, and the occupancy CUDA's
// occupancy calculator estimates from registers, shared memory and block size. Fields are < 0
// when not known (no SM count; a compute capability the table below does not hold).
struct Occupancy {
  double blocks_per_sm = -1;
  double warps_per_sm = -1;
  int est_occupancy_pct = -1;
};
Occupancy occupancy(const trace::KernelRec& k, const trace::DeviceRec* dev);

// The collective an NCCL kernel runs and its data type, from the kernel's name:
// "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" -> {"allreduce", "BFloat16"} (dtype in PyTorch's
// spelling, "" if the name has none). False for other kernels.
struct Collective {
  std::string name;
  std::string dtype;
};
bool nccl_collective(std::string_view kernel_name, Collective* out);
inline bool is_nccl_kernel(std::string_view kernel_name) { return kernel_name.substr(0, 4) == "nccl"; }

// A training step, torch.profiler's "ProfilerStep#N" or cutrace's own "step_N" (summary's default
// step pattern): Kineto draws no GPU copy of a step, so renaming step_N gives Kineto's shape.
inline bool is_profiler_step(std::string_view range_name) {
  if (range_name.substr(0, 13) == "ProfilerStep#") return true;
  if (range_name.substr(0, 5) != "step_" || range_name.size() == 5) return false;
  for (char ch : range_name.substr(5))
    if (ch < '0' || ch > '9') return false;
  return true;
}

}  // namespace cutrace::kineto
