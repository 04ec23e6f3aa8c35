// libFuzzer target: `cutrace summary` (tables) and `cutrace summary --json` on arbitrary bytes.
#include <cstdint>

#include "test/fuzz/fuzz_cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in = cutrace_fuzz::write_input(data, size);
  cutrace_fuzz::run_cli({"summary", in});
  cutrace_fuzz::run_cli({"summary", "--json", in});
  return 0;
}
