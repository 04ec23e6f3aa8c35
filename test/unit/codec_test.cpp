// The packed block encoding of format 2.x (trace/codec.h): every record comes back byte for
// byte, whatever its values; what cannot be packed exactly is written verbatim; damage is caught.
#include <lz4.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "trace/codec.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

std::string bytes_of(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

// Writes `recs` (whole records) through a 2.x writer and reads them back.
std::vector<std::string> round_trip(const std::vector<std::string>& recs, ReadStatus* status = nullptr) {
  std::string file;
  TraceWriter w;
  REQUIRE(w.open_memory(&file));
  for (const std::string& r : recs) w.append(r.data());
  w.close(0, trace::kEndClean);
  TraceReader rd;
  std::string err;
  REQUIRE(rd.open_memory(file, "t", &err));
  std::vector<std::string> got;
  rd.read([&](const Record& r) {
    if (r.type() != trace::RecType::End) got.push_back(bytes_of(r.data(), r.size()));
  });
  if (status) *status = rd.status();
  return got;
}

// round_trip(), then each record must come back byte for byte (the first that differs is named).
void require_exact_round_trip(const std::vector<std::string>& recs, ReadStatus* status) {
  std::vector<std::string> got = round_trip(recs, status);
  REQUIRE(got.size() == recs.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != recs[i]) FAIL("record " << i << " differs");
  }
}

template <class R>
std::string rec(R r, trace::RecType t) {
  r.h.type = uint16_t(t);
  r.h.size = sizeof r;
  return bytes_of(&r, sizeof r);
}

// Random values for every byte of a record, then the pads cleared (or not).
template <class R>
R random_rec(std::mt19937_64& rng) {
  R r;
  auto* p = reinterpret_cast<unsigned char*>(&r);
  for (size_t i = 0; i < sizeof r; ++i) p[i] = static_cast<unsigned char>(rng());
  return r;
}

}  // namespace

TEST_CASE("packed records come back byte for byte, whatever their values") {
  std::mt19937_64 rng(99);
  std::vector<std::string> recs;
  auto packable_op = [&](trace::OpCommon& op) {  // pads 0, GPU times >= 0: what the writer packs
    op.pad = 0;
    op.gpu_start &= INT64_MAX;
    op.gpu_end &= INT64_MAX;
  };
  for (int i = 0; i < 20000; ++i) {
    int64_t small = int64_t(rng() % 1000);
    switch (rng() % 6) {
      case 0: {
        auto k = random_rec<trace::KernelRec>(rng);
        packable_op(k.op);
        k.pad = 0;
        if (i % 3 == 0) k.op.gpu_start = k.op.gpu_end = 0;  // "not measured"
        if (i % 5 == 0) k.op.gpu_start = k.op.cpu_end + small;
        if (i % 7) k.op.tid = uint32_t(i % 300);            // more threads than lane slots: collisions
        if (i % 11) std::memset(k.grid, 0, sizeof k.grid);  // some configurations repeat
        recs.push_back(rec(k, trace::RecType::Kernel));
        break;
      }
      case 1: {
        auto c = random_rec<trace::MemcpyRec>(rng);
        packable_op(c.op);
        c.pad = 0;
        recs.push_back(rec(c, trace::RecType::Memcpy));
        break;
      }
      case 2: {
        auto m = random_rec<trace::MemsetRec>(rng);
        packable_op(m.op);
        std::memset(m.pad, 0, sizeof m.pad);
        recs.push_back(rec(m, trace::RecType::Memset));
        break;
      }
      case 3: {
        auto y = random_rec<trace::SyncRec>(rng);
        std::memset(y.pad, 0, sizeof y.pad);
        recs.push_back(rec(y, trace::RecType::Sync));
        break;
      }
      case 4: {
        auto m = random_rec<trace::MemoryRec>(rng);
        std::memset(m.pad, 0, sizeof m.pad);
        recs.push_back(rec(m, trace::RecType::Memory));
        break;
      }
      default: recs.push_back(rec(random_rec<trace::ApiRec>(rng), trace::RecType::Api)); break;
    }
  }
  ReadStatus s;
  require_exact_round_trip(recs, &s);
  CHECK(s.bad_blocks == 0);
  CHECK(s.unresolved_configs == 0);
  CHECK(s.columns.bytes[trace::kColVerbatim] < 20000 * 60);  // mostly packed (configs are verbatim)
  CHECK(s.columns.bytes[trace::kColGpuDuration] > 0);
}

TEST_CASE("packed values of every varint length, 1 to 10 bytes, come back exactly") {
  // Fields of 0 to 64 significant bits, so that the column values (deltas, zigzags) take every
  // varint length, and the ends of columns (where the decoder checks every byte) see them too.
  std::mt19937_64 rng(7);
  auto bits = [&]() -> uint64_t {  // a value of at most n bits, n uniform in 0..64
    unsigned n = unsigned(rng() % 65);
    return n == 0 ? 0 : rng() >> (64 - n);
  };
  std::vector<std::string> recs;
  for (int i = 0; i < 20000; ++i) {
    auto a = random_rec<trace::ApiRec>(rng);
    a.cpu_begin = int64_t(bits());
    a.cpu_end = int64_t(bits());
    a.corr = bits();
    a.arg = bits();
    a.tid = uint32_t(bits());
    a.stream = uint32_t(bits());
    a.result = int32_t(bits());
    recs.push_back(rec(a, trace::RecType::Api));
  }
  ReadStatus s;
  require_exact_round_trip(recs, &s);
  CHECK(s.bad_blocks == 0);
  CHECK(s.columns.bytes[trace::kColVerbatim] == sizeof(trace::EndRec));  // all packed but End
}

TEST_CASE("records the packing cannot reproduce are written verbatim and still come back") {
  trace::KernelRec k{};
  k.op.cpu_begin = 100;
  k.op.gpu_start = -5;  // negative GPU time: "1 + zigzag" could wrap to the 0 of "no time"
  k.op.gpu_end = INT64_MIN;
  trace::KernelRec padded{};
  padded.pad = 7;
  trace::MemsetRec set{};
  set.pad[1] = 1;
  struct {
    trace::KernelRec k;
    uint32_t extra;  // a later minor's appended field
  } longer{};
  longer.k.h.type = uint16_t(trace::RecType::Kernel);
  longer.k.h.size = sizeof longer;
  longer.extra = 0xABCD;
  std::vector<std::string> recs = {rec(k, trace::RecType::Kernel), rec(padded, trace::RecType::Kernel),
                                   rec(set, trace::RecType::Memset), bytes_of(&longer, sizeof longer)};
  CHECK(round_trip(recs) == recs);
}

TEST_CASE("kernel configurations are written once per file, not once per kernel") {
  std::string file;
  TraceWriter w;
  REQUIRE(w.open_memory(&file));
  uint32_t names[3] = {w.intern("a"), w.intern("b"), w.intern("c")};
  int64_t t = 1000000000;
  const int n = 30000;
  for (int i = 0; i < n; ++i) {
    trace::KernelRec k{};
    k.op.corr = uint64_t(i + 1);
    k.op.cpu_begin = t;
    k.op.cpu_end = t + 3000;
    k.op.gpu_start = t + 9000;
    k.op.gpu_end = t + 29000;
    k.op.tid = 4242;
    k.op.stream = 1;
    k.name_id = names[i % 3];
    k.grid[0] = 1024;
    k.block[0] = 256;
    w.add(k, trace::RecType::Kernel);
    t += 20000;
    if (i == n / 2) w.flush();
  }
  w.close(0, trace::kEndClean);
  CHECK(file.size() < size_t(n) * 2);  // a perfectly regular loop: under 2 bytes a kernel

  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "t", &err));
  int kernels = 0;
  std::string last_name;
  r.read([&](const Record& rec) {
    CHECK(rec.type() != trace::RecType::KernelConfig);  // consumed by the reader
    if (rec.type() == trace::RecType::Kernel) {
      ++kernels;
      last_name = r.str(rec.as<trace::KernelRec>().name_id);
    }
  });
  CHECK(kernels == n);
  CHECK(last_name == "c");
  CHECK(r.status().records == n + 4);  // 3 Strings, the kernels, End: no KernelConfig
}

TEST_CASE("a packed payload that does not unpack is a bad block, even with a good checksum") {
  std::string file;
  TraceWriter w;
  REQUIRE(w.open_memory(&file));
  trace::ApiRec a{};
  a.cpu_begin = 5;
  for (int i = 0; i < 100; ++i) w.add(a, trace::RecType::Api);
  w.flush();
  for (int i = 0; i < 100; ++i) w.add(a, trace::RecType::Api);
  w.close(0, trace::kEndClean);

  // Rewrite the first block: its tag column claims one Api record more than the columns hold.
  size_t off = sizeof(trace::FileHeader);
  trace::BlockHeader bh;
  std::memcpy(&bh, file.data() + off, sizeof bh);
  std::vector<char> payload(bh.raw_size);
  REQUIRE(LZ4_decompress_safe(file.data() + off + sizeof bh, payload.data(), int(bh.compressed_size),
                              int(bh.raw_size)) == int(bh.raw_size));
  std::vector<char> unpacked;
  size_t size = 0;
  codec::BlockDecoder ok;
  // decode() reads up to kDecodePadding bytes past a payload: the callers provide them.
  auto padded = [](std::vector<char> v) {
    v.resize(v.size() + codec::kDecodePadding);
    return v;
  };
  REQUIRE(ok.decode(padded(payload).data(), payload.size(), &unpacked, &size));
  CHECK(size == 100 * sizeof(trace::ApiRec));
  // Header: ncols, then the column lengths (varints); the tag column comes first after it.
  size_t at = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      uint8_t b = uint8_t(payload[at++]);
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  auto put = [](std::vector<char>& out, uint64_t v) {
    for (; v >= 0x80; v >>= 7) out.push_back(char(v | 0x80));
    out.push_back(char(v));
  };
  uint64_t ncols = varint();
  REQUIRE(ncols == trace::kColumnCount);
  std::vector<uint64_t> lens;
  for (uint64_t i = 0; i < ncols; ++i) lens.push_back(varint());
  REQUIRE(lens[trace::kColTag] == 100);
  std::vector<char> bad;
  put(bad, ncols);
  for (uint64_t i = 0; i < ncols; ++i) put(bad, lens[i] + (i == trace::kColTag));
  bad.insert(bad.end(), payload.begin() + long(at), payload.begin() + long(at) + 100);
  bad.push_back(char(trace::RecType::Api));
  bad.insert(bad.end(), payload.begin() + long(at) + 100, payload.end());
  codec::BlockDecoder dec;
  CHECK_FALSE(dec.decode(padded(bad).data(), bad.size(), &unpacked, &size));

  std::string out = file.substr(0, off);
  std::vector<char> comp(LZ4_compressBound(int(bad.size())));
  int csize = LZ4_compress_default(bad.data(), comp.data(), int(bad.size()), int(comp.size()));
  trace::BlockHeader nh = bh;
  nh.compressed_size = uint32_t(csize);
  nh.raw_size = uint32_t(bad.size());
  nh.checksum = trace::xxh32(bad.data(), bad.size());
  out += bytes_of(&nh, sizeof nh) + std::string(comp.data(), size_t(csize));
  out += file.substr(off + sizeof bh + bh.compressed_size);
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(out, "t", &err));
  int apis = 0;
  r.read([&](const Record& rec) { apis += rec.type() == trace::RecType::Api; });
  CHECK(apis == 100);  // the second block
  CHECK(r.status().bad_blocks == 1);
  CHECK(r.status().complete);
}

namespace {

// A hand-made packed payload: the header (column count, lengths), then the columns.
std::vector<char> packed_payload(const std::vector<std::string>& cols) {
  std::vector<char> out;
  auto put = [&](uint64_t v) {
    for (; v >= 0x80; v >>= 7) out.push_back(char(v | 0x80));
    out.push_back(char(v));
  };
  put(cols.size());
  for (const std::string& c : cols) put(c.size());
  for (const std::string& c : cols) out.insert(out.end(), c.begin(), c.end());
  out.resize(out.size() + codec::kDecodePadding);  // the callers' padding (codec.h)
  return out;
}

}  // namespace

// decode()'s fast path reads varints without checking each against the payload's end; when a
// block turns out bad it is decoded again with every check, so a bad block leaves the file's
// KernelConfig table as the checked decoder always did: the configs before the failing record
// are kept, those after it are not.
TEST_CASE("a bad packed block keeps exactly the kernel configurations before its failing record") {
  trace::KernelConfigRec c{};
  c.h.type = uint16_t(trace::RecType::KernelConfig);
  c.h.size = sizeof c;
  c.id = 5;
  c.name_id = 42;
  const std::string config = bytes_of(&c, sizeof c);
  // An Api record whose columns are all empty: its first varint would be read at the payload's
  // end (only the verbatim column, the last non-empty one, holds bytes).
  auto bad_block = [&](bool config_first) {
    std::vector<std::string> cols(trace::kColumnCount);
    std::string api(1, char(trace::RecType::Api));
    cols[trace::kColTag] = config_first ? std::string(1, '\0') + api : api + std::string(1, '\0');
    cols[trace::kColVerbatim] = config;
    return packed_payload(cols);
  };
  // A good block: one kernel of config 5, every field 0.
  std::vector<std::string> cols(trace::kColumnCount);
  cols[trace::kColTag] = std::string(1, char(trace::RecType::Kernel));
  for (trace::Column col :
       {trace::kColCorr, trace::kColThread, trace::kColStream, trace::kColDevice, trace::kColApi, trace::kColFlags,
        trace::kColResult, trace::kColCpuBegin, trace::kColCpuDuration, trace::kColGpuStart, trace::kColGpuDuration})
    cols[col] = std::string(1, '\0');
  cols[trace::kColConfig] = std::string(1, '\5');
  const std::vector<char> kernel_block = packed_payload(cols);
  const size_t kernel_size = kernel_block.size() - codec::kDecodePadding;

  for (bool config_first : {false, true}) {
    CAPTURE(config_first);
    codec::BlockDecoder dec;
    std::vector<char> out;
    size_t size = 0;
    std::vector<char> bad = bad_block(config_first);
    CHECK_FALSE(dec.decode(bad.data(), bad.size() - codec::kDecodePadding, &out, &size));
    REQUIRE(dec.decode(kernel_block.data(), kernel_size, &out, &size));
    REQUIRE(size == sizeof(trace::KernelRec));
    trace::KernelRec k;
    std::memcpy(&k, out.data(), sizeof k);
    CHECK(dec.unresolved() == (config_first ? 0u : 1u));
    CHECK(k.name_id == (config_first ? 42u : 0u));
  }
}
