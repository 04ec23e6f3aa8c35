#include "tools/common/format_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace cutrace::tools {
namespace {

// Three significant digits: "1.23", "12.3", "123".
std::string three_digits(double v) {
  double a = std::fabs(v);
  if (a < 9.995) return ::fmt::format("{:.2f}", v);
  if (a < 99.95) return ::fmt::format("{:.1f}", v);
  return ::fmt::format("{:.0f}", v);
}

// Display width: UTF-8 continuation bytes take no column.
size_t width(std::string_view s) {
  return size_t(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

std::string human_ns(int64_t ns) {
  double a = std::fabs(double(ns));
  if (a < 1e3) return ::fmt::format("{} ns", ns);
  if (a < 999.5e3) return three_digits(ns / 1e3) + " us";
  if (a < 999.5e6) return three_digits(ns / 1e6) + " ms";
  return three_digits(ns / 1e9) + " s";
}

bool parse_duration(std::string_view text, int64_t* ns) {
  static const std::pair<const char*, double> units[] = {{"ns", 1},  {"us", 1e3}, {"ms", 1e6},
                                                         {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
  size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
                               (end == 0 && (text[end] == '-' || text[end] == '+'))))
    ++end;
  std::string number(text.substr(0, end));
  std::string_view unit = text.substr(end);
  if (number.empty() || number == "-" || number == "+" || std::count(number.begin(), number.end(), '.') > 1)
    return false;
  double scale = 0;
  if (unit.empty()) {
    if (number.find('.') != std::string::npos) return false;  // ns are whole
    scale = 1;
  }
  for (const auto& [name, f] : units)
    if (unit == name) scale = f;
  if (scale == 0) return false;
  double v = std::strtod(number.c_str(), nullptr) * scale;
  if (!(v > -9.2e18 && v < 9.2e18)) return false;
  *ns = unit.empty() ? std::strtoll(number.c_str(), nullptr, 10) : int64_t(std::llround(v));
  return true;
}

std::string human_bytes(uint64_t bytes) {
  if (bytes < 1024) return ::fmt::format("{} B", bytes);
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = double(bytes) / 1024;
  int u = 0;
  while (v >= 1023.5 && u < 4) {
    v /= 1024;
    ++u;
  }
  return three_digits(v) + " " + units[u];
}

std::string human_rate(uint64_t bytes, int64_t ns) {
  if (ns <= 0) return "-";
  double gbps = double(bytes) / double(ns);  // bytes per ns == GB/s
  if (gbps >= 1) return three_digits(gbps) + " GB/s";
  return three_digits(gbps * 1e3) + " MB/s";
}

std::string human_count(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string percent(double part, double whole) {
  if (whole <= 0) return "-";
  return ::fmt::format("{:.1f}%", 100.0 * part / whole);
}

std::string bar(uint64_t n, uint64_t max, size_t width) {
  if (n == 0 || max == 0) return "";
  size_t k = size_t(std::llround(double(width) * double(n) / double(max)));
  return std::string(std::max<size_t>(k, 1), '#');
}

std::string fraction(double f) { return ::fmt::format("{:.1f}%", 100.0 * f); }

std::string ellipsize(std::string_view s, size_t max_chars) {
  if (s.size() <= max_chars || max_chars < 8) return std::string(s);
  size_t head = (max_chars - 3) * 2 / 3;
  size_t tail = max_chars - 3 - head;
  return std::string(s.substr(0, head)) + "..." + std::string(s.substr(s.size() - tail));
}

namespace {

// Length of the valid UTF-8 sequence at s[i] (2-4 bytes: no overlong form, no surrogate, at
// most U+10FFFF), or 0.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t* cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  uint32_t v = c & (0x3F >> (n - 1));
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    v = v << 6 | (b(i + k) & 0x3F);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

// Appends s with every C0 and C1 control character, DEL and byte that is not UTF-8 as \xNN (C1 as
// \u00NN); `also` lists further ASCII characters to precede with a backslash.
void append_escaped(std::string& out, std::string_view s, std::string_view also) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F) out += ::fmt::format("\\x{:02x}", c);
      else if (also.find(char(c)) != std::string_view::npos) out += '\\', out += char(c);
      else out += char(c);
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t n = utf8_sequence(s, i, &cp);
    if (n == 0) {
      out += ::fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      if (cp <= 0x9F) out += ::fmt::format("\\u{:04x}", cp);
      else out.append(s.data() + i, n);
      i += n;
    }
  }
}

}  // namespace

std::string quote(std::string_view s) {
  std::string out = "\"";
  append_escaped(out, s, "\"\\");
  return out + "\"";
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_escaped(out, s, {});
  return out;
}

void Table::print(std::FILE* out, int indent) const {
  // Cells may hold names from a trace: control characters must not reach the terminal.
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : rows_) {
    rows.emplace_back();
    for (const std::string& cell : r) rows.back().push_back(printable(cell));
  }
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) widths[c] = width(columns_[c].title);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], width(r[c]));
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s(size_t(indent), ' ');
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      std::string pad(widths[c] - width(cell), ' ');
      bool last = c + 1 == columns_.size();
      if (columns_[c].align == Align::Right) s += pad + cell;
      else s += last ? cell : cell + pad;
      if (!last) s += "  ";
    }
    s.erase(s.find_last_not_of(' ') + 1);
    std::fprintf(out, "%s\n", s.c_str());
  };
  std::vector<std::string> titles, rules;
  for (size_t c = 0; c < columns_.size(); ++c) {
    titles.push_back(columns_[c].title);
    rules.push_back(std::string(widths[c], '-'));
  }
  line(titles);
  line(rules);
  for (const auto& r : rows) line(r);
}

}  // namespace cutrace::tools
