// `cutrace report DIR|FILE -o report.html`: one self-contained HTML file (no network access) with
// the dashboard and the timeline of a run. The page is web/ (embedded at build time), the data
// tools/report/data.h; docs/REPORT.md describes both. Exit status 2 on errors.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"
#include "tools/export/common.h"
#include "tools/report/data.h"

namespace {

struct Options {
  std::string path;
  std::string out = "report.html";
  bool quiet = false;
};

int run(const Options& o) {
  std::string html, err;
  std::vector<std::string> unreadable;
  if (!cutrace::report::report_html(o.path, &html, &err, &unreadable)) {
    std::fprintf(stderr, "cutrace report: %s\n", cutrace::tools::printable(err).c_str());  // names traces
    return 2;
  }
  cutrace::exporter::OutFile f;
  if (!f.open(o.out, &err)) {
    std::fprintf(stderr, "cutrace report: %s\n", err.c_str());
    return 2;
  }
  for (const std::string& u : unreadable)  // also named in the page
    std::fprintf(stderr, "cutrace report: not in the report: %s\n", cutrace::tools::printable(u).c_str());
  f.buf() = std::move(html);
  if (!f.close(&err)) {
    std::fprintf(stderr, "cutrace report: %s\n", err.c_str());
    return 2;
  }
  if (!o.quiet)
    std::fprintf(stderr, "cutrace report: %s (%s)\n", o.out.c_str(), cutrace::tools::human_bytes(f.written()).c_str());
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write one self-contained HTML report (dashboard and timeline) of a run (DIR) or one FILE");
  sub->add_option("path", o->path, "trace directory or .cutrace file")->required();
  sub->add_option("-o,--output", o->out, "output HTML file (default report.html)");
  sub->add_flag("-q,--quiet", o->quiet, "print nothing but errors");
  sub->callback([o] {
    if (int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}
