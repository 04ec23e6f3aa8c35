// The fuzz corpus (test/fuzz/corpus/: traces of the e2e programs, damaged copies of one, and the
// inputs of every bug a fuzzer found) through the reader, the summary model and each exporter,
// in the unit test binary: so that `make test` and both `make sanitize` builds replay them too,
// not only `make fuzz` (clang). Each damaged seed is also checked for what the reader says.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test/unit/temp_dir.h"
#include "tools/analysis/align.h"
#include "tools/analysis/summary_model.h"
#include "tools/export/exports.h"
#include "trace/reader.h"

using namespace cutrace;
namespace fs = std::filesystem;

namespace {

const fs::path kCorpus = fs::path(__FILE__).parent_path().parent_path() / "fuzz" / "corpus";

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<fs::path> corpus_files() {
  std::vector<fs::path> v;
  if (fs::is_directory(kCorpus))
    for (const auto& e : fs::directory_iterator(kCorpus)) v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

struct Outcome {
  bool opened = false;
  std::string error;
  ReadStatus status;
};

Outcome read_all(const std::string& bytes) {
  Outcome o;
  TraceReader r;
  o.opened = r.open_memory(bytes, "input", &o.error);
  if (o.opened) {
    r.read([](const Record&) {});
    o.status = r.status();
  }
  return o;
}

}  // namespace

TEST_CASE("every fuzz corpus input goes through the reader, the summary and every exporter") {
  std::vector<fs::path> files = corpus_files();
  REQUIRE(files.size() >= 10);
  for (const fs::path& p : files) {
    CAPTURE(p.filename().string());
    std::string bytes = slurp(p);
    Outcome o = read_all(bytes);
    if (o.opened) {
      TraceReader r;
      std::string err;
      REQUIRE(r.open_memory(bytes, p.string(), &err));
      SummaryModel m;
      m.add(r);
      CHECK(m.to_json().is_object());
    }
    cutrace_test::TempDir d("cutrace_corpus");
    std::vector<std::string> in{p.string()};
    Alignment a = align_traces(in);
    CHECK(a.errors.size() == (o.opened ? 0u : 1u));
    std::string err;
    CHECK(export_chrome(in, a, d.path + "/chrome", &err) == o.opened);
    CHECK(export_perfetto(in, a, d.path + "/out.pftrace", &err) == o.opened);
    CHECK(export_sqlite(in, a, d.path + "/out.sqlite", &err) == o.opened);
  }
}

TEST_CASE("the damaged seeds of the fuzz corpus read as documented") {
  auto seed = [](const char* name) { return read_all(slurp(kCorpus / (std::string("seed-") + name))); };
  Outcome good = seed("copies");
  REQUIRE(good.opened);
  CHECK(good.status.complete);
  CHECK(good.status.bad_blocks == 0);

  Outcome cut = seed("cut-mid-block");
  REQUIRE(cut.opened);
  CHECK_FALSE(cut.status.complete);
  CHECK(cut.status.trailing_bytes > 0);

  Outcome flipped = seed("flipped-checksum");
  REQUIRE(flipped.opened);
  CHECK(flipped.status.bad_blocks == 1);

  Outcome garbage = seed("garbage-between-blocks");
  REQUIRE(garbage.opened);
  CHECK(garbage.status.records == good.status.records);

  Outcome future = seed("future-version");
  CHECK_FALSE(future.opened);
  CHECK(future.error.find("newer than this reader") != std::string::npos);

  CHECK(seed("empty").error == "input: empty file");
  CHECK(seed("text").error.find("not a cutrace trace") != std::string::npos);
  CHECK_FALSE(seed("cut-after-header").status.complete);
}
