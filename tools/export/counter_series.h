// The CPU counter tracks the Chrome and Perfetto exports draw: one per counter (per process and
// per CPU) as a rate per interval, and IPC where cycles and instructions were both counted.
#pragma once
#include <string>
#include <vector>
#include "tools/analysis/counters.h"

namespace cutrace::exporter {

struct CounterSeries {
  std::string name;  // "CPU counter cycles", "CPU counter cycles cpu3", "CPU counter IPC"
  std::string unit;  // "per s", "CPUs" (time counters: ns counted per ns), "IPC"
  int32_t cpu = -1;  // the CPU of a per-CPU counter, -1 for the process's
  std::vector<tools::CounterSeriesPoint> points;
};

std::vector<CounterSeries> counter_series(const tools::CounterSet& cs);

}  // namespace cutrace::exporter
