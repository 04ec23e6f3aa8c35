// The capture buffer's pieces on their own: records packed and unpacked field for field, the
// chunk pool handing out at most its budget, taking chunks back and growing no further, and the
// per-thread NVTX push/pop levels.
#include <doctest/doctest.h>
#include <set>
#include <string>
#include <vector>
#include "runtime/nvtx_stack.h"
#include "runtime/raw_pack.h"
#include "runtime/record_buffer.h"

using namespace cutrace;

TEST_CASE("capture buffer: a CUPTI-timed kernel launch packs into 62 bytes and unpacks to the same fields") {
  RawRecord r{};
  r.kind = RawKind::Kernel, r.sub = 2, r.api = 12, r.flags = kRawCupti | kRawPerThread;
  r.t0 = 123456789, r.t1 = r.t0 + 4321, r.result = 0, r.cupti_corr = 77;
  r.stream = reinterpret_cast<CUstream>(0x1234);
  r.kernel.func = reinterpret_cast<void*>(0xabcdef);
  r.kernel.grid[0] = 1 << 20, r.kernel.grid[1] = 7, r.kernel.grid[2] = 3;
  r.kernel.block[0] = 256, r.kernel.block[1] = 2, r.kernel.block[2] = 1, r.kernel.shmem = 49152;
  uint8_t buf[kMaxCallBytes];
  uint32_t n = pack_call(r, buf);
  CHECK(n == 62);  // 32 common, 4 CUPTI correlation, 26 launch
  CHECK(packed_size(buf) == n);
  RawRecord u;
  std::string name;
  unpack(buf, &u, &name);
  CHECK(u.kind == r.kind);
  CHECK(u.sub == r.sub);
  CHECK(u.api == r.api);
  CHECK(u.flags == r.flags);
  CHECK(u.t0 == r.t0);
  CHECK(u.t1 == r.t1);
  CHECK(u.cupti_corr == 77);
  CHECK(u.stream == r.stream);
  CHECK(u.kernel.func == r.kernel.func);
  for (int i = 0; i < 3; ++i) CHECK(u.kernel.grid[i] == r.kernel.grid[i]);
  for (int i = 0; i < 3; ++i) CHECK(u.kernel.block[i] == r.kernel.block[i]);
  CHECK(u.kernel.shmem == r.kernel.shmem);
}

TEST_CASE("capture buffer: wide dimensions, both events, a long call and an error keep every value") {
  RawRecord r{};
  r.kind = RawKind::Kernel, r.api = 3, r.flags = 0;
  r.t0 = 5, r.t1 = 5 + (uint64_t(1) << 40), r.result = 700;
  r.ev_start = reinterpret_cast<CUevent>(0x11), r.ev_end = reinterpret_cast<CUevent>(0x22);
  r.kernel.grid[0] = 1, r.kernel.grid[1] = 70000, r.kernel.grid[2] = 1;
  r.kernel.block[0] = 100000, r.kernel.block[1] = 1, r.kernel.block[2] = 1;
  uint8_t buf[kMaxCallBytes];
  uint32_t n = pack_call(r, buf);
  CHECK(n <= kMaxCallBytes);
  RawRecord u;
  std::string name;
  unpack(buf, &u, &name);
  CHECK(u.t1 == r.t1);
  CHECK(u.result == 700);
  CHECK(u.ev_start == r.ev_start);
  CHECK(u.ev_end == r.ev_end);
  CHECK(u.kernel.grid[1] == 70000);
  CHECK(u.kernel.block[0] == 100000);
  CHECK(u.flags == 0);
}

TEST_CASE("capture buffer: copies, sets and memory records round-trip") {
  RawRecord c{};
  c.kind = RawKind::Memcpy, c.t0 = 1, c.t1 = 2;
  c.copy.bytes = 1ull << 33, c.copy.src = 0x1000, c.copy.dst = 0x2000, c.copy.copy_kind = 1, c.copy.src_kind = 2,
  c.copy.dst_kind = 3;
  uint8_t buf[kMaxCallBytes];
  pack_call(c, buf);
  RawRecord u;
  std::string name;
  unpack(buf, &u, &name);
  CHECK(u.copy.bytes == c.copy.bytes);
  CHECK(u.copy.src == 0x1000);
  CHECK(u.copy.dst == 0x2000);
  CHECK(u.copy.dst_kind == 3);
  RawRecord m{};
  m.kind = RawKind::Memory, m.sub = 1, m.mem.address = 0xdead, m.mem.bytes = 4096, m.mem.mem_kind = 4;
  pack_call(m, buf);
  unpack(buf, &u, &name);
  CHECK(u.mem.address == 0xdead);
  CHECK(u.mem.bytes == 4096);
  CHECK(u.mem.mem_kind == 4);
}

TEST_CASE("capture buffer: annotation names are copied whole, or cut before a UTF-8 continuation byte") {
  RawRecord r{};
  r.kind = RawKind::RangePush, r.flags = kRawNameSlot, r.t0 = 9;
  r.nvtx.domain = reinterpret_cast<const void*>(0x42), r.nvtx.category = 3, r.nvtx.color = 0xff00ff00,
  r.nvtx.source = 1;
  std::string text = "forward/attention";
  std::vector<uint8_t> buf(kNoteFixedBytes + kMaxInlineName);
  uint32_t n = pack_note(r, text.data(), inline_name_len(text.data(), text.size()), buf.data());
  CHECK(n == kNoteFixedBytes + text.size());
  RawRecord u;
  std::string name;
  unpack(buf.data(), &u, &name);
  CHECK(name == text);
  CHECK(u.nvtx.domain == r.nvtx.domain);
  CHECK(u.nvtx.category == 3);
  CHECK(u.nvtx.color == 0xff00ff00);
  CHECK(u.t0 == 9);
  std::string longer(kMaxInlineName - 1, 'a');
  longer += "\xc3\xa9\xc3\xa9";  // two-byte characters across the limit
  uint32_t cut = inline_name_len(longer.data(), longer.size());
  CHECK(cut == kMaxInlineName - 1);
}

TEST_CASE("capture buffer: the pool hands out its budget, no more, and takes chunks back") {
  ChunkPool pool;
  REQUIRE(pool.init(8 * size_t(kChunkBytes)));
  std::set<Chunk*> taken;
  for (int i = 0; i < 8; ++i) {
    Chunk* c = pool.take();
    REQUIRE(c != nullptr);
    CHECK(c->committed.load() == 0);
    CHECK(c->next.load() == 0);
    taken.insert(c);
  }
  CHECK(taken.size() == 8);
  CHECK(pool.take() == nullptr);  // the budget is in use
  CHECK(pool.in_use() == 8);
  CHECK(pool.peak_in_use() == 8);
  Chunk* back = *taken.begin();
  back->committed.store(100);
  back->next.store(3);
  pool.give(back);
  Chunk* again = pool.take();
  CHECK(again == back);  // the same chunk, its header reset
  CHECK(again->committed.load() == 0);
  CHECK(again->next.load() == 0);
  CHECK(pool.take() == nullptr);
  for (Chunk* c : taken) pool.give(c);
  CHECK(pool.in_use() == 0);
}

TEST_CASE("capture buffer: a push keeps its level, a pop its level and domain, a category name its id") {
  std::vector<uint8_t> buf(kNoteFixedBytes + kMaxInlineName);
  RawRecord r{};
  r.kind = RawKind::RangePop, r.t0 = 5, r.nvtx.id = 250, r.nvtx.domain = reinterpret_cast<const void*>(0x77);
  r.nvtx.source = 1;
  pack_note(r, nullptr, 0, buf.data());
  RawRecord u;
  std::string name;
  unpack(buf.data(), &u, &name);
  CHECK(u.kind == RawKind::RangePop);
  CHECK(u.nvtx.id == 250);
  CHECK(u.nvtx.domain == r.nvtx.domain);
  r = RawRecord{};
  r.kind = RawKind::CategoryName, r.flags = kRawNameSlot, r.nvtx.id = 9,
  r.nvtx.domain = reinterpret_cast<const void*>(0x99);
  pack_note(r, "io", 2, buf.data());
  unpack(buf.data(), &u, &name);
  CHECK(u.kind == RawKind::CategoryName);
  CHECK(u.nvtx.id == 9);
  CHECK(u.nvtx.domain == r.nvtx.domain);
  CHECK(name == "io");
}

TEST_CASE("nvtx stacks: levels per domain, any depth, which pushes were recorded") {
  NvtxStacks st;
  int doms[6];
  // Six domains (past the inline four), each 300 deep, every third push not recorded.
  for (int level = 0; level < 300; ++level)
    for (int& d : doms) {
      NvtxLevels* l = st.find(&d);
      REQUIRE(l != nullptr);
      CHECK(l->depth == level);
      CHECK(l->set(l->depth, level % 3 != 0));
      ++l->depth;
    }
  NvtxLevels* def = st.find(nullptr);
  CHECK(def->depth == 0);  // the default domain is its own
  for (int& d : doms) {
    NvtxLevels* l = st.find(&d);
    CHECK(l->domain == &d);
    int wrong = 0;
    for (int level = 299; level >= 0; --level) wrong += l->recorded(--l->depth) != (level % 3 != 0);
    CHECK(wrong == 0);
    CHECK(l->depth == 0);
  }
  CHECK_FALSE(st.find(&doms[0])->recorded(500));  // never set: not recorded
}
