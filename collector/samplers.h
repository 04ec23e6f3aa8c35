// System samplers run by the collector: host CPU utilisation per core and of this process
// (/proc), and per-GPU utilisation, memory, SM clock, power and temperature through NVML,
// loaded at run time (absent NVML: one warning, GPU samples skipped).
#pragma once
#include <cstdint>
#include <vector>
#include "trace/writer.h"

namespace cutrace {

class CpuSampler {
 public:
  void sample(TraceWriter& w, int64_t now_ns);

 private:
  struct Core {
    uint64_t busy = 0, total = 0;
  };
  std::vector<Core> prev_;
  Core prev_all_;
  uint64_t prev_proc_ticks_ = 0;
  int64_t prev_ns_ = 0;
};

class GpuSampler {
 public:
  // uuids: the CUDA devices' UUIDs (16 bytes each) in ordinal order.
  void init(const std::vector<std::vector<uint8_t>>& uuids);
  void sample(TraceWriter& w, int64_t now_ns);

 private:
  struct Nvml;
  Nvml* nvml_ = nullptr;
  std::vector<void*> handles_;  // nvmlDevice_t per CUDA ordinal (nullptr if not found)
};

}  // namespace cutrace
