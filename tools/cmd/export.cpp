// `cutrace export DIR|FILE --format chrome|perfetto|sqlite -o OUT`: the traces of a run, on one
// clock (tools/analysis/align.h), in a format other tools load:
//   chrome    one Kineto-style JSON per rank in directory OUT (or the file OUT, if it ends in
//             .json and there is one trace): Holistic Trace Analysis, Perfetto, chrome://tracing
//   perfetto  one Perfetto protobuf trace OUT with every rank (ui.perfetto.dev, trace_processor)
//   sqlite    one SQLite database OUT with Nsight Systems' export tables
// A trace that does not open is skipped, named with the reason, and the others are exported: exit
// status 1. Exit status 2 on errors (no traces, none readable, unwritable output).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "tools/analysis/align.h"
#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"
#include "tools/export/common.h"
#include "tools/export/exports.h"
#include "trace/reader.h"

namespace {

struct Options {
  std::string path;
  std::string format;
  std::string out;
  bool quiet = false;
};

std::string human_size(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(b) / double(1ull << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

int run(const Options& o) {
  std::vector<std::string> files = cutrace::list_trace_files(o.path);
  if (files.empty()) {
    std::fprintf(stderr, "cutrace export: %s: no *.cutrace files\n", o.path.c_str());
    return 2;
  }
  if (o.format == "chrome" && files.size() > 1 && o.out.size() > 5 &&
      o.out.compare(o.out.size() - 5, 5, ".json") == 0) {
    std::fprintf(stderr,
                 "cutrace export: -o %s names one file, but %s holds %zu traces: the chrome format writes one Kineto "
                 "JSON per rank, the layout Holistic Trace Analysis reads from a directory: name a directory (-o %s)\n",
                 o.out.c_str(), o.path.c_str(), files.size(), o.out.substr(0, o.out.size() - 5).c_str());
    return 2;
  }
  auto t0 = std::chrono::steady_clock::now();
  cutrace::Alignment a = cutrace::align_traces(files);
  auto t1 = std::chrono::steady_clock::now();
  std::string err;
  cutrace::exporter::g_stats.clear();
  bool ok = false;
  if (o.format == "chrome") ok = cutrace::export_chrome(files, a, o.out, &err);
  else if (o.format == "perfetto") ok = cutrace::export_perfetto(files, a, o.out, &err);
  else ok = cutrace::export_sqlite(files, a, o.out, &err);
  auto t2 = std::chrono::steady_clock::now();
  const cutrace::exporter::ExportStats& st = cutrace::exporter::g_stats;
  using cutrace::tools::printable;  // warnings name traces and their hosts: no control characters
  for (const std::string& w : a.mixed_runs) std::fprintf(stderr, "cutrace export: warning: %s\n", printable(w).c_str());
  for (const std::string& w : st.warnings) std::fprintf(stderr, "cutrace export: warning: %s\n", printable(w).c_str());
  if (ok) {
    for (const std::string& w : st.skipped)
      std::fprintf(stderr, "cutrace export: skipped %s (the other traces are exported)\n", printable(w).c_str());
  }
  if (!ok) {
    std::fprintf(stderr, "cutrace export: %s\n", err.empty() ? "export failed" : printable(err).c_str());
    return 2;
  }
  if (!o.quiet) {
    double align_s = std::chrono::duration<double>(t1 - t0).count();
    double export_s = std::chrono::duration<double>(t2 - t1).count();
    std::fprintf(stderr, "cutrace export: %zu trace(s), clock alignment %s", files.size() - st.skipped.size(),
                 a.method.c_str());
    if (a.matched)
      std::fprintf(stderr, " (%zu collectives, residual median %.1f us)", a.matched, a.residual_median_ns / 1e3);
    std::fprintf(stderr, " in %.2f s\n", align_s);
    if (st.events || st.bytes) {
      const char* unit = o.format == "perfetto" ? "packets" : "events";
      std::fprintf(stderr, "cutrace export: %llu %s, %s in %.2f s (%.2f M %s/s)\n",
                   static_cast<unsigned long long>(st.events), unit, human_size(st.bytes).c_str(), export_s,
                   export_s > 0 ? double(st.events) / export_s / 1e6 : 0.0, unit);
    }
    for (const std::string& out : st.outputs) std::printf("%s\n", out.c_str());
    if (st.outputs.empty()) std::printf("%s\n", o.out.c_str());
  }
  return st.skipped.empty() ? 0 : 1;
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* sub =
      app.add_subcommand("export", "Export the traces of a run (DIR) or one FILE to Chrome JSON, Perfetto or SQLite");
  sub->add_option("path", o->path, "trace directory or .cutrace file")->required();
  sub->add_option("--format,-f", o->format,
                  "chrome (Kineto JSON per rank, for HTA/Perfetto), perfetto (protobuf, all ranks), sqlite (Nsight "
                  "Systems tables)")
      ->required()
      ->check(CLI::IsMember({"chrome", "perfetto", "sqlite"}));
  sub->add_option("-o,--output", o->out,
                  "chrome: output directory (or FILE.json for one trace); perfetto/sqlite: output file")
      ->required();
  sub->add_flag("-q,--quiet", o->quiet, "print nothing but errors");
  sub->callback([o] {
    if (int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}
