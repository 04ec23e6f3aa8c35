// CPU performance counters of one trace (CounterDef / CounterSample / CounterMissing records):
// the one decoder the summary, the exports and the report use, so each shows the same figures.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "trace/format.h"
#include "trace/reader.h"

namespace cutrace::tools {

struct CounterPoint {
  int64_t ts;           // end of the interval
  int64_t interval_ns;  // its length
  uint64_t delta;       // events (ns for a time counter) in it, multiplexing already scaled
};

struct CounterTrack {
  uint16_t id = 0;
  std::string name;
  trace::CounterScope scope = trace::CounterScope::Process;
  int32_t cpu = -1;
  trace::CounterUnit unit = trace::CounterUnit::Events;
  uint8_t source = 0;  // CounterDefRec.source
  std::vector<CounterPoint> points;
  uint64_t total = 0;
  int64_t covered_ns = 0;        // sum of the intervals
  uint16_t min_running = 10000;  // smallest running share seen (multiplexed: < 10000)
  double per_second() const { return covered_ns > 0 ? double(total) * 1e9 / double(covered_ns) : 0.0; }
};

struct CounterMissing {
  std::string name, reason;
  trace::CounterScope scope = trace::CounterScope::Process;
  int32_t err = 0;
};

struct CounterSeriesPoint {
  int64_t ts;
  double value;
};

class CounterSet {
 public:
  // Takes CounterDef, CounterSample and CounterMissing records; ignores the rest.
  void add(const Record& rec, const TraceReader& r);
  void add(const Record& rec, std::string_view name, std::string_view reason);  // strings resolved

  const std::vector<CounterTrack>& tracks() const { return tracks_; }
  const std::vector<CounterMissing>& missing() const { return missing_; }
  uint64_t samples() const { return samples_; }
  bool empty() const { return tracks_.empty() && missing_.empty(); }
  const CounterTrack* find(std::string_view name, trace::CounterScope scope = trace::CounterScope::Process,
                           int32_t cpu = -1) const;
  // Process instructions / cycles over the whole trace; < 0 when either is absent or cycles is 0.
  double ipc() const;
  // Per interval of the process counters, where both have a value at the same time.
  std::vector<CounterSeriesPoint> ipc_series() const;
  // delta / interval: events per second; for a time counter (task-clock), CPUs busy (ns per ns).
  static double rate(const CounterTrack& t, const CounterPoint& p);

 private:
  CounterTrack* track(uint16_t id);
  std::vector<CounterTrack> tracks_;
  std::vector<int32_t> index_;  // counter id -> tracks_ index, -1 unknown
  std::vector<CounterMissing> missing_;
  uint64_t samples_ = 0;
};

const char* counter_scope_name(trace::CounterScope s);  // "process" / "cpu"
// A track's label: "cycles" for the process, "cycles cpu3" for one CPU.
std::string counter_label(const CounterTrack& t);

}  // namespace cutrace::tools
