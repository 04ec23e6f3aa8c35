// Reader throughput on a synthetic trace: writes N records (default 10M) of a training-like mix
// (60% kernels, 20% API calls, 10% memcpy, 5% syncs, 5% allocations; about 90 bytes a record)
// with TraceWriter, then streams the file once through TraceReader on one core and prints
// records/s. The page cache is warm (the file was just written), so this measures decoding.
//
// Build and run from the repo root:
//   make build/lib/libcutrace_format.a
//   g++ -O2 -std=c++17 -I. bench/reader_speed.cpp build/lib/libcutrace_format.a \
//       /usr/lib/x86_64-linux-gnu/liblz4.a -o /tmp/reader_speed
//   /tmp/reader_speed [/tmp/reader_speed.cutrace] [records]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

void fill_op(trace::OpCommon& op, uint64_t i, int64_t& now, std::mt19937& rng) {
  now += 500 + rng() % 3000;
  op.corr = i;
  op.cpu_begin = now;
  op.cpu_end = now + 2000 + rng() % 4000;
  op.gpu_start = now + 10000 + rng() % 50000;
  op.gpu_end = op.gpu_start + 1000 + rng() % 200000;
  op.tid = 4242 + rng() % 4;
  op.stream = 1 + rng() % 4;
  op.api = 1 + rng() % 8;
}

bool write_trace(const std::string& path, uint64_t n) {
  unlink(path.c_str());
  TraceWriter w;
  std::string err;
  if (!w.open(path, &err)) {
    fprintf(stderr, "%s\n", err.c_str());
    return false;
  }
  w.meta("pid", "1");
  uint32_t names[200];
  for (int k = 0; k < 200; ++k) names[k] = w.intern("void kernel_" + std::to_string(k) + "<float>");
  std::mt19937 rng(1);
  int64_t now = 1000000000;
  for (uint64_t i = 0; i < n; ++i) {
    unsigned pick = rng() % 100;
    if (pick < 60) {
      trace::KernelRec k{};
      fill_op(k.op, i, now, rng);
      k.name_id = names[rng() % 200];
      k.grid[0] = 1 + rng() % 1024;
      k.grid[1] = k.grid[2] = 1;
      k.block[0] = 256;
      k.block[1] = k.block[2] = 1;
      k.regs = 32;
      w.add(k, trace::RecType::Kernel);
    } else if (pick < 80) {
      trace::ApiRec a{};
      now += 300 + rng() % 1000;
      a.cpu_begin = now;
      a.cpu_end = now + 400 + rng() % 800;
      a.corr = i;
      a.arg = 0x7f0000000000ull + (rng() % 64) * 16;
      a.tid = 4242;
      a.api = 20 + rng() % 5;
      w.add(a, trace::RecType::Api);
    } else if (pick < 90) {
      trace::MemcpyRec m{};
      fill_op(m.op, i, now, rng);
      m.bytes = (1 + rng() % 4096) * 4096;
      m.copy_kind = uint8_t(1 + rng() % 3);
      w.add(m, trace::RecType::Memcpy);
    } else if (pick < 95) {
      trace::SyncRec s{};
      now += 1000 + rng() % 100000;
      s.cpu_begin = now;
      s.cpu_end = now + rng() % 1000000;
      s.kind = uint8_t(1 + rng() % 3);
      s.corr = i;
      w.add(s, trace::RecType::Sync);
    } else {
      trace::MemoryRec m{};
      now += 1000;
      m.cpu_begin = now;
      m.cpu_end = now + 5000;
      m.address = 0x7f0000000000ull + (rng() % 100000) * 512;
      m.bytes = 512 * (1 + rng() % 1000);
      m.op = uint8_t(1 + rng() % 2);
      w.add(m, trace::RecType::Memory);
    }
  }
  return w.close(0, trace::kEndClean);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : "/tmp/reader_speed.cutrace";
  uint64_t n = argc > 2 ? strtoull(argv[2], nullptr, 10) : 10000000;
  if (!write_trace(path, n)) return 1;

  TraceReader r;
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  if (!r.open(path, &err)) {
    fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  uint64_t kernels = 0, bytes = 0;
  r.read([&](const Record& rec) {
    bytes += rec.size();
    if (rec.type() == trace::RecType::Kernel) kernels += rec.as<trace::KernelRec>().op.gpu_end != 0;
  });
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ReadStatus& st = r.status();
  printf("%s: %.1f MB on disk, %.1f MB raw, %lu blocks, %s\n", path.c_str(), r.file_size() / 1e6, bytes / 1e6,
         (unsigned long)st.blocks, st.complete ? "complete" : "truncated");
  printf("read %lu records (%lu kernels) in %.3f s: %.1f M records/s, %.2f GB/s raw\n", (unsigned long)st.records,
         (unsigned long)kernels, s, st.records / s / 1e6, bytes / s / 1e9);
  return 0;
}
