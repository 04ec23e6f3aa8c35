// The Chrome export's first pass (tools/export/plan.h).
#include "tools/export/plan.h"

#include <algorithm>
#include <string_view>

#include "tools/export/common.h"
#include "tools/export/kineto.h"

namespace cutrace::exporter {

void nest_slices(std::vector<Slice>& v) {
  // Each pass fixes what the sort order shows; a moved begin can reorder slices, so a few
  // passes run until one changes nothing (one suffices but for pathological input).
  std::vector<int64_t> ends;  // ends of the slices open at the current one (innermost last)
  for (int pass = 0; pass < 4; ++pass) {
    std::sort(v.begin(), v.end(), [](const Slice& a, const Slice& b) {
      if (a.b != b.b) return a.b < b.b;
      if (a.e != b.e) return a.e > b.e;
      return a.ord < b.ord;
    });
    bool changed = false;
    ends.clear();
    for (Slice& s : v) {
      for (;;) {
        while (!ends.empty() && ends.back() <= s.b) ends.pop_back();
        if (ends.empty() || s.e <= ends.back()) break;
        int64_t top = ends.back();  // s starts inside the open slice and ends after it
        if (uint64_t(top) - uint64_t(s.b) <= uint64_t(s.e) - uint64_t(top)) s.b = top;
        else s.e = top;
        changed = s.moved = true;
      }
      ends.push_back(s.e);
    }
    if (!changed) break;
  }
}

namespace {

bool is_event_record(std::string_view api) { return api == "cuEventRecord" || api == "cuEventRecordWithFlags"; }

Slice slice(int64_t b, int64_t e, uint64_t ord) { return {b, e < b ? b : e, ord, false}; }

}  // namespace

void ChromePlan::build(TraceReader& r) {
  std::unordered_map<uint32_t, std::vector<Slice>> host;  // host thread tracks, by tid
  struct PendingRange {
    uint64_t ord, id;
    uint32_t tid, name_id;
    int64_t b, e;
  };
  std::vector<PendingRange> ranges;
  std::unordered_map<uint16_t, bool> record_api;
  uint64_t ord = 0;
  auto op = [&](const trace::OpCommon& packed, uint64_t n) {
    alignas(8) const trace::OpCommon o = packed;  // every field aligned: o.tid becomes a map key
    if (trace::is_call(o.flags)) host[o.tid].push_back(slice(o.cpu_begin, o.cpu_end, n));
    if (!has_gpu_time(o)) return;
    if (!gpu_first_ || o.gpu_start < gpu_first_) gpu_first_ = o.gpu_start;
    if (o.gpu_end > gpu_last_) gpu_last_ = o.gpu_end;
  };
  r.read([&](const Record& rec) {
    uint64_t n = ord++;
    switch (rec.type()) {
      case trace::RecType::Kernel: op(trace::OpCommon(rec.as<trace::KernelRec>().op), n); break;
      case trace::RecType::Memcpy: op(trace::OpCommon(rec.as<trace::MemcpyRec>().op), n); break;
      case trace::RecType::Memset: op(trace::OpCommon(rec.as<trace::MemsetRec>().op), n); break;
      case trace::RecType::Sync: {
        const exporter::AlignedRec<trace::SyncRec> s_copy(rec);  // fields become map keys: aligned
        const trace::SyncRec& s = s_copy.r;
        host[s.tid].push_back(slice(s.cpu_begin, s.cpu_end, n));
        break;
      }
      case trace::RecType::Api: {
        const exporter::AlignedRec<trace::ApiRec> a_copy(rec);  // fields become map keys: aligned
        const trace::ApiRec& a = a_copy.r;
        host[a.tid].push_back(slice(a.cpu_begin, a.cpu_end, n));
        auto it = record_api.find(a.api);
        if (it == record_api.end()) it = record_api.emplace(a.api, is_event_record(r.api_name(a.api))).first;
        if (it->second && a.result == 0) records_[a.arg].push_back({a.cpu_begin, a.corr, a.stream});
        break;
      }
      case trace::RecType::Memory: {
        const exporter::AlignedRec<trace::MemoryRec> m_copy(rec);  // fields become map keys: aligned
        const trace::MemoryRec& m = m_copy.r;
        host[m.tid].push_back(slice(m.cpu_begin, m.cpu_end, n));
        break;
      }
      case trace::RecType::Range: {
        const exporter::AlignedRec<trace::RangeRec> g_copy(rec);  // fields become map keys: aligned
        const trace::RangeRec& g = g_copy.r;
        if (trace::range_kind(g) == trace::RangeKind::StartEnd) break;
        Slice s = slice(g.cpu_begin, trace::range_end(g), n);
        host[g.tid].push_back(s);
        ranges.push_back({n, g.id, g.tid, g.name_id, s.b, s.e});
        break;
      }
      default: break;
    }
  });
  for (auto& [tid, v] : host) {
    nest_slices(v);
    for (const Slice& s : v)
      if (s.moved) moves_[s.ord] = {s.b, s.e};
  }
  host.clear();

  for (PendingRange& g : ranges) {
    host_times(g.ord, &g.b, &g.e);
    ranges_[g.tid].push_back({g.b, g.e, g.ord, g.id, g.name_id, -1, kineto::is_profiler_step(r.str(g.name_id))});
  }
  for (auto& [tid, v] : ranges_) {
    std::sort(v.begin(), v.end(), [](const Range& a, const Range& b) { return a.b != b.b ? a.b < b.b : a.e > b.e; });
    std::vector<int32_t> open;
    for (size_t i = 0; i < v.size(); ++i) {
      while (!open.empty() && v[size_t(open.back())].e <= v[i].b) open.pop_back();
      v[i].parent = open.empty() ? -1 : open.back();
      open.push_back(int32_t(i));
    }
  }
  for (auto& [event, v] : records_)
    std::sort(v.begin(), v.end(), [](const EventRecord& a, const EventRecord& b) { return a.t < b.t; });
}

const ChromePlan::Range* ChromePlan::innermost(uint32_t tid, int64_t t) const {
  auto it = ranges_.find(tid);
  if (it == ranges_.end()) return nullptr;
  const std::vector<Range>& v = it->second;
  auto after = std::upper_bound(v.begin(), v.end(), t, [](int64_t x, const Range& g) { return x < g.b; });
  int32_t i = int32_t(after - v.begin()) - 1;
  while (i >= 0 && v[size_t(i)].e <= t) i = v[size_t(i)].parent;
  return i >= 0 ? &v[size_t(i)] : nullptr;
}

const ChromePlan::EventRecord* ChromePlan::record_before(uint64_t event, int64_t t) const {
  auto it = records_.find(event);
  if (it == records_.end()) return nullptr;
  const std::vector<EventRecord>& v = it->second;
  auto after = std::upper_bound(v.begin(), v.end(), t, [](int64_t x, const EventRecord& g) { return x < g.t; });
  return after == v.begin() ? nullptr : &*(after - 1);
}

}  // namespace cutrace::exporter
