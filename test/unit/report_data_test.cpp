// The report's data layer (tools/report/data.h): the track tree, columnar events linked by
// correlation id, level-of-detail aggregation, the embedded summary, and HTML-safe JSON.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tools/analysis/align.h"
#include "tools/analysis/summary_model.h"
#include "tools/common/format_util.h"
#include "tools/report/data.h"
#include "tools/report/tracks.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;
using Json = nlohmann::json;

namespace {

const char* const kEvil = "<img src=x onerror=alert(1)>";

// A one-rank trace: `kernels` launches of alternating names on stream 1 (1 us each, every 2 us),
// inside one NVTX range named kEvil.
std::string write_trace(int kernels) {
  std::string path =
      "/tmp/cutrace_report_test_" + std::to_string(getpid()) + "_" + std::to_string(kernels) + ".cutrace";
  std::remove(path.c_str());
  TraceWriter w;
  std::string err;
  REQUIRE(w.open(path, &err));
  w.meta("host", "node-a");
  w.meta("rank", "0");
  w.meta("pid", "100");
  w.api_name(1, "cuLaunchKernel");
  cutrace::trace::StreamRec s{};
  s.stream = 1;
  w.add(s, cutrace::trace::RecType::Stream);
  const int64_t base = 1'000'000'000;
  for (int i = 0; i < kernels; ++i) {
    cutrace::trace::KernelRec k{};
    k.op.corr = uint64_t(i + 1);
    k.op.cpu_begin = base + i * 2000;
    k.op.cpu_end = k.op.cpu_begin + 100;
    k.op.gpu_start = k.op.cpu_end + 400;
    k.op.gpu_end = k.op.gpu_start + 1000;
    k.op.tid = 100;
    k.op.stream = 1;
    k.op.api = 1;
    k.name_id = w.intern(i % 2 ? "gemm" : kEvil);
    k.grid[0] = 128, k.grid[1] = k.grid[2] = 1;
    k.block[0] = 256, k.block[1] = k.block[2] = 1;
    w.add(k, cutrace::trace::RecType::Kernel);
  }
  cutrace::trace::RangeRec r{};
  r.cpu_begin = base - 10;
  r.cpu_end = base + kernels * 2000;
  r.tid = 100;
  r.end_tid = 100;
  r.name_id = w.intern(kEvil);
  r.kind = uint8_t(cutrace::trace::RangeKind::PushPop);
  w.add(r, cutrace::trace::RecType::Range);
  REQUIRE(w.close(0, cutrace::trace::kEndClean));
  return path;
}

const Json* track(const Json& tl, const Json& dash, const std::string& kind) {
  for (const Json& t : dash["tracks"]) {
    if (t["kind"] != kind) continue;
    for (const Json& e : tl["tracks"])
      if (e["id"] == t["id"]) return &e;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("report timeline: every event in columns, launches linked to kernels by correlation id") {
  std::string path = write_trace(6);
  std::string dash_s, tl_s, err;
  REQUIRE(report::dashboard_json(path, &dash_s, &err));
  REQUIRE(report::timeline_json(path, report::TimelineQuery{}, &tl_s, &err));
  Json dash = Json::parse(dash_s), tl = Json::parse(tl_s);

  CHECK(dash["clock"] == "monotonic");  // one file: its own clock, as cutrace summary
  CHECK(tl["clock"] == "monotonic");
  // host -> process -> thread, gpu -> stream
  std::vector<std::string> kinds;
  for (const Json& t : dash["tracks"]) kinds.push_back(t["kind"]);
  CHECK(kinds[0] == "host");
  CHECK(kinds[1] == "process");
  CHECK(std::count(kinds.begin(), kinds.end(), "thread") == 1);
  CHECK(std::count(kinds.begin(), kinds.end(), "stream") == 1);

  const Json* thread = track(tl, dash, "thread");
  const Json* stream = track(tl, dash, "stream");
  REQUIRE(thread);
  REQUIRE(stream);
  CHECK((*thread)["s"].size() == 7);  // 6 launch calls + the range
  CHECK((*stream)["s"].size() == 6);
  CHECK((*stream)["lod"] == false);
  // Sorted by start; relative to origin_ns (the range starts first: 0).
  CHECK((*thread)["s"][0] == 0);
  CHECK((*stream)["d"][0] == 1000);
  // The range is on row 0, the API calls below it on row 1.
  CHECK((*thread)["r"][0] == 0);
  CHECK((*thread)["r"][1] == 1);
  // Kernel i runs 500 ns after its launch call begins, and both carry correlation id i + 1.
  for (size_t i = 0; i < 6; ++i) {
    CHECK((*stream)["c"][i] == (*thread)["c"][i + 1]);
    CHECK((*stream)["s"][i].get<int64_t>() - (*thread)["s"][i + 1].get<int64_t>() == 500);
  }
  const Json& strings = tl["strings"];
  CHECK(strings[(*stream)["n"][0].get<size_t>()] == kEvil);
  CHECK(strings[(*stream)["x"][0].get<size_t>()].get<std::string>().find("grid 128x1x1") == 0);
  CHECK(strings[(*thread)["n"][1].get<size_t>()] == "cuLaunchKernel");

  // The dashboard embeds the summary model's own document, with `stragglers` and `unreadable` as
  // `cutrace summary --json` adds them (null for one file; no file that did not open).
  SummaryModel m;
  TraceSet set(path);
  set.for_each([&](TraceReader& r) { m.add(r); });
  Json want = Json::parse(m.to_json().dump());
  want["stragglers"] = nullptr;
  want["unreadable"] = Json::array();
  CHECK(dash["summary"] == want);
  CHECK(dash["summary"]["kernel_totals"]["count"] == 6);
  // Range durations for the page's histograms.
  REQUIRE(dash["annotations"].size() == 1);
  CHECK(dash["annotations"][0]["name"] == kEvil);
  CHECK(dash["annotations"][0]["durations_ns"][0] == 12010);
  std::remove(path.c_str());
}

TEST_CASE("report JSON never contains a raw '<' (a name cannot close the page's script element)") {
  std::string path = write_trace(2);
  std::string dash, tl, err;
  REQUIRE(report::dashboard_json(path, &dash, &err));
  REQUIRE(report::timeline_json(path, report::TimelineQuery{}, &tl, &err));
  CHECK(dash.find('<') == std::string::npos);
  CHECK(tl.find('<') == std::string::npos);
  CHECK(tl.find("\\u003cimg") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("report timeline aggregates a crowded track into about width_px buckets, keeping counts") {
  std::string path = write_trace(10000);
  std::string tl_s, dash_s, err;
  report::TimelineQuery q;
  q.width_px = 100;
  REQUIRE(report::timeline_json(path, q, &tl_s, &err));
  REQUIRE(report::dashboard_json(path, &dash_s, &err));
  Json tl = Json::parse(tl_s), dash = Json::parse(dash_s);
  const Json* stream = track(tl, dash, "stream");
  REQUIRE(stream);
  CHECK((*stream)["lod"] == true);
  CHECK((*stream)["s"].size() <= 101);
  CHECK((*stream)["s"].size() >= 99);
  uint64_t n = 0;
  for (const Json& c : (*stream)["cnt"]) n += c.get<uint64_t>();
  CHECK(n == 10000);

  // A range query keeps only the events overlapping it: kernels 10..19 (and the range).
  report::TimelineQuery r;
  r.t0_ns = 1'000'000'000 + 10 * 2000 + 500;
  r.t1_ns = 1'000'000'000 + 20 * 2000;
  REQUIRE(report::timeline_json(path, r, &tl_s, &err));
  tl = Json::parse(tl_s);
  stream = track(tl, dash, "stream");
  REQUIRE(stream);
  CHECK((*stream)["s"].size() == 10);
  std::remove(path.c_str());
}

TEST_CASE("report memory chart: allocations made once hold their size to the end of the trace") {
  // As a caching allocator does: two allocations in the first microseconds, then 1 ms of kernels.
  std::string path = "/tmp/cutrace_report_mem_" + std::to_string(getpid()) + ".cutrace";
  std::remove(path.c_str());
  TraceWriter w;
  std::string err;
  REQUIRE(w.open(path, &err));
  w.meta("pid", "100");
  const int64_t base = 1'000'000'000;
  for (int i = 0; i < 2; ++i) {
    cutrace::trace::MemoryRec m{};
    m.cpu_begin = base + i * 1000, m.cpu_end = m.cpu_begin + 500;
    m.address = 0x7000000 + uint64_t(i) * 0x100000, m.bytes = 1 << 20;
    m.tid = 100, m.op = uint8_t(cutrace::trace::MemOp::Alloc), m.mem_kind = uint8_t(cutrace::trace::MemKind::Device);
    w.add(m, cutrace::trace::RecType::Memory);
  }
  cutrace::trace::KernelRec k{};
  k.op.corr = 1, k.op.tid = 100, k.op.stream = 1;
  k.op.cpu_begin = base + 999'000, k.op.cpu_end = base + 999'100;
  k.op.gpu_start = base + 999'200, k.op.gpu_end = base + 1'000'000;
  k.name_id = w.intern("gemm");
  w.add(k, cutrace::trace::RecType::Kernel);
  REQUIRE(w.close(0, cutrace::trace::kEndClean));
  std::string dash_s;
  REQUIRE_MESSAGE(report::dashboard_json(path, &dash_s, &err), err);
  Json dash = Json::parse(dash_s);
  const Json* mem = nullptr;
  for (const Json& t : dash["tracks"])
    if (t["kind"] == "counter" && t["series"] == "gpu_mem_alloc") mem = &t;
  REQUIRE(mem);
  REQUIRE((*mem)["ts"].size() == 3);
  CHECK((*mem)["value"][0] == 1 << 20);
  CHECK((*mem)["value"][1] == 2 << 20);
  CHECK((*mem)["value"][2] == 2 << 20);              // held ...
  CHECK((*mem)["ts"][2].get<int64_t>() >= 999'000);  // ... to the last event, 1 ms later
  std::remove(path.c_str());
}

TEST_CASE("report timeline: NVML SM clock, power and temperature become GPU counter tracks, absent ones none") {
  std::string path = "/tmp/cutrace_report_nvml_" + std::to_string(getpid()) + ".cutrace";
  std::remove(path.c_str());
  TraceWriter w;
  std::string err;
  REQUIRE(w.open(path, &err));
  w.meta("pid", "100");
  for (int i = 0; i < 3; ++i) {
    cutrace::trace::GpuSampleRec g{};
    g.ts = 1'000'000'000 + i * 100'000'000;
    g.device = 0;
    g.util = uint16_t(50 + i);
    g.sm_clock_mhz = uint32_t(1980 - 10 * i);
    g.power_mw = uint32_t(350'000 + 1000 * i);
    g.temp_c = 0;  // NVML gave no temperature
    w.add(g, cutrace::trace::RecType::GpuSample);
  }
  REQUIRE(w.close(0, cutrace::trace::kEndClean));
  std::string dash_s;
  REQUIRE_MESSAGE(report::dashboard_json(path, &dash_s, &err), err);
  Json dash = Json::parse(dash_s);
  std::map<std::string, const Json*> by;
  for (const Json& t : dash["tracks"])
    if (t["kind"] == "counter") by[t["series"].get<std::string>()] = &t;
  REQUIRE(by.count("gpu_sm_clock"));
  REQUIRE(by.count("gpu_power"));
  CHECK_FALSE(by.count("gpu_temp"));
  CHECK((*by["gpu_sm_clock"])["value"] == Json::array({1980, 1970, 1960}));
  CHECK((*by["gpu_power"])["value"] == Json::array({350, 351, 352}));
  CHECK((*by["gpu_power"])["unit"] == "W");
  CHECK((*by["gpu_sm_clock"])["device"] == 0);
  std::remove(path.c_str());
}
