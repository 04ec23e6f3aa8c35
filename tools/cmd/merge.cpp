// cutrace merge DIR [-o FILE] [--json] [--clock-tolerance T]: puts every rank of a job on one
// clock (tools/analysis/align.h), reports each rank's alignment (collectives matched, correction,
// residual, or why it stays on its wall clock) and, with -o, writes one merged job file
// (trace/job_file.h) that every tool reads as it reads DIR, on the offsets reported here.
// A trace that does not open is left out, named with the reason (stderr, the text and --json's
// `skipped`), and the others are merged: exit status 1. Exit status 2 when there is no trace, none
// opens, or the output cannot be written.
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tools/analysis/align.h"
#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"
#include "trace/reader.h"

namespace {

using cutrace::tools::printable;  // names from traces and directories: no control characters

struct Options {
  std::string where, out, tolerance;
  bool json = false;
};

std::string dir_name(const std::string& p) {
  size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat x {
  }, y{};
  return stat(a.c_str(), &x) == 0 && stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int run_merge(const Options& o) {
  cutrace::AlignOptions opt;
  if (!o.tolerance.empty() &&
      (!cutrace::tools::parse_duration(o.tolerance, &opt.cross_host_tolerance_ns) || opt.cross_host_tolerance_ns < 0)) {
    fprintf(stderr, "cutrace merge: --clock-tolerance %s: expected a duration such as 50ms or 3s\n",
            o.tolerance.c_str());
    return 2;
  }
  std::vector<std::string> files = cutrace::list_trace_files(o.where);
  if (files.empty()) {
    fprintf(stderr, "cutrace merge: no .cutrace files in %s\n", printable(o.where).c_str());
    return 2;
  }
  if (!o.out.empty()) {
    struct stat st {};
    bool in_dir = stat(o.where.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && same_file(dir_name(o.out), o.where);
    if (in_dir && o.out.size() >= 8 && o.out.compare(o.out.size() - 8, 8, ".cutrace") == 0) {
      fprintf(stderr,
              "cutrace merge: %s would lie in %s beside the traces it holds, and tools reading %s would read every "
              "rank twice: write it elsewhere\n",
              o.out.c_str(), o.where.c_str(), o.where.c_str());
      return 2;
    }
  }
  // A rank whose file does not open is left out, named with the reason; the others are merged.
  std::vector<std::pair<std::string, std::string>> skipped;  // file, reason
  std::vector<std::string> readable;
  for (const std::string& f : files) {
    cutrace::TraceReader r;
    std::string e;
    if (r.open(f, &e)) readable.push_back(f);
    else skipped.emplace_back(f, cutrace::open_error_reason(f, e));
  }
  for (const auto& [f, why] : skipped)
    fprintf(stderr, "cutrace merge: %s: %s: left out%s\n", printable(f).c_str(), printable(why).c_str(),
            readable.empty() ? "" : ", the other ranks are merged");
  if (readable.empty()) return 2;
  files = readable;
  cutrace::Alignment a = cutrace::align_traces(files, opt);
  if (!a.errors.empty()) {  // a file that stopped reading between the two opens
    for (const std::string& e : a.errors) fprintf(stderr, "cutrace merge: %s\n", printable(e).c_str());
    return 2;
  }
  const int rc = skipped.empty() ? 0 : 1;
  std::string err;
  if (!o.out.empty() && !cutrace::write_merged(o.out, files, a, opt.cross_host_tolerance_ns, &err)) {
    fprintf(stderr, "cutrace merge: %s\n", err.c_str());
    return 2;
  }
  if (o.json) {
    nlohmann::json j;
    j["method"] = a.method;
    j["reference_rank"] = a.reference >= 0 ? nlohmann::json(a.ranks[size_t(a.reference)].rank) : nlohmann::json();
    j["mixed_runs"] = a.mixed_runs;
    j["matched_collectives"] = a.matched;
    j["residual_median_ns"] = a.residual_median_ns;
    j["residual_max_ns"] = a.residual_max_ns;
    j["warnings"] = a.warnings;
    j["output"] = o.out.empty() ? nlohmann::json() : nlohmann::json(o.out);
    j["skipped"] = nlohmann::json::array();
    for (const auto& [f, why] : skipped) j["skipped"].push_back({{"file", f}, {"reason", why}});
    j["ranks"] = nlohmann::json::array();
    for (const auto& r : a.ranks)
      j["ranks"].push_back({{"file", r.file},
                            {"rank", r.rank},
                            {"host", r.host},
                            {"offset_ns", r.offset_ns},
                            {"wall_offset_ns", r.wall_offset_ns},
                            {"refined_ns", r.refined_ns},
                            {"uncertainty_ns", r.uncertainty_ns},
                            {"collectives", r.collectives},
                            {"matched", r.matched},
                            {"matched_by", r.matched_by},
                            {"residual_median_ns", r.residual_median_ns},
                            {"residual_max_ns", r.residual_max_ns},
                            {"status", r.status},
                            {"note", r.note}});
    printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());  // host names: any bytes
    return rc;
  }
  printf("%zu trace files, clock alignment: %s\n", files.size(), a.method.c_str());
  printf("  %-6s %-16s %22s %14s %12s  %s\n", "rank", "host", "offset (ns)", "refined (ns)", "uncertainty", "file");
  for (const auto& r : a.ranks)
    printf("  %-6d %-16s %22lld %14lld %12s  %s\n", r.rank, printable(r.host).c_str(), (long long)r.offset_ns,
           (long long)r.refined_ns, ("+-" + cutrace::tools::human_ns(r.uncertainty_ns)).c_str(),
           printable(r.file).c_str());
  for (const std::string& l : cutrace::alignment_lines(a)) printf("%s\n", printable(l).c_str());
  if (a.reference >= 0 && files.size() > 1) {
    const cutrace::RankClock& ref = a.ranks[size_t(a.reference)];
    printf("Collectives of rank %d matched on every rank with collectives: %zu of %llu", ref.rank, a.matched,
           (unsigned long long)ref.collectives);
    if (a.method == "realtime+nccl")
      printf("; residual after alignment: median %lld ns, max %lld ns", (long long)a.residual_median_ns,
             (long long)a.residual_max_ns);
    printf("\n");
  }
  for (const std::string& w : a.warnings) printf("Warning: %s\n", printable(w).c_str());
  for (const std::string& m : a.mixed_runs) printf("Note: %s\n", printable(m).c_str());
  for (const auto& [f, why] : skipped)
    printf("Left out (unreadable): %s: %s\n", printable(f).c_str(), printable(why).c_str());
  if (!o.out.empty()) printf("Wrote %s: %zu traces on one clock\n", printable(o.out).c_str(), files.size());
  return rc;
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "merge", "Align every rank of a job on one clock, report each rank's alignment; -o writes one merged file");
  sub->add_option("dir", o->where, "Directory of trace files (one per rank), or a merged file")->required();
  sub->add_option("-o,--output", o->out, "Write one merged job file with every rank on this clock");
  sub->add_option("--clock-tolerance", o->tolerance,
                  "How far two hosts' wall clocks may disagree (default 50ms): no correction beyond it");
  sub->add_flag("--json", o->json, "Print the alignment as JSON");
  sub->callback([o] { throw CLI::RuntimeError(run_merge(*o)); });
}
