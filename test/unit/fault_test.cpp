// TraceWriter::open never writes through an existing path: a regular file, a symlink to a file
// elsewhere, a dangling symlink. The collector relies on the EEXIST to pick "<name>.1" instead
// (collector/collector.cpp start(); end to end: existing_file_is_never_overwritten in
// test/e2e/process_checks.py).
#include <errno.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "test/unit/temp_dir.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("writer: open refuses an existing file or symlink with EEXIST and leaves it untouched") {
  cutrace_test::TempDir tmp("cutrace_fault");
  const std::string existing = tmp.path + "/h.rank0.pid7.cutrace";
  const std::string target = tmp.path + "/elsewhere.txt";
  const std::string link = tmp.path + "/h.rank0.pid8.cutrace";
  const std::string dangling = tmp.path + "/h.rank0.pid9.cutrace";
  write_text(existing, "an older trace\n");
  write_text(target, "not a trace\n");
  REQUIRE(symlink(target.c_str(), link.c_str()) == 0);
  REQUIRE(symlink((tmp.path + "/missing").c_str(), dangling.c_str()) == 0);

  for (const std::string& path : {existing, link, dangling}) {
    CAPTURE(path);
    TraceWriter w;
    std::string err;
    errno = 0;
    CHECK_FALSE(w.open(path, &err));
    CHECK(errno == EEXIST);  // O_CREAT|O_EXCL: a symlink counts as existing, never followed
    CHECK(err == "cannot create " + path + ": File exists");
    w.meta("pid", "1");  // a writer that did not open writes nothing, anywhere
    w.flush();
    w.close(0, 0);
    CHECK(w.bytes_written() == 0);
  }
  CHECK(read_text(existing) == "an older trace\n");
  CHECK(read_text(target) == "not a trace\n");
  CHECK(std::filesystem::is_symlink(link));
  CHECK(std::filesystem::is_symlink(dangling));
  CHECK_FALSE(std::filesystem::exists(tmp.path + "/missing"));  // the dangling target was not created
  CHECK(std::filesystem::read_symlink(link) == target);
}
