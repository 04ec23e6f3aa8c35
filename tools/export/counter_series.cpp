#include "tools/export/counter_series.h"

namespace cutrace::exporter {

std::vector<CounterSeries> counter_series(const tools::CounterSet& cs) {
  std::vector<CounterSeries> out;
  for (const tools::CounterTrack& t : cs.tracks()) {
    CounterSeries s;
    s.name = "CPU counter " + tools::counter_label(t);
    s.unit = t.unit == trace::CounterUnit::Nanoseconds ? "CPUs" : "per s";
    s.cpu = t.scope == trace::CounterScope::Cpu ? t.cpu : -1;
    s.points.reserve(t.points.size());
    for (const tools::CounterPoint& p : t.points) s.points.push_back({p.ts, tools::CounterSet::rate(t, p)});
    out.push_back(std::move(s));
  }
  std::vector<tools::CounterSeriesPoint> ipc = cs.ipc_series();
  if (!ipc.empty()) out.push_back({"CPU counter IPC", "IPC", -1, std::move(ipc)});
  return out;
}

}  // namespace cutrace::exporter
