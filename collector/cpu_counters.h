// CPU performance counters through perf_event_open, opened and read by the collector thread
// only (the app's threads never make a counter syscall). Software counters (task clock, context
// switches, CPU migrations, page faults) are always asked for; hardware and raw sysfs events
// (CUTRACE_CPU_COUNTERS) where the PMU and perf_event_paranoid allow. Per process: one inherited
// counter per thread alive at open (threads and children they start later are counted in it);
// per CPU (every task on it) where the kernel allows system-wide counting.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "trace/format.h"
#include "trace/writer.h"

namespace cutrace {

// What a counter name resolves to: a perf_event_attr type and config words.
struct CounterSpec {
  std::string name;  // as asked for
  uint32_t type = 0;
  uint64_t config = 0, config1 = 0, config2 = 0;
  bool software = false;
  bool per_cpu = false;  // also opened on each CPU (scope Cpu) where allowed
  trace::CounterUnit unit = trace::CounterUnit::Events;
};

// Resolves a name: perf's generic names (cycles, instructions, cache-misses, branch-misses,
// itlb-misses, dtlb-misses, task-clock, context-switches, ...), rNNNN raw codes, or an event
// listed in <sysfs>/<pmu>/events/<name> (optionally written "pmu/name"), encoded through the
// PMU's format/ files. false and *why set when the name is not known.
bool resolve_counter(const std::string& name, const std::string& sysfs, CounterSpec* out, std::string* why);

// The software counters always read, and the hardware counters read when CUTRACE_CPU_COUNTERS is unset.
const std::vector<std::string>& software_counter_names();
const std::vector<std::string>& default_hardware_counter_names();

struct CounterReading {
  uint64_t value = 0, enabled = 0, running = 0;  // PERF_FORMAT_TOTAL_TIME_ENABLED | _RUNNING
};
// The value between two readings of one counter, scaled up when the counter was multiplexed
// (running < enabled over the interval); running share in 1/10000.
trace::CounterValue counter_delta(uint16_t id, const CounterReading& prev, const CounterReading& cur);

struct CounterOpenOptions {
  std::string sysfs;  // event_source devices directory ("" = /sys/bus/event_source/devices)
  bool perf = true;   // false: perf_event_open is not tried (software counters from getrusage)
};

// CounterSample records of `values` (more than fit in one record: several, same ts).
void write_counter_sample(TraceWriter& w, int64_t ts, int64_t interval_ns,
                          const std::vector<trace::CounterValue>& values);

class CpuCounters {
 public:
  // list: CUTRACE_CPU_COUNTERS ("" = defaults, "off" = no counters at all, "none" = software
  // only, else comma-separated names read besides the software ones). Writes CounterDef and
  // CounterMissing records, the meta keys cpu_counters / cpu_counters_missing, and one warning
  // line naming what is missing and why. Returns the number of counters opened.
  size_t open(TraceWriter& w, const std::string& list, int64_t period_ns, const CounterOpenOptions& o = {});
  // Writes one CounterSample with the deltas since the previous call; after a gap of more than
  // three periods (capture was off) it takes a new baseline and writes nothing.
  void sample(TraceWriter& w, int64_t now_ns);
  ~CpuCounters();

 private:
  struct Counter {
    uint16_t id;
    std::vector<int> fds;  // per process: one per thread; per CPU: one; {-Fallback}: getrusage
    CounterReading prev;
  };
  CounterReading read(const Counter& c) const;
  std::vector<Counter> counters_;
  int64_t period_ns_ = 0, prev_ns_ = 0;
  std::vector<trace::CounterValue> values_;
};

// The one line the collector prints for counters that could not be opened, grouped by reason:
// "cycles, instructions: no hardware PMU ...; per-CPU counters: perf_event_paranoid is 2 ...".
std::string missing_counters_line(const std::vector<std::pair<std::string, std::string>>& name_reason);

}  // namespace cutrace
