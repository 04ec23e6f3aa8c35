// Bugs fuzz_summary found in `cutrace summary` (docs/RELIABILITY.md, "Fuzzing"), each test
// reading the input it found (test/fuzz/corpus/regress-summary-*, checksums resealed).
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <CLI/CLI.hpp>

#include "test/unit/cli_quietly.h"
#include "tools/cmd/commands.h"

namespace {

const std::string kSummaryRegress =
    (std::filesystem::path(__FILE__).parent_path().parent_path() / "fuzz" / "corpus").string() + "/regress-summary-";

// `cutrace summary [--json] FILE` in-process, stdout to /dev/null; returns the exit status.
int summary_quietly(const std::string& path, bool json) {
  CLI::App app{"cutrace", "cutrace"};
  add_summary_command(app);
  std::vector<std::string> args{"summary", path};
  if (json) args.push_back("--json");
  return run_quietly(app, args);
}

}  // namespace

TEST_CASE("regression: summary --json of names that are not UTF-8 does not terminate (fuzz_summary)") {
  // nlohmann::json::dump threw type_error 316 (invalid UTF-8) out of main: std::terminate.
  std::string path = kSummaryRegress + "json-invalid-utf8";
  REQUIRE(std::filesystem::exists(path));
  CHECK(summary_quietly(path, true) == 0);
  CHECK(summary_quietly(path, false) == 0);
}

TEST_CASE("regression: summary totals of damaged times saturate instead of overflowing (fuzz_summary)") {
  // Copy time totals summed int64 GPU times of a damaged file: signed integer overflow (UBSan)
  // in the memory table of the text summary and in the JSON memory total.
  std::string path = kSummaryRegress + "int64-sum-overflow";
  REQUIRE(std::filesystem::exists(path));
  CHECK(summary_quietly(path, false) == 0);
  CHECK(summary_quietly(path, true) == 0);
}
