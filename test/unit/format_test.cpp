// TraceWriter -> TraceReader: round trips, blocks, damaged and truncated files, clear errors.
#include <fcntl.h>
#include <lz4.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test/unit/temp_dir.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

// Fields of packed records may be misaligned: checks compare copies, never references to them.
template <class T>
T value(T v) {
  return v;
}

std::string bytes_of(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

trace::KernelRec kernel(uint64_t corr, uint32_t name_id) {
  trace::KernelRec k{};
  k.op.corr = corr;
  k.op.cpu_begin = 1000 + int64_t(corr) * 10;
  k.op.cpu_end = k.op.cpu_begin + 5;
  k.op.gpu_start = 5000 + int64_t(corr) * 10;
  k.op.gpu_end = k.op.gpu_start + 7;
  k.op.tid = 77;
  k.name_id = name_id;
  k.grid[0] = uint32_t(corr % 1000);
  return k;
}

// A trace of n kernel records (corr 0..n-1), closed cleanly.
std::string kernels_trace(uint64_t n) {
  std::string out;
  TraceWriter w;
  w.open_memory(&out);
  w.meta("pid", "42");
  uint32_t name = w.intern("kern");
  for (uint64_t i = 0; i < n; ++i) {
    trace::KernelRec k = kernel(i, name);
    w.add(k, trace::RecType::Kernel);
  }
  w.close(0, trace::kEndClean);
  return out;
}

struct BlockInfo {
  size_t offset;  // of the BlockHeader
  size_t size;    // header + compressed bytes
  trace::BlockHeader header;
  size_t records;   // in the decompressed (2.x: and unpacked) payload
  size_t kernels;   // of which Kernel records
  size_t unpacked;  // bytes of those records
};

// Walks the block frames of a well-formed file the slow, obvious way.
std::vector<BlockInfo> blocks_of(const std::string& file) {
  std::vector<BlockInfo> out;
  trace::FileHeader fh;
  std::memcpy(&fh, file.data(), sizeof fh);
  codec::BlockDecoder decoder;
  size_t off = sizeof(trace::FileHeader);
  while (off + sizeof(trace::BlockHeader) <= file.size()) {
    BlockInfo b{off, 0, {}, 0, 0, 0};
    std::memcpy(&b.header, file.data() + off, sizeof b.header);
    b.size = sizeof b.header + b.header.compressed_size;
    if (off + b.size > file.size()) break;
    std::vector<char> raw(b.header.raw_size, '\0');
    int got = LZ4_decompress_safe(file.data() + off + sizeof b.header, raw.data(), int(b.header.compressed_size),
                                  int(raw.size()));
    REQUIRE(got == int(raw.size()));
    b.unpacked = raw.size();
    if (fh.version_major >= 2) {
      std::vector<char> packed = std::move(raw);
      packed.resize(packed.size() + codec::kDecodePadding);  // decode() may read that far
      REQUIRE(decoder.decode(packed.data(), packed.size() - codec::kDecodePadding, &raw, &b.unpacked));
    }
    for (size_t p = 0; p < b.unpacked; ++b.records) {
      trace::RecHeader h;
      std::memcpy(&h, raw.data() + p, sizeof h);
      b.kernels += h.type == uint16_t(trace::RecType::Kernel);
      p += h.size;
    }
    out.push_back(b);
    off += b.size;
  }
  return out;
}

// Reads every Kernel corr of a trace held in memory.
std::vector<uint64_t> kernel_corrs(TraceReader& r) {
  std::vector<uint64_t> corrs;
  r.read([&](const Record& rec) {
    if (rec.type() == trace::RecType::Kernel) corrs.push_back(value(rec.as<trace::KernelRec>().op.corr));
  });
  return corrs;
}

bool is_prefix_sequence(const std::vector<uint64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != i) return false;
  }
  return true;
}

std::string open_error(const std::string& bytes) {
  TraceReader r;
  std::string err;
  CHECK_FALSE(r.open_memory(bytes, "t.cutrace", &err));
  return err;
}

using cutrace_test::TempDir;

}  // namespace

TEST_CASE("xxh32 matches the reference vectors") {
  CHECK(trace::xxh32("", 0) == 0x02CC5D05u);
  CHECK(trace::xxh32("a", 1) == 0x550D7456u);
  CHECK(trace::xxh32("abc", 3) == 0x32D153FFu);
  CHECK(trace::xxh32("0123456789abcdef", 16) == 0xC2C45B69u);
  const char* s = "Nobody inspects the spammish repetition";
  CHECK(trace::xxh32(s, strlen(s)) == 0xE2293B2Fu);
}

TEST_CASE("every record type survives a round trip, packed (2.x) and unpacked (1.1)") {
  bool v1 = false;
  SUBCASE("format 2.x") {}
  SUBCASE("format 1.1, as cutrace 0.1 wrote it") { v1 = true; }
  std::string file;
  TraceWriter w;
  if (v1) w.write_v1();
  REQUIRE(w.open_memory(&file));
  w.meta("pid", "4242");
  w.meta("host", "node01");
  w.api_name(7, "cuLaunchKernel");

  std::vector<std::string> written;  // exact bytes of every non-String record, in order
  auto put = [&](auto rec, trace::RecType t) {
    w.add(rec, t);
    written.push_back(bytes_of(&rec, sizeof rec));
  };
  trace::ThreadRec th{};
  th.tid = 99;
  th.name_id = w.intern("main");
  put(th, trace::RecType::Thread);
  trace::DeviceRec dev{};
  dev.device = 1;
  dev.cc_major = 9;
  dev.sm_count = 132;
  dev.name_id = w.intern("NVIDIA H200");
  dev.total_mem = 150ull << 30;
  dev.uuid[3] = 0xAB;
  dev.pci_bus = 27;
  put(dev, trace::RecType::Device);
  trace::StreamRec st{};
  st.stream = 5;
  st.device = 1;
  st.handle = 0xdeadbeef;
  put(st, trace::RecType::Stream);
  trace::ClockSyncRec cs{};
  cs.monotonic_ns = 111;
  cs.realtime_ns = 222;
  put(cs, trace::RecType::ClockSync);
  trace::KernelRec k = kernel(3, w.intern("void foo<int>(int*)"));
  k.op.api = 7;
  k.block[0] = 256;
  k.regs = 40;
  k.kind = uint8_t(trace::KernelKind::Graph);
  k.graph_id = 12;
  put(k, trace::RecType::Kernel);
  trace::MemcpyRec mc{};
  mc.op.corr = 4;
  mc.bytes = 1 << 20;
  mc.copy_kind = uint8_t(trace::CopyKind::DtoH);
  mc.dst_device = 2;
  put(mc, trace::RecType::Memcpy);
  trace::MemsetRec ms{};
  ms.bytes = 64;
  ms.value = 0xFF;
  ms.element_size = 4;
  put(ms, trace::RecType::Memset);
  trace::SyncRec sy{};
  sy.kind = uint8_t(trace::SyncKind::EventQuery);
  sy.event = 0x1234;
  sy.result = 600;
  put(sy, trace::RecType::Sync);
  trace::MemoryRec mem{};
  mem.address = 0x7f00;
  mem.bytes = 4096;
  mem.op = uint8_t(trace::MemOp::Free);
  put(mem, trace::RecType::Memory);
  trace::ApiRec api{};
  api.api = 7;
  api.arg = 0x55;
  api.result = 1;
  put(api, trace::RecType::Api);
  trace::GpuSampleRec gs{};
  gs.util = 87;
  gs.mem_total = 1ull << 40;
  put(gs, trace::RecType::GpuSample);
  trace::DroppedRec dr{};
  dr.count = 17;
  put(dr, trace::RecType::Dropped);
  trace::WindowRec wr{};
  wr.index = 2;
  wr.reason_id = w.intern("signal");
  wr.edge = uint8_t(trace::WindowEdge::Begin);
  put(wr, trace::RecType::Window);

  trace::CpuSampleRec cpu{};
  cpu.h.type = uint16_t(trace::RecType::CpuSample);
  cpu.ts = 9;
  cpu.ncores = 3;
  const uint16_t cores[3] = {100, 5000, 10000};
  w.append_var(&cpu, sizeof cpu, cores, sizeof cores);
  cpu.h.size = sizeof cpu + sizeof cores;
  written.push_back(bytes_of(&cpu, sizeof cpu) + bytes_of(cores, sizeof cores));
  REQUIRE(w.close(21, trace::kEndClean));

  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "mem.cutrace", &err));
  CHECK(r.meta("pid") == "4242");  // metadata is available right after open()
  CHECK(r.meta("host") == "node01");
  CHECK(r.meta("absent").empty());
  CHECK(value(r.devices().at(1).sm_count) == 132);
  CHECK(r.str(r.devices().at(1).name_id) == "NVIDIA H200");
  CHECK(value(r.streams().at(5).handle) == 0xdeadbeef);
  CHECK(r.str(r.threads().at(99)) == "main");
  CHECK(value(r.clock_sync().realtime_ns) == 222);
  CHECK(r.api_name(7) == "cuLaunchKernel");
  CHECK(r.api_name(8) == "(unknown api)");

  std::vector<std::string> got;
  std::string kernel_name;
  uint16_t end_type = 0;
  REQUIRE(r.read([&](const Record& rec) {
    trace::RecType t = rec.type();
    if (t == trace::RecType::Kernel) kernel_name = r.str(rec.as<trace::KernelRec>().name_id);
    if (t == trace::RecType::End) end_type = rec.type_raw();
    bool skip = t == trace::RecType::String || t == trace::RecType::Meta || t == trace::RecType::ApiName ||
                t == trace::RecType::End;
    if (!skip) got.push_back(bytes_of(rec.data(), rec.size()));
  }));
  REQUIRE(got.size() == written.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == written[i]);
  CHECK(kernel_name == "void foo<int>(int*)");
  CHECK(end_type == uint16_t(trace::RecType::End));
  const ReadStatus& s = r.status();
  CHECK(s.complete);
  CHECK(value(s.end.dropped) == 21);
  CHECK(value(s.end.flags) == trace::kEndClean);
  CHECK(value(s.end.records) == w.records() - 1);
  CHECK(s.records == w.records());
  CHECK(s.dropped == 17);
  CHECK(s.bad_blocks == 0);
  CHECK(s.bad_records == 0);
  CHECK(r.version_major() == (v1 ? 1 : trace::kVersionMajor));
}

TEST_CASE("strings are interned once, ids from 1, long ones truncated") {
  std::string file;
  TraceWriter w;
  w.open_memory(&file);
  CHECK(w.intern("a") == 1);
  CHECK(w.intern("b") == 2);
  CHECK(w.intern("a") == 1);
  std::string big(70000, 'x');
  uint32_t big_id = w.intern(big);
  CHECK(w.intern(big.substr(0, trace::kMaxStringBytes)) == big_id);
  w.close(0, trace::kEndClean);

  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "s", &err));
  int strings = 0;
  r.read([&](const Record& rec) { strings += rec.type() == trace::RecType::String; });
  CHECK(strings == 3);
  CHECK(r.str(1) == "a");
  CHECK(r.str(big_id).size() == trace::kMaxStringBytes);
  CHECK(r.str(0).empty());
  CHECK(r.str(1000) == "(unknown string)");
}

TEST_CASE("blocks split at 256 KiB and records never span blocks") {
  const uint64_t n = 10000;  // about 1 MiB of kernel records
  std::string file = kernels_trace(n);
  std::vector<BlockInfo> blocks = blocks_of(file);
  REQUIRE(blocks.size() >= 4);
  size_t records = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    CHECK(value(blocks[i].header.magic) == trace::kBlockMagic);
    CHECK(value(blocks[i].header.seq) == i);
    CHECK(blocks[i].unpacked <= trace::kBlockTargetRaw);
    CHECK(value(blocks[i].header.raw_size) < blocks[i].unpacked / 2);  // packed: kernels shrink
    if (i + 1 < blocks.size()) {
      CHECK(blocks[i].unpacked > trace::kBlockTargetRaw - sizeof(trace::KernelRec));
    }
    records += blocks[i].records;
  }
  CHECK(blocks.back().offset + blocks.back().size == file.size());

  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "k", &err));
  std::vector<uint64_t> corrs = kernel_corrs(r);
  CHECK(corrs.size() == n);
  CHECK(is_prefix_sequence(corrs));
  CHECK(r.status().records == records);
  CHECK(r.status().blocks == blocks.size());
}

TEST_CASE("a file cut mid-block reads every complete block and reports truncated") {
  std::string file = kernels_trace(10000);
  std::vector<BlockInfo> blocks = blocks_of(file);
  const BlockInfo& cut_in = blocks[2];
  file.resize(cut_in.offset + cut_in.size / 2);

  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "cut", &err));
  std::vector<uint64_t> corrs = kernel_corrs(r);
  size_t expected = blocks[0].kernels + blocks[1].kernels;
  CHECK(corrs.size() == expected);
  CHECK(is_prefix_sequence(corrs));
  const ReadStatus& s = r.status();
  CHECK_FALSE(s.complete);
  CHECK(s.blocks == 2);
  CHECK(s.bad_blocks == 0);
  CHECK(s.trailing_bytes == cut_in.size / 2);

  file.resize(cut_in.offset + 10);  // cut inside a block header
  REQUIRE(r.open_memory(file, "cut", &err));
  CHECK(kernel_corrs(r).size() == expected);
  CHECK(r.status().trailing_bytes == 10);
}

TEST_CASE("a damaged block is skipped and counted, the rest still read") {
  const std::string good = kernels_trace(10000);
  std::vector<BlockInfo> blocks = blocks_of(good);
  REQUIRE(blocks.size() >= 4);
  const size_t lost = blocks[1].kernels;
  const size_t all = 10000;

  SUBCASE("payload bytes flipped") {
    std::string file = good;
    for (size_t i = 100; i < 110; ++i) file[blocks[1].offset + sizeof(trace::BlockHeader) + i] ^= 0x5A;
    TraceReader r;
    std::string err;
    REQUIRE(r.open_memory(file, "bad", &err));
    CHECK(kernel_corrs(r).size() == all - lost);
    CHECK(r.status().bad_blocks == 1);
    CHECK(r.status().seq_gaps == 1);
    CHECK(r.status().missing_blocks == 1);
    CHECK(r.status().complete);
  }
  SUBCASE("block header destroyed") {
    std::string file = good;
    std::memset(&file[blocks[1].offset], 0xEE, sizeof(trace::BlockHeader));
    TraceReader r;
    std::string err;
    REQUIRE(r.open_memory(file, "bad", &err));
    CHECK(kernel_corrs(r).size() == all - lost);
    CHECK(r.status().bad_blocks == 1);
    CHECK(r.status().missing_blocks == 1);
    CHECK(r.status().complete);
  }
  SUBCASE("compressed size inflated past the end of the file") {
    std::string file = good;
    uint32_t huge = uint32_t(file.size());
    std::memcpy(&file[blocks[1].offset + offsetof(trace::BlockHeader, compressed_size)], &huge, 4);
    TraceReader r;
    std::string err;
    REQUIRE(r.open_memory(file, "bad", &err));
    CHECK(kernel_corrs(r).size() == all - lost);
    CHECK(r.status().bad_blocks == 1);
    CHECK(r.status().trailing_bytes == 0);
  }
}

TEST_CASE("a block copied a second time is read once; read_blocks reads only the blocks asked for") {
  const std::string good = kernels_trace(10000);
  std::vector<BlockInfo> blocks = blocks_of(good);
  REQUIRE(blocks.size() >= 4);
  const BlockInfo& b = blocks[2];
  std::string file = good.substr(0, b.offset + b.size) + good.substr(b.offset, b.size) + good.substr(b.offset + b.size);
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "dup", &err));
  std::vector<uint64_t> corrs = kernel_corrs(r);
  CHECK(corrs.size() == 10000);
  CHECK(is_prefix_sequence(corrs));
  CHECK(r.status().duplicate_blocks == 1);
  CHECK(r.status().bad_blocks == 0);
  CHECK(r.status().seq_gaps == 0);

  // The offsets read() reports, then two of them again: only their kernels, in that order.
  std::vector<uint64_t> offsets;
  r.read([&](const Record&) {
    if (offsets.empty() || offsets.back() != r.block_offset()) offsets.push_back(r.block_offset());
  });
  REQUIRE(offsets.size() == blocks.size());
  size_t n = 0;
  uint64_t first = 0;
  CHECK(r.read_blocks({offsets[3], offsets[1]}, [&](const Record& rec) {
    if (rec.type() != trace::RecType::Kernel) return;
    if (n++ == 0) first = value(rec.as<trace::KernelRec>().op.corr);
  }));
  CHECK(n == blocks[3].kernels + blocks[1].kernels);
  CHECK(first == blocks[0].kernels + blocks[1].kernels + blocks[2].kernels);  // corrs count from 0
}

TEST_CASE("random damage never crashes or hangs the reader") {
  const std::string good = kernels_trace(3000);
  std::mt19937 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    std::string file = good;
    int flips = 1 + int(rng() % 20);
    for (int i = 0; i < flips; ++i) file[rng() % file.size()] = char(rng());
    if (iter % 3 == 0) file.resize(rng() % file.size());
    TraceReader r;
    std::string err;
    if (!r.open_memory(file, "fuzz", &err)) continue;
    uint64_t n = 0;
    r.read([&](const Record& rec) { n += rec.size() >= 4; });
    CHECK(n == r.status().records);
  }
}

TEST_CASE("malformed and unknown records") {
  std::string file;
  TraceWriter w;
  w.open_memory(&file);
  trace::KernelRec short_kernel{};
  short_kernel.h.type = uint16_t(trace::RecType::Kernel);
  short_kernel.h.size = 8;  // shorter than a KernelRec: never reaches the visitor
  w.append(&short_kernel);
  struct {
    trace::RecHeader h;
    uint32_t payload[2];
  } future{{99, 12}, {1, 2}};
  w.append(&future);
  w.close(0, trace::kEndClean);

  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "odd", &err));
  std::vector<uint16_t> types;
  r.read([&](const Record& rec) { types.push_back(rec.type_raw()); });
  CHECK(types == std::vector<uint16_t>{99, uint16_t(trace::RecType::End)});
  CHECK(r.status().bad_records == 1);
  CHECK(r.status().complete);
}

TEST_CASE("the visitor can stop the stream, and reading again starts over") {
  std::string file = kernels_trace(100);
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "k", &err));
  int seen = 0;
  CHECK_FALSE(r.read([&](const Record&) { return ++seen < 5; }));
  CHECK(seen == 5);
  CHECK(kernel_corrs(r).size() == 100);
  CHECK(kernel_corrs(r).size() == 100);
  CHECK(r.metas().size() == 1);

  std::string other;
  TraceWriter w;
  w.open_memory(&other);
  w.meta("host", "x");
  w.close(0, trace::kEndClean);
  REQUIRE(r.open_memory(other, "other", &err));  // a reused reader forgets the previous file
  CHECK(r.meta("pid").empty());
  CHECK(r.meta("host") == "x");
  CHECK(r.str(3) == "(unknown string)");
}

TEST_CASE("unreadable files give clear errors") {
  std::string good = kernels_trace(1);
  CHECK(open_error("") == "t.cutrace: empty file");
  CHECK(open_error("PK\x03\x04 not a trace at all") == "t.cutrace: not a cutrace trace (bad magic)");
  CHECK(open_error("CUTR") == "t.cutrace: truncated header (4 of 16 bytes)");
  CHECK(open_error(good.substr(0, 12)) == "t.cutrace: truncated header (12 of 16 bytes)");

  std::string newer = good;
  uint16_t major = trace::kVersionMajor + 1, minor = 3;
  std::memcpy(&newer[offsetof(trace::FileHeader, version_major)], &major, 2);
  std::memcpy(&newer[offsetof(trace::FileHeader, version_minor)], &minor, 2);
  CHECK(open_error(newer) == "t.cutrace: trace format version 3.3 is newer than this reader (2.x); upgrade cutrace");

  std::string newer_minor = good;
  std::memcpy(&newer_minor[offsetof(trace::FileHeader, version_minor)], &minor, 2);
  TraceReader r;
  std::string err;
  CHECK(r.open_memory(newer_minor, "t", &err));
  CHECK(r.version_minor() == 3);

  CHECK_FALSE(r.open("/nonexistent/x.cutrace", &err));
  CHECK(err == "cannot open /nonexistent/x.cutrace: No such file or directory");
}

TEST_CASE("writer: exclusive create, files on disk, write errors") {
  TempDir tmp;
  const std::string& dir = tmp.path;
  std::string path = dir + "/h.rank0.pid1.cutrace";
  std::string err;
  {
    TraceWriter w;
    REQUIRE(w.open(path, &err));
    w.meta("pid", "1");
    CHECK(w.close(0, trace::kEndClean));
    CHECK(w.bytes_written() > sizeof(trace::FileHeader));
  }
  TraceReader r;
  REQUIRE(r.open(path, &err));
  CHECK(r.meta("pid") == "1");

  TraceWriter again;
  CHECK_FALSE(again.open(path, &err));  // never overwrites
  CHECK(err == "cannot create " + path + ": File exists");
  std::string link = dir + "/link.cutrace";
  REQUIRE(symlink("/tmp/elsewhere.cutrace", link.c_str()) == 0);
  CHECK_FALSE(again.open(link, &err));  // never follows a symlink
  CHECK(err.find("cannot create " + link) == 0);

  SUBCASE("destructor without close flushes data but writes no End record") {
    std::string p2 = dir + "/unclosed.cutrace";
    {
      TraceWriter w;
      REQUIRE(w.open(p2, &err));
      trace::KernelRec k = kernel(0, w.intern("k"));
      w.add(k, trace::RecType::Kernel);
    }
    TraceReader r2;
    REQUIRE(r2.open(p2, &err));
    CHECK(kernel_corrs(r2).size() == 1);
    CHECK_FALSE(r2.status().complete);
  }
  SUBCASE("/dev/full: the header write fails") {
    TraceWriter w;
    int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK_FALSE(w.open_fd(fd, &err));
    CHECK(err == "write failed: No space left on device");
    CHECK(w.failed());
    trace::KernelRec k = kernel(0, w.intern("k"));
    w.add(k, trace::RecType::Kernel);
    CHECK_FALSE(w.flush());
    CHECK_FALSE(w.close(0, trace::kEndClean));
    CHECK(w.records() == 3);  // String, Kernel, End: still counted
  }
  SUBCASE("a pipe whose reader went away: later blocks fail") {
    struct sigaction ign {
    }, old{};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    TraceWriter w;
    REQUIRE(w.open_fd(fds[1], &err));
    ::close(fds[0]);
    uint32_t name = w.intern("k");
    for (uint64_t i = 0; i < 5000; ++i) {
      trace::KernelRec k = kernel(i, name);
      w.add(k, trace::RecType::Kernel);
    }
    CHECK(w.failed());
    CHECK(w.error() == "write failed: Broken pipe");
    CHECK(w.records() == 5001);
    CHECK_FALSE(w.close(0, trace::kEndClean));
    sigaction(SIGPIPE, &old, nullptr);
  }
}

TEST_CASE("trace file listing is natural-ordered") {
  TempDir tmp;
  const std::string& dir = tmp.path;
  for (const char* name : {"h.rank10.pid1.cutrace", "h.rank2.pid7.cutrace", "notes.txt", "h.rank1.pid3.cutrace"}) {
    int fd = ::open((dir + "/" + name).c_str(), O_WRONLY | O_CREAT, 0644);
    REQUIRE(fd >= 0);
    ::close(fd);
  }
  mkdir((dir + "/sub.cutrace").c_str(), 0755);
  std::vector<std::string> want = {dir + "/h.rank1.pid3.cutrace", dir + "/h.rank2.pid7.cutrace",
                                   dir + "/h.rank10.pid1.cutrace"};
  CHECK(list_trace_files(dir) == want);
  CHECK(list_trace_files(dir + "/") == want);
  CHECK(list_trace_files(want[0]) == std::vector<std::string>{want[0]});
  CHECK(list_trace_files("/no/such") == std::vector<std::string>{"/no/such"});

  TraceSet set(dir);
  size_t visited = set.for_each([](TraceReader&) {});
  CHECK(visited == 0);  // the files are empty
  REQUIRE(set.errors().size() == 3);
  CHECK(set.errors()[0] == want[0] + ": empty file");
}
