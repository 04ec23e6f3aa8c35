// NVTX bursts on one thread, far faster than any collector drains them: PAIRS push/pop pairs named
// from NAMES distinct names (name_0 .. name_{NAMES-1}, in turn), then MARKS marks named mark_<i>.
// Prints "nvtx_burst: <pairs> pairs <names> names <marks> marks" (capture_checks.py counts them in
// the trace).
//   nvtx_burst [pairs=1000000] [names=1] [marks=0]
#include <nvtx3/nvToolsExt.h>
#include <string>
#include <vector>
#include "test/e2e/common.h"

int main(int argc, char** argv) {
  long pairs = argc > 1 ? atol(argv[1]) : 1000000;
  long names = argc > 2 ? atol(argv[2]) : 1;
  long marks = argc > 3 ? atol(argv[3]) : 0;
  init_primary();  // the shim records once CUDA is in use
  std::vector<std::string> text;
  for (long i = 0; i < names; ++i) text.push_back("name_" + std::to_string(i));
  for (long i = 0; i < pairs; ++i) {
    nvtxRangePushA(text[size_t(i % names)].c_str());
    nvtxRangePop();
  }
  for (long i = 0; i < marks; ++i) nvtxMarkA(("mark_" + std::to_string(i)).c_str());
  printf("nvtx_burst: %ld pairs %ld names %ld marks\n", pairs, names, marks);
  return 0;
}
