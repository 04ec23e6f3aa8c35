// Exporters behind `cutrace export --format chrome|perfetto|sqlite`. Each reads the traces with
// the reader library (streaming) and writes timestamps on the common clock of tools/align.h.
#pragma once
#include <string>
#include <vector>
#include "tools/align.h"

namespace cutrace {

// Chrome trace JSON in the schema PyTorch's profiler (Kineto) writes: one file per rank, named
// <out_dir>/<trace file name>.json (or exactly `out` when there is one input and out ends in .json).
bool export_chrome(const std::vector<std::string>& files, const Alignment& a, const std::string& out,
                   std::string* err);
// Perfetto's native protobuf trace (TracePacket stream), all ranks in one file.
bool export_perfetto(const std::vector<std::string>& files, const Alignment& a, const std::string& out,
                     std::string* err);
// SQLite database with Nsight Systems' export tables, all ranks in one file.
bool export_sqlite(const std::vector<std::string>& files, const Alignment& a, const std::string& out,
                   std::string* err);

}  // namespace cutrace
