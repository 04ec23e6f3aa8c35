// Merged job files (trace/job_file.h, `cutrace merge -o`): the tools read one as they read the
// directory it was merged from, on the offsets the merge reported.
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "test/unit/job_fixture.h"
#include "test/unit/temp_dir.h"
#include "tools/analysis/align.h"
#include "tools/analysis/summary_model.h"
#include "tools/export/exports.h"
#include "tools/report/data.h"
#include "trace/job_file.h"
#include "trace/reader.h"

using namespace cutrace;
using cutrace_test::SimJob;
using cutrace_test::TempDir;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string summary_json(const std::string& where) {
  SummaryModel m;
  TraceSet set(where);
  set.for_each([&](TraceReader& r) { m.add(r); });
  REQUIRE(set.errors().empty());
  return m.to_json().dump();
}

// A job of two ranks written to `dir`, merged into `merged`.
Alignment merge_two(const TempDir& dir, const std::string& merged) {
  SimJob j = cutrace_test::two_hosts_windows_apart();
  std::vector<std::string> files = j.write_all(dir.path);
  Alignment a = align_traces(list_trace_files(dir.path));
  std::string err;
  REQUIRE_MESSAGE(write_merged(merged, list_trace_files(dir.path), a, 50'000'000, &err), err);
  return a;
}

}  // namespace

TEST_CASE("job file: a merged file lists its members and reads as the directory did") {
  TempDir dir, out;
  std::string merged = out.path + "/job.cutrace";
  Alignment a = merge_two(dir, merged);
  std::vector<std::string> members = list_trace_files(merged);
  REQUIRE(members.size() == 2);
  CHECK(members[0] == merged + "/node-a.rank0.pid100.cutrace");
  CHECK(members[1] == merged + "/node-b.rank1.pid101.cutrace");
  // Byte for byte: every record as in the original.
  for (size_t i = 0; i < 2; ++i) {
    TraceReader x, y;
    std::string err;
    REQUIRE(x.open(list_trace_files(dir.path)[i], &err));
    REQUIRE_MESSAGE(y.open(members[i], &err), err);
    std::vector<std::string> rx, ry;
    x.read([&](const Record& r) { rx.emplace_back(r.data(), r.size()); });
    y.read([&](const Record& r) { ry.emplace_back(r.data(), r.size()); });
    CHECK(rx == ry);
    CHECK(y.status().complete);
    CHECK(rx.size() > 150);
  }
  CHECK(replace_all(summary_json(merged), merged, "X") == replace_all(summary_json(dir.path), dir.path, "X"));
  // The offsets are the merge's, stored in the file.
  Alignment b = align_traces(members);
  CHECK(b.method == "merged file: realtime+nccl");
  REQUIRE(b.ranks.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(b.ranks[i].offset_ns == a.ranks[i].offset_ns);
    CHECK(b.ranks[i].matched == a.ranks[i].matched);
    CHECK(b.ranks[i].status == a.ranks[i].status);
  }
  CHECK(b.ranks[1].refined_ns == -3'000'000);
  CHECK(b.matched == 34);
}

TEST_CASE("job file: exports and the report of a merged file equal the directory's") {
  TempDir dir, out;
  std::string merged = out.path + "/job.cutrace";
  merge_two(dir, merged);
  std::string err;
  for (const char* fmt : {"chrome", "perfetto"}) {
    CAPTURE(fmt);
    std::string o1 = out.path + "/from_dir." + fmt, o2 = out.path + "/from_merged." + fmt;
    std::vector<std::string> f1 = list_trace_files(dir.path), f2 = list_trace_files(merged);
    bool chrome = std::string(fmt) == "chrome";
    REQUIRE((chrome ? export_chrome(f1, align_traces(f1), o1, &err) : export_perfetto(f1, align_traces(f1), o1, &err)));
    REQUIRE((chrome ? export_chrome(f2, align_traces(f2), o2, &err) : export_perfetto(f2, align_traces(f2), o2, &err)));
    for (const char* rank : {"node-a.rank0.pid100", "node-b.rank1.pid101"}) {
      std::string a = chrome ? slurp(o1 + "/" + rank + ".json") : slurp(o1);
      std::string b = chrome ? slurp(o2 + "/" + rank + ".json") : slurp(o2);
      CHECK(a.size() > 1000);
      CHECK(replace_all(replace_all(b, merged, "X"), "from_merged", "from_dir") == replace_all(a, dir.path, "X"));
    }
  }
  std::string d1, d2;
  REQUIRE(report::dashboard_json(dir.path, &d1, &err));
  REQUIRE(report::dashboard_json(merged, &d2, &err));
  CHECK(replace_all(d2, merged, "X") ==
        replace_all(replace_all(d1, dir.path, "X"), "\"realtime+nccl\"", "\"merged file: realtime+nccl\""));
}

TEST_CASE("job file: a damaged index is a clear error, a member that is not there too") {
  TempDir dir, out;
  std::string merged = out.path + "/job.cutrace";
  merge_two(dir, merged);
  std::string err;
  TraceReader r;
  CHECK_FALSE(r.open(merged + "/nope.cutrace", &err));
  CHECK(err == merged + "/nope.cutrace: no member nope.cutrace in the merged job file " + merged);
  CHECK_FALSE(r.open(merged, &err));
  CHECK(err.find("a merged job file") != std::string::npos);
  {
    std::fstream f(merged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  job::Index idx;
  CHECK_FALSE(job::read_index(merged, &idx, &err));
  CHECK(err == merged + ": merged job file: index checksum mismatch");
  CHECK_FALSE(r.open(merged + "/node-a.rank0.pid100.cutrace", &err));
  CHECK(err == merged + ": merged job file: index checksum mismatch");
}
