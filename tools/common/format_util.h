// Shared output helpers for the cutrace tools: human units and aligned text tables.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

// libfmt-dev ships no static library and the CLI links no -lfmt: use it header-only.
#ifndef FMT_HEADER_ONLY
#define FMT_HEADER_ONLY
#endif
#include <fmt/format.h>

namespace cutrace::tools {

std::string human_ns(int64_t ns);                             // "950 ns", "12.3 us", "4.56 ms", "7.89 s"
std::string human_bytes(uint64_t bytes);                      // "512 B", "1.50 KiB", "3.20 MiB", "1.10 GiB"
std::string human_rate(uint64_t bytes, int64_t ns);           // "12.3 GB/s" (decimal); "-" without time
std::string human_count(uint64_t n);                          // "1,234,567"
std::string percent(double part, double whole);               // "12.3%"; "-" when whole is 0
std::string ellipsize(std::string_view s, size_t max_chars);  // keeps head and tail
std::string quote(std::string_view s);                        // "text" with control characters escaped
// s with control characters (C0, DEL, C1) and bytes that are not UTF-8 escaped (\x1b, \u009b):
// every name from a trace or a directory goes through it before it reaches a terminal.
std::string printable(std::string_view s);
std::string bar(uint64_t n, uint64_t max, size_t width);  // "#" x round(width * n / max), >= 1 if n
std::string fraction(double f);                           // 0.123 -> "12.3%"
// "120ms", "5s", "2.5s", "40us", "300ns", "1m"; a plain integer is ns. False if malformed.
bool parse_duration(std::string_view text, int64_t* ns);

enum class Align { Left, Right };

// Columns sized to their widest cell; printed with a header and a rule.
class Table {
 public:
  struct Column {
    std::string title;
    Align align;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  void print(std::FILE* out, int indent = 2) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace cutrace::tools
