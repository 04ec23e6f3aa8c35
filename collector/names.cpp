#include "collector/names.h"
#include <cxxabi.h>
#include <cstdlib>
#include <string>
#include "runtime/driver.h"

namespace cutrace {

std::string demangle(const char* name) {
  if (!name) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? d : name;
  free(d);
  return out;
}

const Names::Func& Names::function(void* f, int device) {
  auto it = funcs_.find(f);
  if (it != funcs_.end()) return it->second;
  const Driver& d = driver();
  Func fn;
  const char* name = nullptr;
  auto func = static_cast<CUfunction>(f);
  auto kern = static_cast<CUkernel>(f);
  bool is_func = d.cuFuncGetName && d.cuFuncGetName(&name, func) == CUDA_SUCCESS && name;
  if (!is_func && d.cuKernelGetName && d.cuKernelGetName(&name, kern) != CUDA_SUCCESS) name = nullptr;
  const std::string text = name ? demangle(name) : std::string("<unknown kernel>");
  fn.name_id = w_.intern(text);
  fn.collective = text.compare(0, 4, "nccl") == 0;
  int regs = 0, smem = 0;
  if (is_func && d.cuFuncGetAttribute) {
    d.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, func);
    d.cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func);
  } else if (name && d.cuKernelGetAttribute) {
    d.cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kern, device);
    d.cuKernelGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kern, device);
  }
  fn.regs = uint16_t(regs > 0 ? regs : 0);
  fn.static_smem = uint32_t(smem > 0 ? smem : 0);
  return funcs_.emplace(f, fn).first->second;
}

const Names::Func& Names::graph(void* exec, uint32_t* graph_id) {
  auto it = graphs_.find(exec);
  if (it == graphs_.end()) {
    uint32_t id = uint32_t(graphs_.size() + 1);
    Func fn;
    fn.name_id = w_.intern("CUDA graph #" + std::to_string(id));
    it = graphs_.emplace(exec, std::make_pair(id, fn)).first;
  }
  *graph_id = it->second.first;
  return it->second.second;
}

}  // namespace cutrace
