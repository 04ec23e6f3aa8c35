// Re-writes every record of a trace into a new file as format 1.1 (unpacked, as cutrace 0.1
// wrote it) or 2.x (packed), for bench/trace_size.sh: the same records, two encodings. The
// records go into full 256 KiB blocks (the collector also flushes periodically, so a recorded
// file has smaller blocks: the rewritten 1.1 size is, if anything, a little smaller than what
// cutrace 0.1 would have written).
//   trace_rewrite IN.cutrace OUT.cutrace v1|v2
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s IN.cutrace OUT.cutrace v1|v2\n", argv[0]);
    return 2;
  }
  TraceReader r;
  std::string err;
  if (!r.open(argv[1], &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  unlink(argv[2]);
  TraceWriter w;
  if (!std::strcmp(argv[3], "v1")) w.write_v1();
  if (!w.open(argv[2], &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  trace::EndRec end{};
  bool has_end = false;
  r.read([&](const Record& rec) {
    if (rec.type() == trace::RecType::End) {
      end = rec.as<trace::EndRec>();
      has_end = true;
    } else {
      w.append(rec.data());
    }
  });
  if (has_end) w.close(end.dropped, end.flags);
  return w.failed() ? 1 : 0;
}
