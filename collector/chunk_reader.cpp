#include "collector/chunk_reader.h"
#include <cstring>
#include "runtime/raw_pack.h"
#include "runtime/record_buffer.h"

namespace cutrace {

namespace {
// The chunk being read: the thread's first one until reading begins (nullptr if it has none).
Chunk* reading(ThreadState* s) {
  if (!s->rd && (s->rd = s->first_chunk.load(std::memory_order_acquire))) s->rpos = 0;
  return s->rd;
}

uint64_t t0_of(const uint8_t* p) {
  uint64_t t0;
  std::memcpy(&t0, p + sizeof(PackedHead), sizeof t0);
  return t0;
}
}  // namespace

bool scan_ahead(ThreadState* s, size_t limit, uint64_t* t0) {
  const Chunk* c = reading(s);
  uint32_t pos = s->rpos;
  size_t n = 0;
  while (c) {
    const uint32_t end = c->committed.load(std::memory_order_acquire);
    while (pos < end) {
      const uint8_t* p = c->data + pos;
      pos += packed_size(p);
      if (++n == limit) {
        *t0 = t0_of(p);
        return true;
      }
    }
    const uint32_t next = c->next.load(std::memory_order_acquire);
    if (!next || pos < c->committed.load(std::memory_order_acquire)) return false;
    c = chunk_pool().at(next - 1);
    pos = 0;
  }
  return false;
}

const uint8_t* next_record(ThreadState* s, uint64_t horizon) {
  if (!reading(s)) return nullptr;
  for (;;) {
    if (s->rpos < s->rd->committed.load(std::memory_order_acquire)) {
      const uint8_t* p = s->rd->data + s->rpos;
      const uint64_t t0 = t0_of(p);
      if (int64_t(t0 - horizon) > 0 && t0 != 0) return nullptr;
      s->rpos += packed_size(p);
      return p;
    }
    const uint32_t next = s->rd->next.load(std::memory_order_acquire);
    if (!next) return nullptr;
    if (s->rpos < s->rd->committed.load(std::memory_order_acquire)) continue;  // published before the link
    Chunk* done = s->rd;
    s->rd = chunk_pool().at(next - 1);
    s->rpos = 0;
    chunk_pool().give(done);
  }
}

bool fully_read(ThreadState* s) {
  const Chunk* c = reading(s);
  return !c ||
         (c->next.load(std::memory_order_acquire) == 0 && s->rpos >= c->committed.load(std::memory_order_acquire));
}

}  // namespace cutrace
