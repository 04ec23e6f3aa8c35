// CPU performance counters: name resolution (perf names, raw codes, sysfs event lists), the
// multiplexing arithmetic, the missing-counter line, and synthetic hardware counter samples
// written as the collector writes them and read back through the summary and its JSON, so
// cycles, instructions and IPC are tested on machines without a PMU.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "collector/cpu_counters.h"
#include "temp_dir.h"
#include "tools/analysis/summary_model.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

void put(const std::string& path, const std::string& text) { std::ofstream(path) << text << "\n"; }

// A fake event_source tree: one PMU "cpu" (type 4) with an Intel-style format and two events.
void fake_sysfs(const std::string& root) {
  mkdir((root + "/cpu").c_str(), 0755);
  mkdir((root + "/cpu/events").c_str(), 0755);
  mkdir((root + "/cpu/format").c_str(), 0755);
  put(root + "/cpu/type", "4");
  put(root + "/cpu/format/event", "config:0-7");
  put(root + "/cpu/format/umask", "config:8-15");
  put(root + "/cpu/format/cmask", "config:24-31");
  put(root + "/cpu/format/edge", "config:18");
  put(root + "/cpu/format/ldlat", "config1:0-15");
  put(root + "/cpu/events/itlb_misses.miss_causes_a_walk", "event=0x85,umask=0x01");
  put(root + "/cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3,edge");
  put(root + "/cpu/events/bad", "event=0x1,nosuchterm=2");
}

trace::CounterDefRec def(uint16_t id, TraceWriter& w, const char* name, trace::CounterScope scope, int cpu) {
  trace::CounterDefRec d{};
  d.counter = id;
  d.scope = uint8_t(scope);
  d.cpu = cpu;
  d.name_id = w.intern(name);
  w.add(d, trace::RecType::CounterDef);
  return d;
}

}  // namespace

TEST_CASE("CPU counter names resolve to perf generic events and raw codes") {
  CounterSpec s;
  std::string why;
  REQUIRE(resolve_counter("cycles", "/nonexistent", &s, &why));
  CHECK(s.type == 0);  // PERF_TYPE_HARDWARE
  CHECK(s.config == 0);
  CHECK(s.per_cpu);
  REQUIRE(resolve_counter("Instructions", "/nonexistent", &s, &why));
  CHECK(s.config == 1);
  REQUIRE(resolve_counter("dtlb-misses", "/nonexistent", &s, &why));
  CHECK(s.type == 3);          // PERF_TYPE_HW_CACHE
  CHECK(s.config == 0x10003);  // DTLB | READ << 8 | MISS << 16
  REQUIRE(resolve_counter("task-clock", "/nonexistent", &s, &why));
  CHECK(s.software);
  CHECK_FALSE(s.per_cpu);
  CHECK(s.unit == trace::CounterUnit::Nanoseconds);
  REQUIRE(resolve_counter("context-switches", "/nonexistent", &s, &why));
  CHECK(s.per_cpu);
  REQUIRE(resolve_counter("r01c2", "/nonexistent", &s, &why));
  CHECK(s.type == 4);  // PERF_TYPE_RAW
  CHECK(s.config == 0x01c2);
}

TEST_CASE("CPU counter names are looked up in the sysfs event lists and encoded through the PMU's format") {
  cutrace_test::TempDir dir("cutrace_counters");
  fake_sysfs(dir.path);
  CounterSpec s;
  std::string why;
  REQUIRE(resolve_counter("itlb_misses.miss_causes_a_walk", dir.path, &s, &why));
  CHECK(s.type == 4);
  CHECK(s.config == 0x0185);
  CHECK(s.per_cpu);
  REQUIRE(resolve_counter("cpu/mem-loads/", dir.path, &s, &why));
  CHECK(s.config == (0x01cdull | (1ull << 18)));
  CHECK(s.config1 == 3);
  CHECK_FALSE(resolve_counter("cpu/bad", dir.path, &s, &why));
  CHECK(why.find("nosuchterm") != std::string::npos);
  CHECK_FALSE(resolve_counter("no_such_event", dir.path, &s, &why));
  CHECK(why.find("not listed in " + dir.path + "/*/events") != std::string::npos);
  CHECK_FALSE(resolve_counter("other/itlb_misses.miss_causes_a_walk", dir.path, &s, &why));
  CHECK_FALSE(resolve_counter("../cpu", dir.path, &s, &why));
}

TEST_CASE("a multiplexed counter's delta is scaled up by the share of the interval it counted") {
  CounterReading a{1000, 100, 100}, b{3000, 200, 200};
  trace::CounterValue v = counter_delta(7, a, b);
  CHECK(v.counter == 7);
  CHECK(v.delta == 2000);
  CHECK(v.running == 10000);
  CounterReading c{4000, 400, 300};  // counted 100 of the 200 ns
  v = counter_delta(7, b, c);
  CHECK(v.delta == 2000);
  CHECK(v.running == 5000);
  CounterReading d{4000, 500, 300};  // not counted at all
  v = counter_delta(7, c, d);
  CHECK(v.delta == 0);
  CHECK(v.running == 0);
  CounterReading rusage_like{50, 0, 0}, later{80, 0, 0};
  CHECK(counter_delta(0, rusage_like, later).delta == 30);
}

TEST_CASE("the missing-counter line groups counters by reason, in the order asked") {
  std::string line = missing_counters_line(
      {{"cycles", "no hardware PMU"}, {"instructions", "no hardware PMU"}, {"cpu-migrations per CPU", "paranoid"}});
  CHECK(line == "cycles, instructions: no hardware PMU; cpu-migrations per CPU: paranoid");
}

TEST_CASE("synthetic hardware counter samples give the summary's totals, rates and IPC, and its JSON keys") {
  std::string bytes;
  TraceWriter w;
  w.open_memory(&bytes);
  w.meta("rank", "0");
  def(0, w, "cycles", trace::CounterScope::Process, -1);
  def(1, w, "instructions", trace::CounterScope::Process, -1);
  def(2, w, "cycles", trace::CounterScope::Cpu, 0);
  def(3, w, "cycles", trace::CounterScope::Cpu, 1);
  trace::CounterMissingRec m{};
  m.name_id = w.intern("cpu-migrations");
  m.reason_id = w.intern("perf_event_paranoid is 2");
  m.err = 13;
  m.scope = uint8_t(trace::CounterScope::Cpu);
  w.add(m, trace::RecType::CounterMissing);
  // Three 100 ms intervals: 2e8 cycles and 3e8 instructions each, the last multiplexed at half.
  std::vector<CounterReading> prev(4), cur(4);
  for (int i = 1; i <= 3; ++i) {
    int64_t t = 1000000000 + int64_t(i) * 100000000;
    uint64_t en = uint64_t(i) * 100000000, run = i < 3 ? en : en - 50000000;
    uint64_t counted = i < 3 ? 1 : 0;  // in the multiplexed interval half the events are seen
    cur[0] = {prev[0].value + (counted ? 200000000 : 100000000), en, run};
    cur[1] = {prev[1].value + (counted ? 300000000 : 150000000), en, run};
    cur[2] = {prev[2].value + 150000000, en, en};
    cur[3] = {prev[3].value + 50000000, en, en};
    std::vector<trace::CounterValue> vals;
    for (uint16_t c = 0; c < 4; ++c) vals.push_back(counter_delta(c, prev[c], cur[c]));
    write_counter_sample(w, t, 100000000, vals);
    prev = cur;
  }
  w.close(0, trace::kEndClean);

  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(bytes, "host.rank0.pid1.cutrace", &err));
  SummaryModel model;
  REQUIRE(model.add(r));
  REQUIRE(model.files().size() == 1);
  const tools::CounterSet& cs = model.files()[0].counters;
  CHECK(cs.samples() == 3);
  REQUIRE(cs.tracks().size() == 4);
  const tools::CounterTrack* cyc = cs.find("cycles");
  REQUIRE(cyc);
  CHECK(cyc->total == 600000000);
  CHECK(cyc->min_running == 5000);
  CHECK(cyc->per_second() == doctest::Approx(2e9));
  CHECK(cs.ipc() == doctest::Approx(1.5));
  auto series = cs.ipc_series();
  REQUIRE(series.size() == 3);
  CHECK(series[2].value == doctest::Approx(1.5));
  const tools::CounterTrack* cpu1 = cs.find("cycles", trace::CounterScope::Cpu, 1);
  REQUIRE(cpu1);
  CHECK(cpu1->total == 150000000);
  REQUIRE(cs.missing().size() == 1);
  CHECK(cs.missing()[0].reason == "perf_event_paranoid is 2");

  auto j = model.to_json();
  const auto& cj = j["ranks"][0]["cpu_counters"];
  CHECK(cj["samples"] == 3);
  CHECK(double(cj["ipc"]) == doctest::Approx(1.5));
  REQUIRE(cj["counters"].size() == 4);
  CHECK(cj["counters"][0]["name"] == "cycles");
  CHECK(cj["counters"][0]["scope"] == "process");
  CHECK(cj["counters"][0]["total"] == 600000000);
  CHECK(double(cj["counters"][0]["min_running"]) == doctest::Approx(0.5));
  CHECK(cj["counters"][3]["cpu"] == 1);
  CHECK(cj["missing"][0]["name"] == "cpu-migrations");
  CHECK(cj["missing"][0]["scope"] == "cpu");
  CHECK(cj["missing"][0]["errno"] == 13);
}

TEST_CASE("without perf_event_open the software counters come from getrusage and still sample") {
  std::string bytes;
  TraceWriter w;
  w.open_memory(&bytes);
  CpuCounters c;
  CounterOpenOptions o;
  o.perf = false;
  CHECK(c.open(w, "none", 100000000, o) == 3);  // task-clock, context-switches, page-faults
  c.sample(w, 1000000000);                      // the baseline: nothing written
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i) x = x + i;
  std::vector<char> touch(1 << 22, 1);  // page faults
  c.sample(w, 1100000000);
  w.close(0, trace::kEndClean);
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(bytes, "host.rank0.pid1.cutrace", &err));
  SummaryModel model;
  REQUIRE(model.add(r));
  const tools::CounterSet& cs = model.files()[0].counters;
  CHECK(cs.samples() == 1);
  const tools::CounterTrack* tc = cs.find("task-clock");
  REQUIRE(tc);
  CHECK(tc->source == 1);
  CHECK(tc->unit == trace::CounterUnit::Nanoseconds);
  CHECK(tc->total > 0);
  REQUIRE(cs.find("page-faults"));
  CHECK(cs.find("page-faults")->total > 0);
  REQUIRE(cs.missing().size() == 1);  // cpu-migrations has no stand-in
  CHECK(cs.missing()[0].name == "cpu-migrations");
  CHECK(cs.missing()[0].reason == "the kernel has no perf_event_open");
  bool meta = false;
  for (const auto& [k, v] : r.metas())
    if (k == "cpu_counters_missing") meta = v.find("cpu-migrations: the kernel has no perf_event_open") == 0;
  CHECK(meta);
}

TEST_CASE("counters opened on this machine: software ones counted, each missing one named with its reason") {
  std::string bytes;
  TraceWriter w;
  w.open_memory(&bytes);
  CpuCounters c;
  size_t n = c.open(w, "", 100000000);
  CHECK(n >= 3);
  c.sample(w, 1000000000);
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i) x = x + i;
  c.sample(w, 1100000000);
  w.close(0, trace::kEndClean);
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(bytes, "host.rank0.pid1.cutrace", &err));
  SummaryModel model;
  REQUIRE(model.add(r));
  const tools::CounterSet& cs = model.files()[0].counters;
  const tools::CounterTrack* tc = cs.find("task-clock");
  REQUIRE(tc);
  CHECK(tc->total > 10000000);  // the loop above ran for more than 10 ms
  bool pmu = access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
             access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0;
  for (const char* hw : {"cycles", "instructions", "cache-misses", "branch-misses", "itlb-misses", "dtlb-misses"}) {
    bool have = cs.find(hw) != nullptr;
    const tools::CounterMissing* miss = nullptr;
    for (const auto& m : cs.missing())
      if (m.name == hw && m.scope == trace::CounterScope::Process) miss = &m;
    CHECK_MESSAGE(have != (miss != nullptr), hw);  // each is either recorded or named missing
    if (!pmu && miss) CHECK(miss->reason.find("no hardware PMU") == 0);
    if (!pmu) CHECK_FALSE(have);
  }
}
