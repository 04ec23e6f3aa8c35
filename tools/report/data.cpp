// The report's JSON documents (tools/report/data.h; keys in docs/REPORT.md). Dashboard numbers
// come from the summary model itself (the `cutrace summary --json` document is embedded whole),
// the charts' series and the timeline from tools/report_tracks.
#include "tools/report/data.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "tools/analysis/summary_model.h"
#include "tools/report/tracks.h"
#include "trace/reader.h"

namespace cutrace::report {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxDurationsPerName = 100000;  // annotation histogram values kept per name

// JSON text safe inside an HTML <script> element: '<', '>' and '&' only occur inside strings,
// where \u escapes mean the same. Invalid UTF-8 becomes U+FFFD instead of throwing.
std::string dump(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size() + s.size() / 64);
  for (char c : s) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

template <class T>
void put_num(std::string& o, T v) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  o.append(buf, p);
}

template <class V, class F>
void column(std::string& o, const char* key, const V& v, F value) {
  o += ",\"";
  o += key;
  o += "\":[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) o += ',';
    put_num(o, value(v[i]));
  }
  o += ']';
}

Json track_json(const Track& t, int64_t origin) {
  Json j = {{"id", t.id}, {"parent", t.parent}, {"kind", t.kind}, {"name", t.name}, {"file", t.file}};
  if (t.kind == "thread") j["rows"] = t.rows;
  if (t.device >= 0) j["device"] = t.device;
  if (t.kind == "thread" || t.kind == "stream") j["events"] = t.events.size();
  if (t.kind == "counter") {
    Json ts = Json::array(), v = Json::array();
    for (int64_t x : t.counter.ts) ts.push_back(sat_sub(x, origin));
    for (double x : t.counter.value) v.push_back(std::round(x * 100) / 100);
    j["series"] = t.series;
    j["unit"] = t.counter.unit;
    j["ts"] = ts;
    j["value"] = v;
  }
  return j;
}

// Duration values of each (domain, name) of ranges, for the page's "new histogram" control.
Json annotations_json(const Timeline& tl) {
  struct Acc {
    std::vector<int64_t> v;
    uint64_t count = 0;
  };
  std::map<std::string, Acc> by_name;
  for (const Track& t : tl.tracks) {
    const EventColumns& e = t.events;
    for (size_t i = 0; i < e.size(); ++i) {
      if (e.kind[i] != uint8_t(EventKind::Range)) continue;
      Acc& a = by_name[tl.strings.all()[e.name[i]]];
      ++a.count;
      if (a.v.size() < kMaxDurationsPerName) a.v.push_back(e.dur[i]);
    }
  }
  Json out = Json::array();
  for (auto& [name, a] : by_name) {
    out.push_back({{"name", name}, {"count", a.count}, {"durations_ns", a.v}, {"truncated", a.v.size() < a.count}});
  }
  return out;
}

// Aggregates a track's events in [t0, t1) into buckets of `bucket` ns per row: count, the span
// from the first start to the last end (clipped to the bucket), the name with the most time.
EventColumns aggregate(const EventColumns& e, int64_t t0, int64_t bucket, std::vector<uint32_t>* counts) {
  struct Bucket {
    int64_t start = 0, end = 0;
    uint32_t count = 0;
    std::map<uint32_t, int64_t> time;
    uint8_t kind = 0;
  };
  std::map<std::pair<uint16_t, int64_t>, Bucket> buckets;  // (row, index)
  for (size_t i = 0; i < e.size(); ++i) {
    int64_t b = std::max<int64_t>(0, sat_sub(e.start[i], t0) / bucket);
    Bucket& k = buckets[{e.row[i], b}];
    if (k.count == 0) k.start = e.start[i], k.kind = e.kind[i];
    k.end = std::max(k.end, sat_add(e.start[i], e.dur[i]));
    ++k.count;
    int64_t& tn = k.time[e.name[i]];
    tn = sat_add(tn, sat_add(e.dur[i], 1));
  }
  EventColumns out;
  for (const auto& [key, k] : buckets) {
    uint32_t name = 0;
    int64_t best = -1;
    for (const auto& [n, ns] : k.time)
      if (ns > best) best = ns, name = n;
    int64_t bucket_end = sat_add(t0, sat_add(key.second * bucket, bucket));  // key.second * bucket <= start - t0
    out.add(k.start, std::max<int64_t>(0, sat_sub(std::min(k.end, std::max(bucket_end, k.start)), k.start)), name,
            EventKind(k.kind), key.first, 0, 0, 0);
    counts->push_back(k.count);
  }
  // Buckets of several rows interleave: order by start like plain events.
  std::vector<size_t> idx(out.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return out.start[a] < out.start[b]; });
  EventColumns sorted;
  std::vector<uint32_t> c2;
  for (size_t i : idx) {
    sorted.add(out.start[i], out.dur[i], out.name[i], EventKind(out.kind[i]), out.row[i], 0, 0, 0);
    c2.push_back((*counts)[i]);
  }
  *counts = std::move(c2);
  return sorted;
}

void events_json(std::string& o, const Track& t, const EventColumns& e, int64_t origin,
                 const std::vector<uint32_t>* counts, int64_t bucket) {
  o += "{\"id\":";
  put_num(o, t.id);
  o += counts ? ",\"lod\":true,\"bucket_ns\":" : ",\"lod\":false";
  if (counts) put_num(o, bucket);
  column(o, "s", e.start, [&](int64_t v) { return sat_sub(v, origin); });
  column(o, "d", e.dur, [](int64_t v) { return v; });
  column(o, "n", e.name, [](uint32_t v) { return v; });
  column(o, "k", e.kind, [](uint8_t v) { return unsigned(v); });
  column(o, "r", e.row, [](uint16_t v) { return unsigned(v); });
  if (counts) {
    column(o, "cnt", *counts, [](uint32_t v) { return v; });
  } else {
    column(o, "c", e.corr, [](uint64_t v) { return v; });
    column(o, "b", e.bytes, [](uint64_t v) { return v; });
    column(o, "x", e.detail, [](uint32_t v) { return v; });
    if (std::any_of(e.backtrace.begin(), e.backtrace.end(), [](uint32_t v) { return v != 0; }))
      column(o, "bt", e.backtrace, [](uint32_t v) { return v; });
  }
  o += '}';
}

std::string timeline_doc(const Timeline& tl, const TimelineQuery& q) {
  int64_t origin = tl.t0_ns;
  int64_t t0 = std::max(q.t0_ns, tl.t0_ns), t1 = std::min(q.t1_ns, sat_add(tl.t1_ns, 1));
  int64_t bucket = q.width_px > 0 && t1 > t0 ? std::max<int64_t>(1, sat_sub(t1, t0) / q.width_px) : 0;
  std::string o = "{\"clock\":\"" + tl.clock + "\",\"origin_ns\":";
  put_num(o, origin);
  o += ",\"t0_ns\":";
  put_num(o, sat_sub(t0, origin));
  o += ",\"t1_ns\":";
  put_num(o, sat_sub(t1, origin));
  o += ",\"events\":";
  put_num(o, tl.events);
  if (tl.blocks_indexed) {
    o += ",\"blocks_read\":";
    put_num(o, tl.blocks_read);
    o += ",\"blocks_indexed\":";
    put_num(o, tl.blocks_indexed);
  }
  o += ",\"strings\":";
  o += dump(Json(tl.strings.all()));
  o += ",\"tracks\":[";
  bool first = true;
  for (const Track& t : tl.tracks) {
    if (t.kind != "thread" && t.kind != "stream") continue;
    if (!first) o += ',';
    first = false;
    if (bucket > 0 && t.events.size() > size_t(q.width_px) * 2) {
      std::vector<uint32_t> counts;
      EventColumns agg = aggregate(t.events, t0, bucket, &counts);
      events_json(o, t, agg, origin, &counts, bucket);
    } else {
      events_json(o, t, t.events, origin, nullptr, 0);
    }
  }
  o += "]}";
  return o;
}

std::string dashboard_doc(const std::string& job_path, const Timeline& tl, const SummaryModel& model,
                          const Json& unreadable) {
  Json j;
  j["format"] = "cutrace-report-1";
  j["job"] = job_path;
  j["clock"] = tl.clock;
  j["origin_ns"] = tl.t0_ns;
  j["extent_ns"] = tl.t1_ns - tl.t0_ns;
  j["events"] = tl.events;
  Json files = Json::array();
  for (const FileInfo& f : tl.files)
    files.push_back({{"path", f.path}, {"host", f.host}, {"rank", f.rank}, {"pid", f.pid}, {"cmdline", f.cmdline}});
  j["files"] = files;
  Json tracks = Json::array();
  for (const Track& t : tl.tracks) tracks.push_back(track_json(t, tl.t0_ns));
  j["tracks"] = tracks;
  j["annotations"] = annotations_json(tl);
  j["errors"] = tl.errors;
  j["clock_warnings"] = tl.clock_warnings;
  j["summary"] = model.to_json();
  // As `cutrace summary --json` adds it: null for one file.
  j["summary"]["stragglers"] = tl.files.size() > 1 ? straggler_json(tl.stragglers) : Json();
  j["summary"]["unreadable"] = unreadable;
  return dump(j);
}

bool summarize(const std::string& job_path, SummaryModel* model, Json* unreadable, std::string* err,
               std::vector<std::string>* unreadable_lines = nullptr) {
  TraceSet set(job_path);
  size_t opened = set.for_each([&](TraceReader& r) { model->add(r); });
  if (opened == 0) {
    *err = set.errors().empty() ? job_path + ": nothing to read" : set.errors().front();
    return false;
  }
  *unreadable = unreadable_json(set);
  if (unreadable_lines) *unreadable_lines = set.errors();
  return true;
}

}  // namespace

bool dashboard_json(const std::string& job_path, std::string* out, std::string* err) {
  return dashboard_json(job_path, out, err, nullptr);
}

bool dashboard_json(const std::string& job_path, std::string* out, std::string* err, TimelineIndex* index) {
  Timeline tl;
  if (!load_timeline(job_path, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), &tl, err,
                     index))
    return false;
  SummaryModel model;
  Json unreadable;
  if (!summarize(job_path, &model, &unreadable, err)) return false;
  *out = dashboard_doc(job_path, tl, model, unreadable);
  return true;
}

bool timeline_json(TimelineIndex& index, const TimelineQuery& q, std::string* out, std::string* err) {
  Timeline tl;
  if (!index.piece(q.t0_ns, q.t1_ns, &tl, err)) return false;
  *out = timeline_doc(tl, q);
  return true;
}

bool timeline_json(const std::string& job_path, const TimelineQuery& q, std::string* out, std::string* err) {
  Timeline tl;
  if (!load_timeline(job_path, q.t0_ns, q.t1_ns, &tl, err)) return false;
  *out = timeline_doc(tl, q);
  return true;
}

// Both documents from one read of the events (the summary model reads the files once more).
bool report_documents(const std::string& job_path, std::string* dashboard, std::string* timeline, std::string* err,
                      std::vector<std::string>* unreadable_lines) {
  Timeline tl;
  if (!load_timeline(job_path, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), &tl, err))
    return false;
  SummaryModel model;
  Json unreadable;
  if (!summarize(job_path, &model, &unreadable, err, unreadable_lines)) return false;
  *dashboard = dashboard_doc(job_path, tl, model, unreadable);
  *timeline = timeline_doc(tl, TimelineQuery{});
  return true;
}

}  // namespace cutrace::report
