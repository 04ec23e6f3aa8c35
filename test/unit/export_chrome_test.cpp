// `cutrace export --format chrome` on synthetic traces: the Kineto schema HTA and Perfetto read,
// exact times on the common clock, flows, escaping, one file per rank, errors.
#include <sys/stat.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "test/unit/export_fixture.h"
#include "tools/export/common.h"
#include "tools/export/exports.h"

using namespace cutrace;
using namespace cutrace::chrome_text;
using namespace export_fixture;
using nlohmann::json;

namespace {

constexpr int64_t kT0 = 1'000'000'000;      // capture start, file clock
constexpr int64_t kOffset = 5'000'000'123;  // file clock -> common clock
constexpr int64_t kBase = 6'000'000'000;    // floor to whole us of kT0 + kOffset

struct Exported {
  TempDir dir;
  std::string trace;
  std::string out;   // the JSON file
  std::string text;  // its bytes
  json doc;
};

// One rank (3 of 4), the standard trace, exported to <dir>/out/.
void export_standard(Exported& e) {
  e.trace = e.dir.path + "/node.rank3.pid4242.cutrace";
  {
    Builder b(e.trace, 3, 4, 4242, kT0);
    standard_trace(b, kT0);
    b.close();
  }
  std::string err;
  REQUIRE_MESSAGE(export_chrome({e.trace}, alignment_of({{e.trace, kOffset}}), e.dir.path + "/out", &err), err);
  e.out = e.dir.path + "/out/node.rank3.pid4242.json";
  e.text = read_file(e.out);
  REQUIRE(!e.text.empty());
  e.doc = json::parse(e.text);  // throws (fails the test) on invalid JSON
}

std::vector<json> events(const json& doc, const std::string& ph, const std::string& cat = "") {
  std::vector<json> out;
  for (const json& ev : doc["traceEvents"])
    if (ev["ph"] == ph && (cat.empty() || ev.value("cat", "") == cat)) out.push_back(ev);
  return out;
}

const json* named(const std::vector<json>& evs, const std::string& name) {
  for (const json& ev : evs)
    if (ev["name"] == name) return &ev;
  return nullptr;
}

// ts/dur are written with exactly three decimals: compare their text.
std::string us(int64_t rel_ns) {
  std::string s;
  put_us(s, rel_ns);
  return s;
}
bool text_has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("chrome: top level is Kineto's, with the rank written as HTA's regex wants it") {
  Exported e;
  export_standard(e);
  const json& d = e.doc;
  CHECK(d["schemaVersion"] == 1);
  CHECK(d["displayTimeUnit"] == "ms");
  CHECK(d["baseTimeNanoseconds"].get<int64_t>() == kBase);
  CHECK(d["traceName"] == e.out);
  CHECK(d["distributedInfo"]["backend"] == "nccl");
  CHECK(d["distributedInfo"]["rank"] == 3);
  CHECK(d["distributedInfo"]["world_size"] == 4);
  // HTA: re.search(r'"rank":\s+(\d+)', text): a space after the colon is required.
  std::smatch m;
  REQUIRE(std::regex_search(e.text, m, std::regex(R"("rank":\s+(\d+))")));
  CHECK(m[1] == "3");
  REQUIRE(d["deviceProperties"].size() == 2);
  const json& dev = d["deviceProperties"][0];
  CHECK(dev["id"] == 0);
  CHECK(dev["name"] == "NVIDIA H200");
  CHECK(dev["totalGlobalMem"] == 150109880320ull);
  CHECK(dev["computeMajor"] == 9);
  CHECK(dev["computeMinor"] == 0);
  CHECK(dev["numSms"] == 132);
  CHECK(exporter::g_stats.events == d["traceEvents"].size());
  CHECK(exporter::g_stats.outputs == std::vector<std::string>{e.out});
}

TEST_CASE("chrome: kernels, copies and sets on the device with exact times and Kineto's args") {
  Exported e;
  export_standard(e);
  auto kernels = events(e.doc, "X", "kernel");
  REQUIRE(kernels.size() == 2);  // "no_time" has no GPU side
  const json* gemm = named(kernels, "gemm");
  REQUIRE(gemm);
  CHECK((*gemm)["pid"] == 0);  // device
  CHECK((*gemm)["tid"] == 1);  // stream
  const json& a = (*gemm)["args"];
  CHECK(a["device"] == 0);
  CHECK(a["stream"] == 1);
  CHECK(a["correlation"] == 1001);
  CHECK(a["grid"] == json::array({4, 2, 1}));
  CHECK(a["block"] == json::array({128, 1, 1}));
  CHECK(a["registers per thread"] == 32);
  CHECK(a["shared memory"] == 3072);
  CHECK(a["queued"] == 0);
  CHECK(a["context"] == 0);
  // gpu 10'000..20'000 after kT0: ts = kT0 + 10'000 + offset - base = 10'123 ns.
  CHECK(text_has(e.text, "\"name\":\"gemm\",\"pid\":0,\"tid\":1,\"ts\":" + us(10'123) + ",\"dur\":" + us(10'000)));
  CHECK(us(10'123) == "10.123");
  CHECK(us(-1) == "-0.001");

  auto copies = events(e.doc, "X", "gpu_memcpy");
  REQUIRE(copies.size() == 1);
  CHECK(copies[0]["name"] == "Memcpy HtoD (Pinned -> Device)");
  CHECK(copies[0]["args"]["bytes"] == 4000);
  CHECK(copies[0]["args"]["memory bandwidth (GB/s)"].get<double>() == doctest::Approx(2.0));  // 4000 B in 2 us
  auto sets = events(e.doc, "X", "gpu_memset");
  REQUIRE(sets.size() == 1);
  CHECK(sets[0]["name"] == "Memset (Device)");
  CHECK(sets[0]["args"]["bytes"] == 1000);
}

TEST_CASE("chrome: every call's host side, syncs, launch -> GPU flows") {
  Exported e;
  export_standard(e);
  // Calls with a runtime counterpart are written under the runtime's name (cat cuda_runtime),
  // with CUPTI's runtime cbid and the driver function in args.
  auto host = events(e.doc, "X", "cuda_runtime");
  CHECK(events(e.doc, "X", "cuda_driver").empty());
  std::multiset<std::string> names;
  for (const json& h : host) {
    names.insert(h["name"].get<std::string>());
    CHECK(h["pid"] == 4242);
    CHECK(h["tid"] == 4242);
    CHECK(h["args"].contains("cbid"));
    CHECK(h["args"].contains("driver api"));
    CHECK(!h["args"].contains("stream"));
  }
  CHECK(names == std::multiset<std::string>{"cudaMalloc", "cudaLaunchKernel", "cudaLaunchKernel", "cudaLaunchKernel",
                                            "cudaMemcpyAsync", "cudaMemsetAsync", "cudaStreamSynchronize",
                                            "cudaEventRecord"});
  const json* launch = nullptr;
  for (const json& h : host)
    if (h["name"] == "cudaLaunchKernel" && h["args"]["correlation"] == 1001) launch = &h;
  REQUIRE(launch);
  CHECK((*launch)["args"]["cbid"] == 211);  // CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
  CHECK((*launch)["args"]["driver api"] == "cuLaunchKernel");
  CHECK((*launch)["args"]["External id"] == 3);  // the range "step" (id 3) it was launched in
  CHECK(text_has(e.text, "\"ts\":" + us(kT0 + 5'000 + kOffset - kBase) + ",\"dur\":" + us(1'000)));

  // The sync's GPU side: zero-length, on the stream's sync row, inside the span of the GPU work.
  auto syncs = events(e.doc, "X", "cuda_sync");
  REQUIRE(syncs.size() == 1);
  CHECK(syncs[0]["name"] == "Stream Sync");
  CHECK(syncs[0]["pid"] == 0);
  CHECK(syncs[0]["tid"] == 1000001);
  CHECK(syncs[0]["args"]["stream"] == 1);
  CHECK(syncs[0]["dur"].get<double>() == 0.0);
  CHECK(text_has(e.text, "\"name\":\"Stream Sync\",\"pid\":0,\"tid\":1000001,\"ts\":" + us(27'623)));

  // Flows: one s/f pair per GPU operation with time, id = correlation, f binds to the enclosing slice.
  auto s = events(e.doc, "s");
  auto f = events(e.doc, "f");
  REQUIRE(s.size() == 4);
  REQUIRE(f.size() == 4);
  std::map<uint64_t, json> start, finish;
  for (const json& ev : s) start[ev["id"].get<uint64_t>()] = ev;
  for (const json& ev : f) finish[ev["id"].get<uint64_t>()] = ev;
  for (const json& g : e.doc["traceEvents"]) {
    std::string cat = g.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    uint64_t corr = g["args"]["correlation"];
    REQUIRE(start.count(corr));
    REQUIRE(finish.count(corr));
    CHECK(start[corr]["cat"] == "ac2g");
    CHECK(start[corr]["name"] == "ac2g");
    CHECK(start[corr]["pid"] == 4242);
    CHECK(finish[corr]["bp"] == "e");
    CHECK(finish[corr]["pid"] == g["pid"]);
    CHECK(finish[corr]["tid"] == g["tid"]);
    // Both ends at the middle of their slice (a zero-length slice at a start would take them).
    CHECK(finish[corr]["ts"].get<double>() == doctest::Approx(g["ts"].get<double>() + g["dur"].get<double>() / 2));
  }
  // The launch without GPU time has no flow.
  for (const json& h : host)
    if (h["name"] == "cudaLaunchKernel" && h["args"]["correlation"] == 1003) CHECK(start.count(1003) == 0);
}

TEST_CASE("chrome: ranges, their GPU projections, marks, counters and metadata") {
  Exported e;
  export_standard(e);
  auto ranges = events(e.doc, "X", "user_annotation");
  REQUIRE(ranges.size() == 2);
  const json* step = named(ranges, "step");
  REQUIRE(step);
  CHECK((*step)["tid"] == 4242);
  CHECK((*step)["args"]["domain"] == "mylib");
  // The start/end range is an async pair (it need not nest), ending on its own thread.
  auto b = events(e.doc, "b", "user_annotation");
  auto en = events(e.doc, "e", "user_annotation");
  REQUIRE(b.size() == 1);
  REQUIRE(en.size() == 1);
  CHECK(b[0]["name"] == "async");
  CHECK(b[0]["id"] == en[0]["id"]);
  CHECK(en[0]["tid"] == 4343);  // the thread that ended it
  // GPU copies, as Kineto's: on the stream of the work each range was the innermost range of
  // ("step": gemm, the copy and the set; "inner": the hostile kernel); none for "async".
  auto gpu = events(e.doc, "X", "gpu_user_annotation");
  REQUIRE(gpu.size() == 2);
  for (const json& g : gpu) {
    CHECK(g["pid"] == 0);
    CHECK(g["tid"] == 1);
  }
  REQUIRE(named(gpu, "inner"));
  CHECK(text_has(e.text, "\"name\":\"inner\",\"pid\":0,\"tid\":1,\"ts\":" + us(20'123) + ",\"dur\":" + us(5'000)));
  CHECK(text_has(e.text, "\"name\":\"step\",\"pid\":0,\"tid\":1,\"ts\":" + us(10'123) + ",\"dur\":" + us(17'500)));

  auto marks = events(e.doc, "i", "user_annotation");
  REQUIRE(marks.size() == 1);
  CHECK(marks[0]["name"] == "checkpoint");

  auto counters = events(e.doc, "C");
  int cpu = 0, util = 0, mem = 0;
  for (const json& c : counters) {
    if (c["name"] == "CPU utilization") {
      ++cpu;
      CHECK(c["pid"] == 4242);
    }
    if (c["name"] == "GPU utilization") {
      ++util;
      CHECK(c["pid"] == 0);  // device 1 was sampled but not used by this process
      CHECK(c["args"]["util %"] == 87);
    }
    if (c["name"] == "GPU memory used") {
      ++mem;
      CHECK(c["args"]["GiB"].get<double>() == doctest::Approx(3.0));
    }
  }
  CHECK(cpu == 2);
  CHECK(util == 1);
  CHECK(mem == 1);
  const json* first_cpu = nullptr;
  for (const json& c : counters)
    if (c["name"] == "CPU utilization") {
      first_cpu = &c;
      break;
    }
  REQUIRE(first_cpu);
  CHECK((*first_cpu)["args"]["host %"].get<double>() == doctest::Approx(12.34));
  CHECK((*first_cpu)["args"]["process %"].get<double>() == doctest::Approx(100.5));

  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  std::map<int64_t, std::string> process_names;
  for (const json& m : events(e.doc, "M")) {
    if (m["name"] == "thread_name") thread_names[{m["pid"], m["tid"]}] = m["args"]["name"];
    if (m["name"] == "process_name") process_names[m["pid"]] = m["args"]["name"];
  }
  CHECK(process_names[4242] == "python3 (rank 3)");
  CHECK(process_names[0] == "GPU 0");
  CHECK(process_names.count(1) == 0);
  CHECK(thread_names[{4242, 4242}] == "trainer (4242)");
  CHECK(thread_names[{0, 1}] == "stream 1");
  CHECK(thread_names[{0, 1000001}] == "stream 1 (sync)");
}

TEST_CASE("chrome: hostile names are escaped, and come back intact") {
  Exported e;
  export_standard(e);
  CHECK(!text_has(e.text, "<img"));
  CHECK(!text_has(e.text, "onerror=alert(1)>"));
  CHECK(text_has(e.text, "\\u003cimg src=x onerror=alert(1)\\u003e\\\"\\\\"));
  auto kernels = events(e.doc, "X", "kernel");
  CHECK(named(kernels, kHostile) != nullptr);

  std::string o;
  append_json_string(o, std::string("a\x01\n\t\"\\b\xff\xc3\xa9\xe2\x80\xa8z", 14));
  CHECK(o == "\"a\\u0001\\n\\t\\\"\\\\b\\ufffd\xc3\xa9\\u2028z\"");
  CHECK(json::parse(o).get<std::string>() == "a\x01\n\t\"\\b\xef\xbf\xbd\xc3\xa9\xe2\x80\xa8z");
  o.clear();
  append_json_string(o,
                     std::string("\xe0\x80\x80\xed\xa0\x80\xf4\x90\x80\x80", 10));  // overlong, surrogate, > U+10FFFF
  CHECK(json::parse(o).get<std::string>().find("\xef\xbf\xbd") == 0);
  CHECK(o.find('\xe0') == std::string::npos);
}

TEST_CASE("chrome: one file per rank, one base for all, offsets applied") {
  TempDir dir;
  std::string r0 = dir.path + "/h.rank0.pid100.cutrace", r1 = dir.path + "/h.rank1.pid200.cutrace";
  {
    Builder b(r0, 0, 2, 100, 1'000'000'000, 0);
    b.kernel("k", 1'000'001'000, 1'000'002'000, 1'000'010'000, 1'000'020'000);
    b.close();
  }
  {
    Builder b(r1, 1, 2, 200, 2'000'000'000, 1);
    b.kernel("k", 2'000'001'000, 2'000'002'000, 2'000'010'000, 2'000'020'000);
    b.gpu_sample(2'000'030'000, 0, 5, 1);  // not this rank's GPU
    b.gpu_sample(2'000'030'000, 1, 50, 1);
    b.close();
  }
  // Rank 1's clock runs 1 s ahead of rank 0's, and it started 3.5 us before it.
  Alignment a = alignment_of({{r0, 7'000'000'000}, {r1, 5'999'996'500}});
  std::string err;
  REQUIRE_MESSAGE(export_chrome({r0, r1}, a, dir.path + "/json", &err), err);
  json d0 = json::parse(read_file(dir.path + "/json/h.rank0.pid100.json"));
  json d1 = json::parse(read_file(dir.path + "/json/h.rank1.pid200.json"));
  CHECK(d0["baseTimeNanoseconds"] == 7'999'996'000);  // rank 1's start, floored to 1 us
  CHECK(d1["baseTimeNanoseconds"] == 7'999'996'000);
  CHECK(d0["distributedInfo"]["rank"] == 0);
  CHECK(d1["distributedInfo"]["rank"] == 1);
  auto k0 = events(d0, "X", "kernel");
  auto k1 = events(d1, "X", "kernel");
  REQUIRE(k0.size() == 1);
  REQUIRE(k1.size() == 1);
  CHECK(k0[0]["ts"].get<double>() == doctest::Approx(14.0));  // 8'000'010'000 - base
  CHECK(k1[0]["ts"].get<double>() == doctest::Approx(10.5));
  CHECK(k1[0]["pid"] == 1);  // rank 1 ran on device 1
  int util1 = 0;
  for (const json& c : events(d1, "C"))
    if (c["name"] == "GPU utilization") {
      CHECK(c["pid"] == 1);
      ++util1;
    }
  CHECK(util1 == 1);
  CHECK(exporter::g_stats.outputs.size() == 2);
}

TEST_CASE("chrome: one trace to FILE.json; clear errors") {
  TempDir dir;
  std::string t = dir.path + "/a.cutrace";
  {
    Builder b(t, 0, 1, 7, 1'000);
    b.kernel("k", 2'000, 3'000, 4'000, 5'000);
    b.close();
  }
  std::string err;
  REQUIRE_MESSAGE(export_chrome({t}, alignment_of({{t, 0}}), dir.path + "/one.json", &err), err);
  json d = json::parse(read_file(dir.path + "/one.json"));
  CHECK(d["baseTimeNanoseconds"] == 1'000);
  CHECK(!d.contains("distributedInfo"));  // world size 1
  CHECK(events(d, "X", "kernel").size() == 1);

  // A file that is not a trace: skipped and named in g_stats.skipped, the others exported.
  std::string junk = dir.path + "/junk.cutrace";
  { std::ofstream(junk) << "not a trace"; }
  err.clear();
  CHECK(export_chrome({t, junk}, alignment_of({{t, 0}}), dir.path + "/two", &err));
  REQUIRE(exporter::g_stats.skipped.size() == 1);
  CHECK(exporter::g_stats.skipped[0].find("junk.cutrace") != std::string::npos);
  CHECK(read_file(dir.path + "/two/a.json").size() > 0);
  // Only files that do not open: an error naming them, nothing written.
  err.clear();
  CHECK(!export_chrome({junk}, alignment_of({{t, 0}}), dir.path + "/three", &err));
  CHECK(err.find("junk.cutrace") != std::string::npos);

  // An output directory that cannot be made.
  err.clear();
  CHECK(!export_chrome({t}, alignment_of({{t, 0}}), dir.path + "/one.json/sub", &err));
  CHECK(!err.empty());
  err.clear();
  CHECK(!export_chrome({}, Alignment{}, dir.path + "/x", &err));
  CHECK(!err.empty());
}
