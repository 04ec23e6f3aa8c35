// Kernel names and attributes, looked up once per function on the collector thread.
#pragma once
#include <cstdint>
#include <unordered_map>
#include "trace/writer.h"

namespace cutrace {

class Names {
 public:
  explicit Names(TraceWriter& w) : w_(w) {}
  struct Func {
    uint32_t name_id = 0;
    uint16_t regs = 0;
    uint32_t static_smem = 0;
    bool collective = false;  // an NCCL kernel (name starting with "nccl", as tools/analysis/collectives.h)
  };
  // f is a CUfunction or a CUkernel (cudart passes either to cuLaunchKernel).
  const Func& function(void* f, int device);
  // CUDA graph executables: a stable number per graph exec and its display name.
  const Func& graph(void* exec, uint32_t* graph_id);
  void clear() { funcs_.clear(); }

 private:
  TraceWriter& w_;
  std::unordered_map<void*, Func> funcs_;
  std::unordered_map<void*, std::pair<uint32_t, Func>> graphs_;
};

std::string demangle(const char* name);

}  // namespace cutrace
