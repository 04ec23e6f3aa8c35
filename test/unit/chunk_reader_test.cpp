// The collector's reading of one thread's chunk chain (collector/chunk_reader.h), fed by the
// thread's own reserve/commit: every record once and in order across chunks, the horizon that
// keeps later calls for the next round, drained chunks back in the pool, and "fully read".
#include "collector/chunk_reader.h"
#include <doctest/doctest.h>
#include <cstring>
#include <memory>
#include <string>
#include <vector>
#include "runtime/raw_pack.h"
#include "runtime/record_buffer.h"

using namespace cutrace;

namespace {
// Publishes a kernel launch whose call began at tick t0, as a wrapper does.
void publish(ThreadState& s, uint64_t t0) {
  RawRecord r{};
  r.kind = RawKind::Kernel, r.api = 1, r.t0 = t0, r.t1 = t0 + 10;
  uint8_t buf[kMaxCallBytes];
  const uint32_t n = pack_call(r, buf);
  uint8_t* p = s.reserve(n);
  REQUIRE(p != nullptr);
  std::memcpy(p, buf, n);
  s.commit(n);
}

uint32_t launch_bytes() {
  RawRecord r{};
  r.kind = RawKind::Kernel, r.api = 1, r.t0 = 1000, r.t1 = 1010;
  uint8_t buf[kMaxCallBytes];
  return pack_call(r, buf);
}

uint64_t t0_of(const uint8_t* p) {
  RawRecord r;
  std::string name;
  unpack(p, &r, &name);
  return r.t0;
}

ChunkPool& ready_pool() {
  if (!chunk_pool().ready()) REQUIRE(chunk_pool().init(64 * size_t(kChunkBytes)));
  return chunk_pool();
}
}  // namespace

TEST_CASE("chunk reader: every record of a three-chunk chain once, in order, chunks given back") {
  ChunkPool& pool = ready_pool();
  auto s = std::make_unique<ThreadState>();
  CHECK(fully_read(s.get()));  // no chunk yet: nothing published
  const uint32_t held_before = pool.in_use();
  const uint64_t per_chunk = kChunkData / launch_bytes();
  const uint64_t n = per_chunk * 2 + 100;
  for (uint64_t i = 1; i <= n; ++i) publish(*s, 1000 + i);
  CHECK(pool.in_use() == held_before + 3);
  CHECK_FALSE(fully_read(s.get()));

  uint64_t t0 = 0;
  CHECK(scan_ahead(s.get(), n, &t0));
  CHECK(t0 == 1000 + n);
  CHECK_FALSE(scan_ahead(s.get(), n + 1, &t0));
  CHECK(scan_ahead(s.get(), per_chunk + 1, &t0));  // the first record of the second chunk
  CHECK(t0 == 1000 + per_chunk + 1);

  std::vector<uint64_t> seen;
  while (const uint8_t* p = next_record(s.get(), ~uint64_t(0) >> 1)) seen.push_back(t0_of(p));
  REQUIRE(seen.size() == n);
  for (uint64_t i = 0; i < n; ++i) CHECK(seen[i] == 1001 + i);
  CHECK(pool.in_use() == held_before + 1);  // the two drained chunks are back; the current stays
  CHECK(fully_read(s.get()));

  publish(*s, 5000);  // published after everything was read: unread again
  CHECK_FALSE(fully_read(s.get()));
  const uint8_t* p = next_record(s.get(), ~uint64_t(0) >> 1);
  REQUIRE(p != nullptr);
  CHECK(t0_of(p) == 5000);
  CHECK(fully_read(s.get()));
  pool.give(s->rd);
}

TEST_CASE("chunk reader: a call that began after the horizon waits for the next round") {
  ready_pool();
  auto s = std::make_unique<ThreadState>();
  for (uint64_t t : {100, 200, 300}) publish(*s, t);
  const uint8_t* p = next_record(s.get(), 200);
  REQUIRE(p);
  CHECK(t0_of(p) == 100);
  REQUIRE((p = next_record(s.get(), 200)));
  CHECK(t0_of(p) == 200);
  CHECK(next_record(s.get(), 200) == nullptr);  // 300 is past the horizon: left in place
  CHECK_FALSE(fully_read(s.get()));
  REQUIRE((p = next_record(s.get(), 300)));
  CHECK(t0_of(p) == 300);
  CHECK(fully_read(s.get()));
  chunk_pool().give(s->rd);
}
