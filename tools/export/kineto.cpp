// Kineto's and CUPTI's vocabulary for the Chrome export (tools/export/kineto.h).
#include "tools/export/kineto.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace cutrace::kineto {
namespace {

// Every driver function the shim records (shim/wrap_*.cpp), with the CUPTI driver cbid of the
// version cuda.h maps its name to, and its runtime counterpart where cudart has one.
#define DRV(name, ver) \
  { #name, CUPTI_DRIVER_TRACE_CBID_##ver, nullptr, -1 }
#define RT(name, ver, rt, rtver) \
  { #name, CUPTI_DRIVER_TRACE_CBID_##ver, #rt, CUPTI_RUNTIME_TRACE_CBID_##rtver }
struct Entry {
  const char* driver;
  int driver_cbid;
  const char* runtime;
  int runtime_cbid;
};
const Entry kCalls[] = {
    RT(cuLaunchKernel, cuLaunchKernel, cudaLaunchKernel, cudaLaunchKernel_v7000),
    RT(cuLaunchKernelEx, cuLaunchKernelEx, cudaLaunchKernelExC, cudaLaunchKernelExC_v11060),
    RT(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, cudaLaunchCooperativeKernel,
       cudaLaunchCooperativeKernel_v9000),
    RT(cuGraphLaunch, cuGraphLaunch, cudaGraphLaunch, cudaGraphLaunch_v10000),
    RT(cuMemcpy, cuMemcpy, cudaMemcpy, cudaMemcpy_v3020),
    RT(cuMemcpyHtoD, cuMemcpyHtoD_v2, cudaMemcpy, cudaMemcpy_v3020),
    RT(cuMemcpyDtoH, cuMemcpyDtoH_v2, cudaMemcpy, cudaMemcpy_v3020),
    RT(cuMemcpyDtoD, cuMemcpyDtoD_v2, cudaMemcpy, cudaMemcpy_v3020),
    RT(cuMemcpyAsync, cuMemcpyAsync, cudaMemcpyAsync, cudaMemcpyAsync_v3020),
    RT(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, cudaMemcpyAsync, cudaMemcpyAsync_v3020),
    RT(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, cudaMemcpyAsync, cudaMemcpyAsync_v3020),
    RT(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, cudaMemcpyAsync, cudaMemcpyAsync_v3020),
    RT(cuMemcpy2D, cuMemcpy2D_v2, cudaMemcpy2D, cudaMemcpy2D_v3020),
    RT(cuMemcpy2DUnaligned, cuMemcpy2DUnaligned_v2, cudaMemcpy2D, cudaMemcpy2D_v3020),
    RT(cuMemcpy2DAsync, cuMemcpy2DAsync_v2, cudaMemcpy2DAsync, cudaMemcpy2DAsync_v3020),
    RT(cuMemcpy3D, cuMemcpy3D_v2, cudaMemcpy3D, cudaMemcpy3D_v3020),
    RT(cuMemcpy3DAsync, cuMemcpy3DAsync_v2, cudaMemcpy3DAsync, cudaMemcpy3DAsync_v3020),
    RT(cuMemcpyPeer, cuMemcpyPeer, cudaMemcpyPeer, cudaMemcpyPeer_v4000),
    RT(cuMemcpyPeerAsync, cuMemcpyPeerAsync, cudaMemcpyPeerAsync, cudaMemcpyPeerAsync_v4000),
    RT(cuMemcpy3DPeer, cuMemcpy3DPeer, cudaMemcpy3DPeer, cudaMemcpy3DPeer_v4000),
    RT(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, cudaMemcpy3DPeerAsync, cudaMemcpy3DPeerAsync_v4000),
    RT(cuMemsetD8, cuMemsetD8_v2, cudaMemset, cudaMemset_v3020),
    RT(cuMemsetD16, cuMemsetD16_v2, cudaMemset, cudaMemset_v3020),
    RT(cuMemsetD32, cuMemsetD32_v2, cudaMemset, cudaMemset_v3020),
    RT(cuMemsetD8Async, cuMemsetD8Async, cudaMemsetAsync, cudaMemsetAsync_v3020),
    RT(cuMemsetD16Async, cuMemsetD16Async, cudaMemsetAsync, cudaMemsetAsync_v3020),
    RT(cuMemsetD32Async, cuMemsetD32Async, cudaMemsetAsync, cudaMemsetAsync_v3020),
    RT(cuMemsetD2D8, cuMemsetD2D8_v2, cudaMemset2D, cudaMemset2D_v3020),
    RT(cuMemsetD2D16, cuMemsetD2D16_v2, cudaMemset2D, cudaMemset2D_v3020),
    RT(cuMemsetD2D32, cuMemsetD2D32_v2, cudaMemset2D, cudaMemset2D_v3020),
    RT(cuMemsetD2D8Async, cuMemsetD2D8Async, cudaMemset2DAsync, cudaMemset2DAsync_v3020),
    RT(cuMemsetD2D16Async, cuMemsetD2D16Async, cudaMemset2DAsync, cudaMemset2DAsync_v3020),
    RT(cuMemsetD2D32Async, cuMemsetD2D32Async, cudaMemset2DAsync, cudaMemset2DAsync_v3020),
    RT(cuStreamSynchronize, cuStreamSynchronize, cudaStreamSynchronize, cudaStreamSynchronize_v3020),
    RT(cuCtxSynchronize, cuCtxSynchronize, cudaDeviceSynchronize, cudaDeviceSynchronize_v3020),
    RT(cuEventSynchronize, cuEventSynchronize, cudaEventSynchronize, cudaEventSynchronize_v3020),
    RT(cuStreamWaitEvent, cuStreamWaitEvent, cudaStreamWaitEvent, cudaStreamWaitEvent_v3020),
    RT(cuEventRecord, cuEventRecord, cudaEventRecord, cudaEventRecord_v3020),
    RT(cuEventRecordWithFlags, cuEventRecordWithFlags, cudaEventRecordWithFlags, cudaEventRecordWithFlags_v11010),
    RT(cuStreamQuery, cuStreamQuery, cudaStreamQuery, cudaStreamQuery_v3020),
    RT(cuEventQuery, cuEventQuery, cudaEventQuery, cudaEventQuery_v3020),
    RT(cuMemAlloc, cuMemAlloc_v2, cudaMalloc, cudaMalloc_v3020),
    RT(cuMemFree, cuMemFree_v2, cudaFree, cudaFree_v3020),
    RT(cuMemAllocHost, cuMemAllocHost_v2, cudaMallocHost, cudaMallocHost_v3020),
    RT(cuMemHostAlloc, cuMemHostAlloc, cudaHostAlloc, cudaHostAlloc_v3020),
    RT(cuMemFreeHost, cuMemFreeHost, cudaFreeHost, cudaFreeHost_v3020),
    RT(cuMemAllocManaged, cuMemAllocManaged, cudaMallocManaged, cudaMallocManaged_v6000),
    RT(cuMemAllocPitch, cuMemAllocPitch_v2, cudaMallocPitch, cudaMallocPitch_v3020),
    RT(cuMemAllocAsync, cuMemAllocAsync, cudaMallocAsync, cudaMallocAsync_v11020),
    RT(cuMemFreeAsync, cuMemFreeAsync, cudaFreeAsync, cudaFreeAsync_v11020),
    RT(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, cudaMallocFromPoolAsync, cudaMallocFromPoolAsync_v11020),
    RT(cuStreamBeginCapture, cuStreamBeginCapture_v2, cudaStreamBeginCapture, cudaStreamBeginCapture_v10000),
    RT(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, cudaStreamBeginCaptureToGraph,
       cudaStreamBeginCaptureToGraph_v12030),
    RT(cuStreamEndCapture, cuStreamEndCapture, cudaStreamEndCapture, cudaStreamEndCapture_v10000),
    RT(cuProfilerStart, cuProfilerStart, cudaProfilerStart, cudaProfilerStart_v4000),
    RT(cuProfilerStop, cuProfilerStop, cudaProfilerStop, cudaProfilerStop_v4000),
    DRV(cuCtxDestroy, cuCtxDestroy_v2),
    DRV(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2),
    DRV(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2),
    DRV(cuModuleUnload, cuModuleUnload),
    DRV(cuLibraryUnload, cuLibraryUnload),
    DRV(cuGetProcAddress, cuGetProcAddress_v2),
};
#undef DRV
#undef RT

// Per compute capability: what CUDA's occupancy calculator limits a block by.
struct SmLimits {
  int major, minor;
  int max_threads;      // resident threads per SM
  int max_blocks;       // resident blocks per SM
  int shared_bytes;     // shared memory per SM usable by blocks
  int reserved_shared;  // shared memory the system reserves per block
};
const SmLimits kSm[] = {
    {6, 0, 2048, 32, 65536, 0},      {6, 1, 2048, 32, 98304, 0},      {7, 0, 2048, 32, 98304, 0},
    {7, 5, 1024, 16, 65536, 0},      {8, 0, 2048, 32, 167936, 1024},  {8, 6, 1536, 16, 102400, 1024},
    {8, 7, 1536, 16, 167936, 1024},  {8, 9, 1536, 24, 102400, 1024},  {9, 0, 2048, 32, 233472, 1024},
    {10, 0, 2048, 32, 233472, 1024}, {12, 0, 1536, 32, 102400, 1024},
};
constexpr int kRegsPerSm = 65536;
constexpr int kRegAllocUnit = 256;  // registers are allocated per warp in units of 256
constexpr int kSubPartitions = 4;   // the register file is split between 4 warp schedulers

int round_up(int v, int unit) { return (v + unit - 1) / unit * unit; }

}  // namespace

CallName call_name(std::string_view driver_name) {
  // A versioned or per-thread-stream name ("cuMemAlloc_v2", "cuLaunchKernel_ptsz") is its base.
  std::string_view base = driver_name;
  for (std::string_view suffix : {"_ptsz", "_ptds"})
    if (base.size() > suffix.size() && base.substr(base.size() - suffix.size()) == suffix)
      base.remove_suffix(suffix.size());
  size_t v = base.rfind("_v");
  if (v != std::string_view::npos && v + 2 < base.size() &&
      base.find_first_not_of("0123456789", v + 2) == std::string_view::npos)
    base = base.substr(0, v);
  for (const Entry& e : kCalls) {
    if (base != e.driver) continue;
    if (e.runtime) return {e.runtime, e.runtime_cbid, true};
    return {driver_name, e.driver_cbid, false};
  }
  return {driver_name, -1, false};
}

Occupancy occupancy(const trace::KernelRec& k, const trace::DeviceRec* dev) {
  Occupancy o;
  uint64_t blocks = uint64_t(k.grid[0]) * k.grid[1] * k.grid[2];
  uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
  if (!dev || dev->sm_count == 0 || blocks == 0 || threads == 0) return o;
  o.blocks_per_sm = double(blocks) / dev->sm_count;
  o.warps_per_sm = o.blocks_per_sm * double(threads) / 32.0;
  const SmLimits* lim = nullptr;
  for (const SmLimits& s : kSm)
    if (s.major == dev->cc_major && s.minor == dev->cc_minor) lim = &s;
  if (!lim || threads > uint64_t(lim->max_threads)) return o;
  int warps_per_block = int((threads + 31) / 32);
  int by_warps = lim->max_threads / 32 / warps_per_block;
  int by_regs = lim->max_blocks;
  if (k.regs > 0) {
    int regs_per_warp = round_up(int(k.regs) * 32, kRegAllocUnit);
    int warps = kRegsPerSm / kSubPartitions / regs_per_warp * kSubPartitions;
    by_regs = warps / warps_per_block;
  }
  uint64_t smem = uint64_t(k.static_smem) + k.dyn_smem + uint64_t(lim->reserved_shared);
  int by_smem = lim->max_blocks;
  if (smem > 0)
    by_smem = int(std::min<uint64_t>(
        uint64_t(lim->shared_bytes) / round_up(int(std::min<uint64_t>(smem, 1u << 30)), 128), 1u << 20));
  int active = std::min({lim->max_blocks, by_warps, by_regs, by_smem});
  double effective = std::min(double(active), o.blocks_per_sm);
  o.est_occupancy_pct = int(std::lround(effective * double(threads) / lim->max_threads * 100.0));
  return o;
}

bool nccl_collective(std::string_view name, Collective* out) {
  std::string_view rest;
  for (std::string_view prefix : {"ncclDevKernel_", "ncclKernel_"})
    if (name.substr(0, prefix.size()) == prefix) rest = name.substr(prefix.size());
  if (rest.empty()) return false;
  rest = rest.substr(0, rest.find('('));
  std::vector<std::string_view> tokens;
  for (size_t p = 0; p <= rest.size();) {
    size_t u = rest.find('_', p);
    if (u == std::string_view::npos) u = rest.size();
    if (u > p) tokens.push_back(rest.substr(p, u - p));
    p = u + 1;
  }
  if (tokens.empty()) return false;
  out->name.clear();
  for (char c : tokens[0]) out->name += char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (out->name == "reducescatter") out->name = "reduce_scatter";
  // NCCL's data type tokens (newer names first, then the C type names of older NCCL versions),
  // in PyTorch's ScalarType spelling as Kineto writes "dtype".
  static const std::pair<std::string_view, const char*> kTypes[] = {
      {"i8", "Char"},
      {"u8", "Byte"},
      {"i32", "Int"},
      {"u32", "UInt32"},
      {"i64", "Long"},
      {"u64", "UInt64"},
      {"f16", "Half"},
      {"f32", "Float"},
      {"f64", "Double"},
      {"bf16", "BFloat16"},
      {"f8e4m3", "Float8_e4m3fn"},
      {"f8e5m2", "Float8_e5m2"},
      {"int8", "Char"},
      {"uint8", "Byte"},
      {"int32", "Int"},
      {"uint32", "UInt32"},
      {"int64", "Long"},
      {"uint64", "UInt64"},
      {"half", "Half"},
      {"float", "Float"},
      {"double", "Double"},
      {"bfloat16", "BFloat16"},
  };
  out->dtype.clear();
  for (size_t i = 1; i < tokens.size() && out->dtype.empty(); ++i) {
    std::string_view t = tokens[i];
    if (t == "t" || t == "nv") continue;  // the "_t" of "int8_t", the "nv" of "__nv_bfloat16"
    for (const auto& [tok, torch] : kTypes)
      if (t == tok) out->dtype = torch;
  }
  return true;
}

}  // namespace cutrace::kineto
