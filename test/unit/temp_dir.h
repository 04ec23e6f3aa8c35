// A fresh directory under /tmp for one test (/tmp/<prefix>.XXXXXX), removed with everything in
// it when the test's scope ends, also when a REQUIRE fails.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

namespace cutrace_test {

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix = "cutrace_test") {
    std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace cutrace_test
