// libFuzzer target: `cutrace export --format sqlite` on arbitrary bytes (clock alignment included,
// as `cutrace merge` does it). The output is removed after each input.
#include <unistd.h>

#include <cstdint>

#include "test/fuzz/fuzz_cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in = cutrace_fuzz::write_input(data, size);
  std::string out = cutrace_fuzz::scratch_dir() + "/out.sqlite";
  cutrace_fuzz::run_cli({"export", in, "--format", "sqlite", "-o", out, "-q"});
  ::unlink(out.c_str());
  return 0;
}
