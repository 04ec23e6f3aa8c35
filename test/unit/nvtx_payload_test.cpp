// NVTX payloads: packed with an annotation on the hot path, written as a Payload record before
// its Range or Mark, joined back by the reader, and shown the same way by every tool; names
// longer than the writer keeps, cut on a character boundary.
#include <cstring>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "runtime/raw_pack.h"
#include "tools/common/payload.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

TEST_CASE("nvtx payload: packed after a copied or a stable name, unpacked bit for bit") {
  std::vector<uint8_t> buf(kNoteFixedBytes + kMaxInlineName + kNotePayloadBytes);
  RawRecord r{};
  r.kind = RawKind::RangePush, r.flags = kRawNameSlot | kRawPayload, r.t0 = 3, r.nvtx.id = 2;
  r.nvtx.payload_type = uint8_t(trace::PayloadType::U64), r.nvtx.payload = ~0ull;
  uint32_t n = pack_note(r, "step", 4, buf.data());
  CHECK(n == kNoteFixedBytes + 4 + kNotePayloadBytes);
  RawRecord u;
  std::string name;
  unpack(buf.data(), &u, &name);
  CHECK(name == "step");
  CHECK((u.flags & kRawPayload) != 0);
  CHECK(u.nvtx.payload_type == uint8_t(trace::PayloadType::U64));
  CHECK(u.nvtx.payload == ~0ull);
  CHECK(u.nvtx.id == 2);

  static const char kStable[] = "registered";
  r = RawRecord{};
  r.kind = RawKind::Mark, r.flags = kRawPayload, r.nvtx.name = kStable;
  r.nvtx.payload_type = uint8_t(trace::PayloadType::I32), r.nvtx.payload = uint64_t(int64_t(-7));
  n = pack_note(r, nullptr, 0, buf.data());
  CHECK(n == kNoteFixedBytes + 6 + kNotePayloadBytes);
  unpack(buf.data(), &u, &name);
  CHECK(u.nvtx.name == kStable);
  CHECK(u.nvtx.payload_type == uint8_t(trace::PayloadType::I32));
  CHECK(int64_t(u.nvtx.payload) == -7);

  r.flags = 0;  // no payload: none unpacked, the record as long as before
  CHECK(pack_note(r, nullptr, 0, buf.data()) == kNoteFixedBytes + 6);
  unpack(buf.data(), &u, &name);
  CHECK(u.nvtx.payload_type == 0);
}

namespace {
trace::PayloadRec payload_of(uint16_t of, uint64_t target, int64_t ts, uint32_t tid, trace::PayloadType t,
                             uint64_t bits) {
  trace::PayloadRec p{};
  p.of = of, p.target = target, p.ts = ts, p.tid = tid, p.type = uint8_t(t), p.bits = bits;
  return p;
}
}  // namespace

TEST_CASE("nvtx payload: the reader joins a Payload record to the Range or Mark right after it only") {
  std::string file;
  TraceWriter w;
  REQUIRE(w.open_memory(&file));
  const uint16_t kRange = uint16_t(trace::RecType::Range), kMark = uint16_t(trace::RecType::Mark);
  auto range = [](uint64_t id, int64_t b, uint32_t tid) {
    trace::RangeRec g{};
    g.id = id, g.cpu_begin = b, g.cpu_end = b + 10, g.tid = tid, g.kind = uint8_t(trace::RangeKind::PushPop);
    return g;
  };
  auto mark = [](int64_t ts, uint32_t tid) {
    trace::MarkRec m{};
    m.ts = ts, m.tid = tid;
    return m;
  };
  auto p1 = payload_of(kRange, 5, 100, 1, trace::PayloadType::F64, 0x3FB999999999999Aull);  // 0.1
  auto g1 = range(5, 100, 1);
  auto p2 = payload_of(kMark, 0, 200, 1, trace::PayloadType::I64, uint64_t(int64_t(-3)));
  auto m2 = mark(200, 1);
  auto m3 = mark(300, 1);                                               // no payload
  auto p4 = payload_of(kRange, 9, 400, 1, trace::PayloadType::U32, 8);  // its range is not next
  auto m4 = mark(400, 1);
  auto g4 = range(9, 400, 1);
  auto p5 = payload_of(kMark, 0, 500, 2, trace::PayloadType::U64, 1);  // another thread's
  auto m5 = mark(500, 1);
  w.add(p1, trace::RecType::Payload), w.add(g1, trace::RecType::Range);
  w.add(p2, trace::RecType::Payload), w.add(m2, trace::RecType::Mark), w.add(m3, trace::RecType::Mark);
  w.add(p4, trace::RecType::Payload), w.add(m4, trace::RecType::Mark), w.add(g4, trace::RecType::Range);
  w.add(p5, trace::RecType::Payload), w.add(m5, trace::RecType::Mark);
  w.close(0, trace::kEndClean);

  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "p", &err));
  PayloadJoin join;
  std::vector<std::string> seen;
  r.read([&](const Record& rec) {
    join.see(rec);
    const trace::PayloadRec* p = nullptr;
    if (rec.type() == trace::RecType::Range) p = join.range(rec.as<trace::RangeRec>());
    else if (rec.type() == trace::RecType::Mark) p = join.mark(rec.as<trace::MarkRec>());
    else return;
    seen.push_back(p ? tools::payload_text(*p) : "-");
  });
  CHECK(seen == std::vector<std::string>{"f64:0.10000000000000001", "i64:-3", "-", "-", "-", "-"});
}

TEST_CASE("nvtx payload: every type written as TYPE:VALUE, JSON without NaN or infinity") {
  auto bits_f = [](float f) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return uint64_t(b);
  };
  auto bits_d = [](double d) {
    uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    return b;
  };
  using T = trace::PayloadType;
  auto text = [](T t, uint64_t bits) { return tools::payload_text(payload_of(16, 1, 0, 0, t, bits)); };
  auto json = [](T t, uint64_t bits) { return tools::payload_json(payload_of(16, 1, 0, 0, t, bits)); };
  CHECK(text(T::U64, ~0ull) == "u64:18446744073709551615");
  CHECK(text(T::I64, 1ull << 63) == "i64:-9223372036854775808");
  CHECK(text(T::F64, bits_d(0.1)) == "f64:0.10000000000000001");
  CHECK(text(T::U32, 0xFFFFFFFFu) == "u32:4294967295");
  CHECK(text(T::I32, uint64_t(int64_t(INT32_MIN))) == "i32:-2147483648");
  CHECK(text(T::F32, bits_f(3.14159274f)) == "f32:3.14159274");
  CHECK(json(T::U64, ~0ull) == "18446744073709551615");
  CHECK(json(T::F64, bits_d(-2.5)) == "-2.5");
  CHECK(json(T::F64, bits_d(1.0 / 0.0)) == "\"inf\"");
  CHECK(json(T::F32, 0x7FC00000u) == "\"nan\"");
}

TEST_CASE("strings longer than the writer keeps are cut on a UTF-8 character boundary") {
  std::string file;
  TraceWriter w;
  REQUIRE(w.open_memory(&file));
  std::string big(trace::kMaxStringBytes - 1, 'a');
  big += "\xe4\xba\x8c\xe4\xba\x8c";  // 3-byte characters across the limit
  uint32_t id = w.intern(big);
  w.close(0, trace::kEndClean);
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "s", &err));
  r.read([](const Record&) {});
  CHECK(r.str(id).size() == trace::kMaxStringBytes - 1);  // the character that did not fit is dropped whole
  CHECK(r.str(id) == big.substr(0, trace::kMaxStringBytes - 1));
}
