// cutrace merge DIR [--json]: puts every rank of a job on one clock (tools/align.h) and reports
// the offsets and the alignment residual. Exports and summaries of DIR use the same alignment.
// Exit status 2 when there is no trace or one of them cannot be read (named on stderr).
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "collector/reader.h"
#include "tools/align.h"
#include "tools/commands.h"
#include "tools/format_util.h"

namespace {

using cutrace::tools::printable;  // names from traces and directories: no control characters

int run_merge(const std::string& where, bool json) {
  std::vector<std::string> files = cutrace::list_trace_files(where);
  if (files.empty()) {
    fprintf(stderr, "cutrace merge: no .cutrace files in %s\n", printable(where).c_str());
    return 2;
  }
  cutrace::Alignment a = cutrace::align_traces(files);
  if (!a.errors.empty()) {  // a rank that cannot be read cannot be aligned: no partial answer
    for (const std::string& e : a.errors) fprintf(stderr, "cutrace merge: %s\n", printable(e).c_str());
    return 2;
  }
  if (json) {
    nlohmann::json j;
    j["method"] = a.method;
    j["mixed_runs"] = a.mixed_runs;
    j["matched_collectives"] = a.matched;
    j["residual_median_ns"] = a.residual_median_ns;
    j["residual_max_ns"] = a.residual_max_ns;
    for (const auto& r : a.ranks)
      j["ranks"].push_back({{"file", r.file}, {"rank", r.rank}, {"host", r.host}, {"offset_ns", r.offset_ns},
                            {"refined_ns", r.refined_ns}});
    printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());  // host names: any bytes
    return 0;
  }
  printf("%zu trace files, clock alignment: %s\n", files.size(), a.method.c_str());
  printf("  %-6s %-16s %22s %14s  %s\n", "rank", "host", "offset (ns)", "refined (ns)", "file");
  for (const auto& r : a.ranks)
    printf("  %-6d %-16s %22lld %14lld  %s\n", r.rank, printable(r.host).c_str(), (long long)r.offset_ns,
           (long long)r.refined_ns, printable(r.file).c_str());
  if (a.matched)
    printf("NCCL collectives matched across all ranks: %zu; residual after alignment: median %.0f ns, max %.0f ns\n",
           a.matched, a.residual_median_ns, a.residual_max_ns);
  else
    printf("no NCCL collectives matched: ranks aligned on their wall clocks only\n");
  for (const std::string& m : a.mixed_runs) printf("Note: %s\n", printable(m).c_str());
  return 0;
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto where = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("merge", "Align every rank of a job on one clock and report the residual");
  sub->add_option("dir", *where, "Directory of trace files (one per rank)")->required();
  sub->add_flag("--json", *json, "Print the alignment as JSON");
  sub->callback([where, json] { throw CLI::RuntimeError(run_merge(*where, *json)); });
}
