// Text pieces of the exporters, declared in tools/export/exports.h and tested directly: the Chrome
// export's JSON strings and numbers, and the kernel short names of the SQLite export.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "tools/export/exports.h"

namespace cutrace {

namespace chrome_text {

// Length of the valid UTF-8 sequence at p (1..4), or 0 if it is not one.
size_t utf8_len(const unsigned char* p, const unsigned char* end) {
  unsigned c = p[0];
  size_t n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (size_t(end - p) < n) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

// Appends s as a JSON string literal. Control characters, quotes and backslashes are escaped as
// JSON requires; < > & and U+2028/U+2029 too, so that the text stays inert when a viewer embeds
// the JSON in HTML or JavaScript (trace2html does); bytes that are not UTF-8 become U+FFFD.
void append_json_string(std::string& o, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  o += '"';
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char* end = p + s.size();
  const unsigned char* run = p;  // start of bytes copied verbatim
  auto flush = [&](const unsigned char* to) { o.append(reinterpret_cast<const char*>(run), size_t(to - run)); };
  while (p < end) {
    unsigned c = *p;
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&') {
      ++p;
      continue;
    }
    if (c >= 0x80) {
      size_t n = utf8_len(p, end);
      bool line_sep = n == 3 && c == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9);
      if (n && !line_sep) {
        p += n;
        continue;
      }
      flush(p);
      o += n ? (p[2] == 0xA8 ? "\\u2028" : "\\u2029") : "\\ufffd";
      p += n ? n : 1;
      run = p;
      continue;
    }
    flush(p);
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      case '\b': o += "\\b"; break;
      case '\f': o += "\\f"; break;
      default:
        o += "\\u00";
        o += hex[c >> 4];
        o += hex[c & 15];
    }
    ++p;
    run = p;
  }
  flush(p);
  o += '"';
}

void put_u64(std::string& o, uint64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  o.append(b, r.ptr);
}
void put_i64(std::string& o, int64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  o.append(b, r.ptr);
}
// ns -> microseconds with exactly 3 decimals ("12.345", "-0.001").
void put_us(std::string& o, int64_t ns) {
  uint64_t u = ns < 0 ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
  if (ns < 0) o += '-';
  put_u64(o, u / 1000);
  unsigned frac = unsigned(u % 1000);
  char d[4] = {'.', char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10)};
  o.append(d, 4);
}
// A finite double with `decimals` places; JSON has no NaN/inf, so those become 0.
void put_double(std::string& o, double v, int decimals) {
  if (!std::isfinite(v)) v = 0;
  char b[64];
  int n = std::snprintf(b, sizeof b, "%.*f", decimals, v);
  o.append(b, size_t(n > 0 ? n : 0));
}

}  // namespace chrome_text

namespace sqlite_export {

// Declared in tools/export/exports.h. The bare function name of a demangled kernel name, as nsys's shortName:
// "void at::native::vectorized_elementwise_kernel<4, F>(int, F)" -> "vectorized_elementwise_kernel".
std::string kernel_short_name(std::string_view s) {
  auto trim = [](std::string_view& v) {
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  };
  // Drops a trailing balanced group "open...close"; false if there is none.
  auto strip_group = [](std::string_view& v, char open, char close) {
    if (v.empty() || v.back() != close) return false;
    int depth = 0;
    for (size_t i = v.size(); i-- > 0;) {
      if (v[i] == close) {
        ++depth;
      } else if (v[i] == open && --depth == 0) {
        v = v.substr(0, i);
        return true;
      }
    }
    return false;
  };
  std::string_view v = s;
  trim(v);
  if (strip_group(v, '(', ')')) trim(v);     // parameters
  while (strip_group(v, '<', '>')) trim(v);  // template arguments
  // The last component: after the last "::" or space outside brackets.
  int depth = 0;
  size_t start = 0;
  for (size_t i = v.size(); i-- > 0;) {
    char c = v[i];
    if (c == ')' || c == '>' || c == '}' || c == ']') ++depth;
    else if (c == '(' || c == '<' || c == '{' || c == '[') --depth;
    else if (depth == 0 && (c == ':' || c == ' ')) {
      start = i + 1;
      break;
    }
  }
  v = v.substr(start);
  return v.empty() ? std::string(s) : std::string(v);
}

}  // namespace sqlite_export
}  // namespace cutrace
