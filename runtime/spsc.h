// Single-producer single-consumer ring: the producer publishes with one release store.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cutrace {

template <class T, size_t N>
class SpscRing {
  static_assert((N & (N - 1)) == 0, "power of two");

 public:
  // Producer: a slot to fill, or nullptr when full. commit() publishes it.
  T* reserve() {
    uint64_t h = head_.load(std::memory_order_relaxed);
    if (h - tail_cache_ >= N) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (h - tail_cache_ >= N) return nullptr;
    }
    return &slots_[h & (N - 1)];
  }
  void commit() { head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  bool push(const T& v) {
    T* s = reserve();
    if (!s) return false;
    *s = v;
    commit();
    return true;
  }

  // Consumer.
  const T* peek() {
    uint64_t t = tail_.load(std::memory_order_relaxed);
    if (t == head_.load(std::memory_order_acquire)) return nullptr;
    return &slots_[t & (N - 1)];
  }
  void pop() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  bool pop(T* out) {
    const T* p = peek();
    if (!p) return false;
    *out = *p;
    pop();
    return true;
  }
  size_t size() const { return size_t(head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire)); }
  static constexpr size_t capacity() { return N; }

 private:
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t tail_cache_ = 0;  // producer's last view of tail_
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) T slots_[N];
};

}  // namespace cutrace
