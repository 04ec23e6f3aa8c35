// Name patterns: the one dialect of every option that selects names (`summary --step-pattern`,
// CUTRACE_CAPTURE_NVTX). A pattern is glob alternatives separated by '|': '*' any run, '?' one
// character, [abc] / [a-z] / [!a] (or [^a]) a class, '\' takes the next character literally.
// Header-only, no allocation: the shim matches NVTX names with it on the calling thread.
#pragma once
#include <string_view>

namespace cutrace::trace {

namespace name_pattern_detail {

// Whether the class starting at p[pi] == '[' matches c; *end is set past its ']'. A '[' with no
// closing ']' is a literal '['.
inline bool class_match(std::string_view p, size_t pi, char c, size_t* end) {
  size_t close = p.find(']', pi + 2);
  if (close == std::string_view::npos) {
    *end = pi + 1;
    return c == '[';
  }
  size_t q = pi + 1;
  const bool negate = p[q] == '!' || p[q] == '^';
  if (negate) ++q;
  bool in = false;
  for (; q < close; ++q) {
    if (q + 2 < close && p[q + 1] == '-') {
      in |= c >= p[q] && c <= p[q + 2];
      q += 2;
    } else {
      in |= c == p[q];
    }
  }
  *end = close + 1;
  return in != negate;
}

// One alternative against the whole text.
inline bool glob_one(std::string_view p, std::string_view t) {
  size_t pi = 0, ti = 0, star_p = std::string_view::npos, star_t = 0;
  while (ti < t.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star_p = pi++;
      star_t = ti;
      continue;
    }
    bool ok = false;
    size_t next = pi + 1;
    if (pi < p.size()) {
      if (p[pi] == '?') ok = true;
      else if (p[pi] == '[') ok = class_match(p, pi, t[ti], &next);
      else if (p[pi] == '\\' && pi + 1 < p.size()) ok = p[pi + 1] == t[ti], next = pi + 2;
      else ok = p[pi] == t[ti];
    }
    if (ok) {
      pi = next;
      ++ti;
    } else if (star_p != std::string_view::npos) {
      pi = star_p + 1;
      ti = ++star_t;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

// The end of the alternative starting at `start`: the next '|' not escaped by '\'.
inline size_t alternative_end(std::string_view p, size_t start) {
  for (size_t i = start; i < p.size(); ++i) {
    if (p[i] == '\\') ++i;
    else if (p[i] == '|') return i;
  }
  return p.size();
}

}  // namespace name_pattern_detail

inline bool name_pattern_match(std::string_view pattern, std::string_view text) {
  for (size_t start = 0;;) {
    const size_t end = name_pattern_detail::alternative_end(pattern, start);
    if (name_pattern_detail::glob_one(pattern.substr(start, end - start), text)) return true;
    if (end == pattern.size()) return false;
    start = end + 1;
  }
}

}  // namespace cutrace::trace
