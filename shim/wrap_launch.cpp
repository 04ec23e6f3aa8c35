// Kernel launches (every route a real stack uses) and CUDA graph replays.
#include "shim/op.h"

namespace cutrace {
namespace {

using trace::KernelKind;

void fill_kernel(RawRecord& r, KernelKind kind, void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                 unsigned by, unsigned bz, unsigned shm) {
  r.sub = uint8_t(kind);
  r.kernel.func = f;
  r.kernel.grid[0] = gx, r.kernel.grid[1] = gy, r.kernel.grid[2] = gz;
  r.kernel.block[0] = bx, r.kernel.block[1] = by, r.kernel.block[2] = bz;
  r.kernel.shmem = shm;
}

using PFN_launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void**, void**);
CUresult launch(const Binding& b, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned shm, CUstream s, void** params, void** extra) {
  return traced_gpu_op<PFN_launch>(
      b, RawKind::Kernel, s, 0,
      [&](RawRecord& r) { fill_kernel(r, KernelKind::Kernel, f, gx, gy, gz, bx, by, bz, shm); },
      [&](PFN_launch real) { return real(f, gx, gy, gz, bx, by, bz, shm, s, params, extra); });
}

using PFN_coop = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**);
CUresult launch_coop(const Binding& b, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz, unsigned shm, CUstream s, void** params) {
  return traced_gpu_op<PFN_coop>(
      b, RawKind::Kernel, s, 0,
      [&](RawRecord& r) { fill_kernel(r, KernelKind::Cooperative, f, gx, gy, gz, bx, by, bz, shm); },
      [&](PFN_coop real) { return real(f, gx, gy, gz, bx, by, bz, shm, s, params); });
}

bool is_cooperative(const CUlaunchConfig* c) {
  for (unsigned i = 0; i < c->numAttrs; ++i)
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c->attrs[i].value.cooperative) return true;
  return false;
}

using PFN_launch_ex = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
CUresult launch_ex(const Binding& b, const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  CUstream s = c ? c->hStream : nullptr;
  return traced_gpu_op<PFN_launch_ex>(
      b, RawKind::Kernel, s, 0,
      [&](RawRecord& r) {
        if (!c) return fill_kernel(r, KernelKind::Kernel, f, 0, 0, 0, 0, 0, 0, 0);
        fill_kernel(r, is_cooperative(c) ? KernelKind::Cooperative : KernelKind::Kernel, f, c->gridDimX, c->gridDimY,
                    c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ, c->sharedMemBytes);
      },
      [&](PFN_launch_ex real) { return real(c, f, params, extra); });
}

using PFN_graph_launch = CUresult (*)(CUgraphExec, CUstream);
CUresult graph_launch(const Binding& b, CUgraphExec g, CUstream s) {
  return traced_gpu_op<PFN_graph_launch>(
      b, RawKind::Kernel, s, 0, [&](RawRecord& r) { fill_kernel(r, KernelKind::Graph, g, 0, 0, 0, 0, 0, 0, 0); },
      [&](PFN_graph_launch real) { return real(g, s); });
}

}  // namespace

CUTRACE_DIRECT_WHEN_OFF(launch)
CUTRACE_DIRECT_WHEN_OFF(launch_coop)
CUTRACE_DIRECT_WHEN_OFF(launch_ex)
CUTRACE_DIRECT_WHEN_OFF(graph_launch)
}  // namespace cutrace

using namespace cutrace;
CUTRACE_FUNC_PT(f_launch, PFN_launch, launch, "cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz)
CUTRACE_FUNC_PT(f_launch_ex, PFN_launch_ex, launch_ex, "cuLaunchKernelEx", 11060, cuLaunchKernelEx,
                cuLaunchKernelEx_ptsz)
CUTRACE_FUNC_PT(f_launch_coop, PFN_coop, launch_coop, "cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel,
                cuLaunchCooperativeKernel_ptsz)
CUTRACE_FUNC_PT(f_graph_launch, PFN_graph_launch, graph_launch, "cuGraphLaunch", 10000, cuGraphLaunch,
                cuGraphLaunch_ptsz)
