#include "tools/analysis/counters.h"
#include <algorithm>
#include <cstring>

namespace cutrace::tools {

const char* counter_scope_name(trace::CounterScope s) { return s == trace::CounterScope::Cpu ? "cpu" : "process"; }

std::string counter_label(const CounterTrack& t) {
  return t.scope == trace::CounterScope::Cpu ? t.name + " cpu" + std::to_string(t.cpu) : t.name;
}

CounterTrack* CounterSet::track(uint16_t id) {
  if (id >= index_.size() || index_[id] < 0) return nullptr;
  return &tracks_[size_t(index_[id])];
}

void CounterSet::add(const Record& rec, const TraceReader& r) {
  switch (rec.type()) {
    case trace::RecType::CounterDef: add(rec, r.str(rec.as<trace::CounterDefRec>().name_id), {}); break;
    case trace::RecType::CounterMissing: {
      const auto& m = rec.as<trace::CounterMissingRec>();
      add(rec, r.str(m.name_id), r.str(m.reason_id));
      break;
    }
    case trace::RecType::CounterSample: add(rec, {}, {}); break;
    default: break;
  }
}

void CounterSet::add(const Record& rec, std::string_view name, std::string_view reason) {
  switch (rec.type()) {
    case trace::RecType::CounterDef: {
      const auto& d = rec.as<trace::CounterDefRec>();
      if (d.counter >= index_.size()) index_.resize(size_t(d.counter) + 1, -1);
      if (index_[d.counter] >= 0) return;  // a second definition of one id: the first stands
      CounterTrack t;
      t.id = d.counter;
      t.name = std::string(name);
      t.scope = d.scope == uint8_t(trace::CounterScope::Cpu) ? trace::CounterScope::Cpu : trace::CounterScope::Process;
      t.cpu = d.cpu;
      t.unit = d.unit == uint8_t(trace::CounterUnit::Nanoseconds) ? trace::CounterUnit::Nanoseconds
                                                                  : trace::CounterUnit::Events;
      t.source = d.source;
      index_[d.counter] = int32_t(tracks_.size());
      tracks_.push_back(std::move(t));
      break;
    }
    case trace::RecType::CounterMissing: {
      const auto& m = rec.as<trace::CounterMissingRec>();
      missing_.push_back(
          {std::string(name), std::string(reason),
           m.scope == uint8_t(trace::CounterScope::Cpu) ? trace::CounterScope::Cpu : trace::CounterScope::Process,
           m.err});
      break;
    }
    case trace::RecType::CounterSample: {
      const auto& s = rec.as<trace::CounterSampleRec>();
      std::string_view tail = rec.tail(sizeof(trace::CounterSampleRec));
      size_t n = std::min<size_t>(s.count, tail.size() / sizeof(trace::CounterValue));
      if (s.interval_ns <= 0) return;
      ++samples_;
      for (size_t i = 0; i < n; ++i) {
        trace::CounterValue v;
        std::memcpy(&v, tail.data() + i * sizeof v, sizeof v);
        CounterTrack* t = track(v.counter);
        if (!t) continue;  // a value of a counter never defined: skipped
        t->points.push_back({s.ts, s.interval_ns, v.delta});
        t->total += v.delta;
        t->covered_ns += s.interval_ns;
        t->min_running = std::min(t->min_running, v.running);
      }
      break;
    }
    default: break;
  }
}

const CounterTrack* CounterSet::find(std::string_view name, trace::CounterScope scope, int32_t cpu) const {
  for (const CounterTrack& t : tracks_)
    if (t.name == name && t.scope == scope && (scope == trace::CounterScope::Process || t.cpu == cpu)) return &t;
  return nullptr;
}

double CounterSet::ipc() const {
  const CounterTrack* c = find("cycles");
  const CounterTrack* i = find("instructions");
  if (!c || !i || c->total == 0) return -1;
  return double(i->total) / double(c->total);
}

std::vector<CounterSeriesPoint> CounterSet::ipc_series() const {
  std::vector<CounterSeriesPoint> out;
  const CounterTrack* c = find("cycles");
  const CounterTrack* i = find("instructions");
  if (!c || !i) return out;
  size_t a = 0, b = 0;  // both lists are in time order (one sample record carries both)
  while (a < c->points.size() && b < i->points.size()) {
    if (c->points[a].ts < i->points[b].ts) ++a;
    else if (i->points[b].ts < c->points[a].ts) ++b;
    else {
      if (c->points[a].delta) out.push_back({c->points[a].ts, double(i->points[b].delta) / double(c->points[a].delta)});
      ++a, ++b;
    }
  }
  return out;
}

double CounterSet::rate(const CounterTrack& t, const CounterPoint& p) {
  if (p.interval_ns <= 0) return 0.0;
  double scale = t.unit == trace::CounterUnit::Nanoseconds ? 1.0 : 1e9;
  return double(p.delta) * scale / double(p.interval_ns);
}

}  // namespace cutrace::tools
