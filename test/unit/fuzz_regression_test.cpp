// One test per bug a fuzzer found (docs/RELIABILITY.md, "Fuzzing"), each reading the input it
// found (test/fuzz/corpus/regress-*, block checksums resealed by test/fuzz/tools/reseal.cpp so
// that it reads in a normal build). In `make sanitize` (UBSan, no recovery) they fail on the old
// code; `make fuzz` replays the same inputs under libFuzzer's 2 GB RSS limit.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <doctest/doctest.h>
#include <CLI/CLI.hpp>

#include "test/unit/cli_quietly.h"
#include "test/unit/temp_dir.h"
#include "tools/analysis/summary_model.h"
#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"
#include "tools/export/exports.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace {

const std::string kRegress =
    (std::filesystem::path(__FILE__).parent_path().parent_path() / "fuzz" / "corpus").string() + "/regress-";

// Runs `cutrace dump FILE` in-process with stdout sent to /dev/null; returns the exit status.
int dump_quietly(const std::string& path) {
  CLI::App app{"cutrace", "cutrace"};
  add_dump_command(app);
  return run_quietly(app, {"dump", path});
}

}  // namespace

TEST_CASE("regression: dump of a record whose times are far apart does not overflow (fuzz_reader)") {
  // cpu_end - cpu_begin of a damaged record can overflow int64 (UBSan: signed integer overflow in
  // cmd_dump.cpp cpu_dur): durations are computed modulo 2^64.
  std::string path = kRegress + "dump-signed-overflow-in-durations";
  REQUIRE(std::filesystem::exists(path));
  CHECK(dump_quietly(path) == 0);
}

TEST_CASE("regression: a kernel with a huge name string id does not size a table by it (fuzz_summary)") {
  // The summary kept one slot per name string id in a vector indexed by the id: a damaged id
  // near 2^31 asked for an 8 GB table (libFuzzer: out-of-memory, malloc(8151644388)).
  std::string path = kRegress + "summary-huge-kernel-name-id";
  cutrace::TraceReader r;
  std::string err;
  REQUIRE(r.open(path, &err));
  uint32_t big = 0;
  r.read([&](const cutrace::Record& rec) {
    if (rec.type() == cutrace::trace::RecType::Kernel) {
      uint32_t id = rec.as<cutrace::trace::KernelRec>().name_id;
      if (id > big) big = id;
    }
  });
  CHECK(big >= (1u << 30));  // the input still holds the id that did it
  cutrace::SummaryModel m;
  CHECK(m.add(r));
  size_t kernels = 0;
  for (const auto& k : m.kernels()) kernels += k.time.count;
  CHECK(kernels > 0);
}

TEST_CASE("regression: kernel and call times at the ends of int64 do not overflow the summary sums (fuzz_summary)") {
  // Sums and differences of times read from a damaged file can overflow int64 (UBSan: signed
  // integer overflow in summary_model.h): they saturate. The fuzzer's input is not in the corpus:
  // this trace has the same kind of values.
  std::string bytes;
  cutrace::TraceWriter w;
  REQUIRE(w.open_memory(&bytes));
  w.api_name(1, "cuLaunchKernel");
  const int64_t ends[][4] = {{INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX},  // cpu, gpu spans
                             {-5949246708859090339, 5949246708859090339, 1, INT64_MAX},
                             {0, INT64_MAX, INT64_MAX - 1, INT64_MAX},
                             {0, INT64_MAX, 1, INT64_MAX}};
  for (const auto& e : ends) {
    cutrace::trace::KernelRec k{};
    k.op.cpu_begin = e[0], k.op.cpu_end = e[1], k.op.gpu_start = e[2], k.op.gpu_end = e[3];
    k.op.api = 1;
    k.name_id = w.intern("k_extreme");
    w.add(k, cutrace::trace::RecType::Kernel);
  }
  REQUIRE(w.close(0, 0));
  cutrace::TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(bytes, "extreme", &err));
  cutrace::SummaryModel m;
  CHECK(m.add(r));
  std::vector<cutrace::KernelStat> ks = m.kernels();
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].time.count == 4);
  CHECK(ks[0].time.gpu.sum == INT64_MAX);  // saturated, not wrapped to a negative total
  CHECK(m.to_json().is_object());
}

TEST_CASE("regression: a damaged clock sync does not overflow the exporters' time shift (fuzz_export_chrome)") {
  // realtime - monotonic of a damaged ClockSync record, and then time + offset in the exporters,
  // can overflow int64 (UBSan: signed integer overflow in export_chrome.cpp rel()): both wrap.
  std::string path = kRegress + "export-clock-offset-overflow";
  REQUIRE(std::filesystem::exists(path));
  std::vector<std::string> in{path};
  cutrace::Alignment a = cutrace::align_traces(in);
  cutrace_test::TempDir dir("cutrace_regress");
  std::string err;
  CHECK(cutrace::export_chrome(in, a, dir.path + "/chrome", &err));
  CHECK(cutrace::export_perfetto(in, a, dir.path + "/out.pftrace", &err));
}
