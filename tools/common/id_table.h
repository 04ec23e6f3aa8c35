// A table indexed by an id taken from a trace (stream, string, device ...). Writers number ids
// from 1 up, so ids below kDense live in a vector; a larger one (a damaged or hostile file) goes
// to a hash map, so that no id sizes an allocation. References stay valid until the next insert
// of a new dense id.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace cutrace {

template <class T, uint32_t kDense = (1u << 16)>
class IdTable {
 public:
  explicit IdTable(T init = T()) : init_(init) {}
  [[gnu::always_inline]] T& operator[](uint32_t id) {
    if (id < dense_.size()) return dense_[id];
    return grow(id);
  }
  void clear() {
    dense_.clear();
    far_.clear();
  }

 private:
  T& grow(uint32_t id) {
    if (id < kDense) {
      dense_.resize(size_t(id) + 1, init_);
      return dense_[id];
    }
    return far_.try_emplace(id, init_).first->second;
  }
  T init_;
  std::vector<T> dense_;
  std::unordered_map<uint32_t, T> far_;
};

}  // namespace cutrace
