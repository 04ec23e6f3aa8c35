// Rewrites the block checksums of a trace so that it reads in a normal build: a fuzz build skips
// checksums (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION), so its crashing inputs carry stale ones.
// Frames that do not decompress are left as they are.
//   g++ -std=c++17 -I. test/fuzz/tools/reseal.cpp -llz4 -o /tmp/reseal && /tmp/reseal IN OUT
#include <lz4.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "trace/format.h"

namespace trace = cutrace::trace;

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: reseal IN OUT\n"), 2;
  std::ifstream in(argv[1], std::ios::binary);
  std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  trace::FileHeader fh{};
  if (t.size() < sizeof fh) return std::fprintf(stderr, "reseal: too short\n"), 1;
  std::memcpy(&fh, t.data(), sizeof fh);
  size_t pos = fh.header_size, fixed = 0;
  std::vector<char> raw(trace::kMaxBlockRaw);
  while (pos + sizeof(trace::BlockHeader) <= t.size()) {
    trace::BlockHeader bh;
    std::memcpy(&bh, t.data() + pos, sizeof bh);
    size_t body = pos + sizeof bh;
    if (bh.magic != trace::kBlockMagic || bh.raw_size > trace::kMaxBlockRaw || bh.compressed_size > t.size() - body) {
      ++pos;  // resynchronise like the reader
      continue;
    }
    int n = LZ4_decompress_safe(t.data() + body, raw.data(), int(bh.compressed_size), int(raw.size()));
    if (n == int(bh.raw_size)) {
      bh.checksum = trace::xxh32(raw.data(), size_t(n));
      std::memcpy(&t[pos], &bh, sizeof bh);
      ++fixed;
    }
    pos = body + bh.compressed_size;
  }
  std::ofstream(argv[2], std::ios::binary) << t;
  std::printf("reseal: %zu block(s) resealed\n", fixed);
  return 0;
}
