#include "runtime/record_buffer.h"
#include <sys/mman.h>

namespace cutrace {

namespace {
// Free chunks kept resident for the next burst (4 MiB); the pages of any beyond go back.
constexpr uint32_t kWarmChunks = 64;
// Resident free chunks the collector keeps ready ahead of the threads (512 KiB).
constexpr uint32_t kPrefaultChunks = 8;
}  // namespace

ChunkPool& chunk_pool() {
  static ChunkPool* pool = new ChunkPool();  // never freed: threads may record during exit
  return *pool;
}

bool ChunkPool::init(size_t bytes) {
  uint32_t n = uint32_t(bytes / kChunkBytes);
  if (n < 2) n = 2;
  size_t size = size_t(n) * kChunkBytes;
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  void* links = mmap(nullptr, sizeof(std::atomic<uint32_t>) * n, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (links == MAP_FAILED) {
    munmap(p, size);
    return false;
  }
  links_ = static_cast<std::atomic<uint32_t>*>(links);  // zero pages: every link 0
  count_ = n;
  base_ = static_cast<uint8_t*>(p);
  return true;
}

Chunk* ChunkPool::pop(std::atomic<uint64_t>& head) {
  uint64_t h = head.load(std::memory_order_acquire);
  while (uint32_t(h) != 0) {
    uint32_t idx = uint32_t(h) - 1;
    uint64_t nh = (((h >> 32) + 1) << 32) | links_[idx].load(std::memory_order_relaxed);
    if (head.compare_exchange_weak(h, nh, std::memory_order_acquire, std::memory_order_acquire)) return at(idx);
  }
  return nullptr;
}

void ChunkPool::push(std::atomic<uint64_t>& head, Chunk* c) {
  uint32_t idx = index_of(c);
  uint64_t h = head.load(std::memory_order_relaxed);
  uint64_t nh;
  do {
    links_[idx].store(uint32_t(h), std::memory_order_relaxed);
    nh = (((h >> 32) + 1) << 32) | (idx + 1);
  } while (!head.compare_exchange_weak(h, nh, std::memory_order_release, std::memory_order_relaxed));
}

Chunk* ChunkPool::fresh() {
  if (bump_.load(std::memory_order_relaxed) >= count_) return nullptr;
  uint32_t i = bump_.fetch_add(1, std::memory_order_relaxed);
  return i < count_ ? at(i) : nullptr;
}

Chunk* ChunkPool::take() {
  if (!base_) return nullptr;
  Chunk* c = pop(warm_);
  if (c) warm_count_.fetch_sub(1, std::memory_order_relaxed);
  else if (!(c = pop(cold_)) && !(c = fresh())) return nullptr;
  uint32_t used = in_use_.fetch_add(1, std::memory_order_relaxed) + 1;
  uint32_t peak = peak_.load(std::memory_order_relaxed);
  while (used > peak && !peak_.compare_exchange_weak(peak, used, std::memory_order_relaxed)) {}
  return c;
}

void ChunkPool::give(Chunk* c) {
  in_use_.fetch_sub(1, std::memory_order_relaxed);
  if (warm_count_.load(std::memory_order_relaxed) >= kWarmChunks) {
    madvise(c, kChunkBytes, MADV_DONTNEED);  // zero-filled on next use: header reset too
    push(cold_, c);
    return;
  }
  c->committed.store(0, std::memory_order_relaxed);
  c->next.store(0, std::memory_order_relaxed);
  warm_count_.fetch_add(1, std::memory_order_relaxed);
  push(warm_, c);
}

void ChunkPool::prefault() {
  while (base_ && warm_count_.load(std::memory_order_relaxed) < kPrefaultChunks) {
    Chunk* c = pop(cold_);
    if (!c && !(c = fresh())) return;
    for (uint32_t off = 0; off < kChunkBytes; off += 4096) reinterpret_cast<volatile uint8_t*>(c)[off] = 0;
    c->committed.store(0, std::memory_order_relaxed);
    c->next.store(0, std::memory_order_relaxed);
    warm_count_.fetch_add(1, std::memory_order_relaxed);
    push(warm_, c);
  }
}

void ChunkPool::abandon() {
  base_ = nullptr;
  links_ = nullptr;
  count_ = 0;
  bump_.store(0, std::memory_order_relaxed);
  warm_.store(0, std::memory_order_relaxed);
  cold_.store(0, std::memory_order_relaxed);
  warm_count_.store(0, std::memory_order_relaxed);
  in_use_.store(0, std::memory_order_relaxed);
  peak_.store(0, std::memory_order_relaxed);
}

}  // namespace cutrace
