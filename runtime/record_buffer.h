// Capture memory: one arena of fixed-size chunks, reserved (not touched) when the collector starts
// and bounded by CUTRACE_BUFFER_MB. Each thread writes its records into a chain of chunks taken
// from the pool; the collector reads the chain and gives drained chunks back. A burst grows the
// chain instead of losing records; records are dropped only when the whole budget is in use.
// Taking a chunk is lock-free and makes no system call; the collector returns the memory of
// chunks it does not expect to need (madvise) once a burst is drained.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cutrace {

inline constexpr uint32_t kChunkBytes = 64u << 10;

struct Chunk {
  std::atomic<uint32_t> committed;  // bytes of data[] published by the owner (release)
  std::atomic<uint32_t> next;       // 1 + index of the owner's next chunk; 0 while this is its newest
  uint8_t data[kChunkBytes - 8];
};
static_assert(sizeof(Chunk) == kChunkBytes);
inline constexpr uint32_t kChunkData = sizeof(Chunk::data);

class ChunkPool {
 public:
  // Reserves `bytes` of address space (at least two chunks). False if the mapping failed.
  bool init(size_t bytes);
  bool ready() const { return base_ != nullptr; }
  // Any thread: a chunk with committed == next == 0, or nullptr when every chunk is in use.
  Chunk* take();
  // Collector: a drained chunk goes back. Beyond the chunks kept warm, its pages are released.
  void give(Chunk* c);
  Chunk* at(uint32_t index) const { return reinterpret_cast<Chunk*>(base_ + size_t(index) * kChunkBytes); }
  uint32_t index_of(const Chunk* c) const {
    return uint32_t((reinterpret_cast<const uint8_t*>(c) - base_) / kChunkBytes);
  }
  size_t capacity_bytes() const { return size_t(count_) * kChunkBytes; }
  // Chunks held by threads now, and the most held at once (the burst the budget absorbed).
  uint32_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  uint32_t peak_in_use() const { return peak_.load(std::memory_order_relaxed); }
  // Collector: keeps a few free chunks with their pages already faulted in, so that a thread
  // moving to a new chunk does not take page faults in its calls.
  void prefault();
  // In a child after fork(): the parent's chunks stay mapped but unused; a new pool starts.
  void abandon();

 private:
  Chunk* pop(std::atomic<uint64_t>& head);
  void push(std::atomic<uint64_t>& head, Chunk* c);
  Chunk* fresh();  // a chunk never handed out

  uint8_t* base_ = nullptr;
  uint32_t count_ = 0;
  std::atomic<uint32_t> bump_{0};  // chunks never handed out start here
  // Free chunks on two Treiber stacks, (tag << 32) | (1 + index), 0 = empty: `warm_` with their
  // pages resident, `cold_` with their pages given back. Links are kept outside the chunks.
  std::atomic<uint64_t> warm_{0}, cold_{0};
  std::atomic<uint32_t>* links_ = nullptr;
  std::atomic<uint32_t> warm_count_{0}, in_use_{0}, peak_{0};
};

ChunkPool& chunk_pool();

}  // namespace cutrace
