// Exporters behind `cutrace export --format chrome|perfetto|sqlite`. Each reads the traces with
// the reader library (streaming) and writes timestamps on the common clock of tools/analysis/align.h.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "tools/analysis/align.h"

namespace cutrace {

// Chrome trace JSON in the schema PyTorch's profiler (Kineto) writes: one file per rank, named
// <out_dir>/<trace file name>.json (or exactly `out` when there is one input and out ends in .json).
bool export_chrome(const std::vector<std::string>& files, const Alignment& a, const std::string& out, std::string* err);
// Perfetto's native protobuf trace (TracePacket stream), all ranks in one file.
bool export_perfetto(const std::vector<std::string>& files, const Alignment& a, const std::string& out,
                     std::string* err);
// SQLite database with Nsight Systems' export tables, all ranks in one file.
bool export_sqlite(const std::vector<std::string>& files, const Alignment& a, const std::string& out, std::string* err);

// The chrome export's JSON text pieces (tools/export/text.cpp), tested directly.
namespace chrome_text {
// Appends s as a JSON string literal: quotes, backslashes, control characters, < > & and
// U+2028/U+2029 escaped; bytes that are not UTF-8 become U+FFFD.
void append_json_string(std::string& o, std::string_view s);
// ns -> microseconds with exactly 3 decimals ("12.345", "-0.001").
void put_us(std::string& o, int64_t ns);
void put_u64(std::string& o, uint64_t v);
void put_i64(std::string& o, int64_t v);
// A finite double with `decimals` places; JSON has no NaN/inf, so those become 0.
void put_double(std::string& o, double v, int decimals);
}  // namespace chrome_text

namespace sqlite_export {
// The bare function name of a demangled kernel name, as nsys's shortName:
// "void at::native::vectorized_elementwise_kernel<4, F>(int, F)" -> "vectorized_elementwise_kernel".
std::string kernel_short_name(std::string_view s);
}  // namespace sqlite_export

}  // namespace cutrace
