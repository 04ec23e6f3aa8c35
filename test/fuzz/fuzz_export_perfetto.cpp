// libFuzzer target: `cutrace export --format perfetto` on arbitrary bytes (clock alignment included,
// as `cutrace merge` does it). The output is removed after each input.
#include <cstdint>

#include "test/fuzz/fuzz_cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cutrace_fuzz::export_once(data, size, "perfetto", "out.pftrace");
  return 0;
}
