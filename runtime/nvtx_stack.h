// NVTX push/pop nesting of one thread, per domain (NVTX scopes push/pop stacks to the domain), any
// depth. For each open level it keeps whether that push was recorded: exactly those pops are
// recorded, so a dropped push's pop cannot close the enclosing range. Owner thread only; memory is
// taken only when the thread first uses a fifth domain or first nests a domain 64 levels deeper.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace cutrace {

struct NvtxLevels {
  const void* domain = nullptr;  // the domain handle (nullptr: the default domain)
  int depth = 0;                 // open pushes
  uint64_t bits = 0;             // bit d: the push at level d (< 64) was recorded
  uint64_t* more = nullptr;      // levels 64..: word w holds levels 64 (w + 1) ..
  uint32_t more_words = 0;

  // Records whether the push at level `d` was recorded; false when the memory for it is not
  // available (the push then counts as not recorded).
  bool set(int d, bool recorded) {
    if (d < 64) {
      bits = recorded ? bits | (1ull << d) : bits & ~(1ull << d);
      return true;
    }
    uint32_t w = uint32_t(d / 64 - 1);
    if (w >= more_words) {
      if (!recorded) return true;  // unset levels read as not recorded
      uint32_t n = more_words ? more_words * 2 : 4;
      while (n <= w) n *= 2;
      auto* p = static_cast<uint64_t*>(std::realloc(more, n * sizeof(uint64_t)));
      if (!p) return false;
      std::memset(p + more_words, 0, (n - more_words) * sizeof(uint64_t));
      more = p, more_words = n;
    }
    more[w] = recorded ? more[w] | (1ull << (d % 64)) : more[w] & ~(1ull << (d % 64));
    return true;
  }
  bool recorded(int d) const {
    if (d < 64) return bits >> d & 1;
    uint32_t w = uint32_t(d / 64 - 1);
    return w < more_words && (more[w] >> (d % 64) & 1);
  }
};

class NvtxStacks {
 public:
  NvtxStacks() = default;
  NvtxStacks(const NvtxStacks&) = delete;
  NvtxStacks& operator=(const NvtxStacks&) = delete;
  ~NvtxStacks() {
    for (uint32_t i = 0; i < used_; ++i) std::free(at(i)->more);
    std::free(extra_);
  }
  // The levels of `domain`; nullptr when a new domain cannot be added (out of memory). The first
  // domain the thread used (mostly the default one) is found with one comparison.
  NvtxLevels* find(const void* domain) {
    if (__builtin_expect(used_ != 0 && inline_[0].domain == domain, 1)) return &inline_[0];
    return find_other(domain);
  }

 private:
  NvtxLevels* find_other(const void* domain) {
    for (uint32_t i = 1; i < used_; ++i)
      if (at(i)->domain == domain) return at(i);
    if (used_ >= kInline) {
      uint32_t i = used_ - kInline;
      if (i >= extra_cap_) {
        uint32_t n = extra_cap_ ? extra_cap_ * 2 : 8;
        auto* p = static_cast<NvtxLevels*>(std::realloc(static_cast<void*>(extra_), n * sizeof(NvtxLevels)));
        if (!p) return nullptr;
        extra_ = p, extra_cap_ = n;
      }
      new (&extra_[i]) NvtxLevels();
    }
    NvtxLevels* l = at(used_++);
    l->domain = domain;
    return l;
  }
  static constexpr uint32_t kInline = 4;
  NvtxLevels* at(uint32_t i) { return i < kInline ? &inline_[i] : &extra_[i - kInline]; }
  NvtxLevels inline_[kInline];
  NvtxLevels* extra_ = nullptr;
  uint32_t used_ = 0, extra_cap_ = 0;
};

}  // namespace cutrace
