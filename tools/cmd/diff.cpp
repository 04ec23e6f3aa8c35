// `cutrace diff A B [--rank R | --rank-a R --rank-b R] [--steps FIRST-LAST] [--step-pattern GLOB]
//                   [--top N] [--json | --html FILE]`: what changed between two runs, most important first. The
// comparison is tools/analysis/diff; this file renders it. docs/DIFF.md describes it.
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <tuple>

#include <CLI/CLI.hpp>

#include "tools/analysis/diff.h"
#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"
#include "tools/export/common.h"
#include "tools/report/data.h"

namespace {

using cutrace::Diff;
using cutrace::tools::Align;
using cutrace::tools::human_bytes;
using cutrace::tools::human_count;
using cutrace::tools::human_ns;
using cutrace::tools::percent;
using cutrace::tools::printable;
using cutrace::tools::Table;

struct Options {
  std::string a, b;
  bool json = false;
  std::string html;  // --html FILE
  size_t top = 20;
  int64_t rank = -1, rank_a = -1, rank_b = -1;
  std::string steps;
  std::string step_pattern = cutrace::SummaryOptions{}.step_pattern;
};

void section(const std::string& title) { std::printf("\n%s\n", printable(title).c_str()); }

std::string ns(double v) { return human_ns(int64_t(std::llround(v))); }
// "+1.20 ms", "-300 ns", "0"
std::string signed_ns(double v) {
  int64_t r = int64_t(std::llround(v));
  if (r == 0) return "0";
  return (r > 0 ? "+" : "-") + human_ns(r > 0 ? r : -r);
}
std::string ratio(double r) { return r > 0 ? fmt::format("{:.2f}x", r) : "-"; }
std::string per_step(double v) { return fmt::format("{:.2f}", v); }
std::string name_cell(const std::string& domain, const std::string& name) {
  std::string n = name.empty() ? "\"\"" : name;
  return cutrace::tools::ellipsize(printable(domain.empty() ? n : domain + ": " + n), 80);
}

void print_header(const Diff& d, const cutrace::DiffSide& a, const cutrace::DiffSide& b) {
  for (auto [label, s, f] : {std::tuple{"A", &a, &d.a}, std::tuple{"B", &b, &d.b}}) {
    std::printf("%s: %s  (%zu files, %s records, %s steps)\n", label, printable(s->path).c_str(), f->files,
                human_count(f->records).c_str(), human_count(f->steps).c_str());
    if (!s->note.empty()) std::printf("   %s\n", printable(s->note).c_str());
    for (const std::string& n : s->model->notes()) std::printf("   Note: %s\n", printable(n).c_str());
  }
  if (d.per_step)
    std::printf("Figures are per step (totals / each run's steps: A %s, B %s) unless marked total.\n",
                human_count(d.a.steps).c_str(), human_count(d.b.steps).c_str());
  else std::printf("Figures are totals: %s has no steps (--step-pattern GLOB).\n", d.a.steps ? "B" : "A");
}

void print_steps(const Diff& d) {
  section(fmt::format("Step time ({})", d.a.step_source));
  if (!d.cpu.a.n || !d.cpu.b.n) {
    std::printf("  none: %s has no step ranges\n", d.cpu.a.n ? "B" : d.cpu.b.n ? "A" : "neither run");
    return;
  }
  Table t({{"", Align::Left},
           {"A median", Align::Right},
           {"A p90", Align::Right},
           {"A IQR", Align::Right},
           {"B median", Align::Right},
           {"B p90", Align::Right},
           {"B IQR", Align::Right},
           {"Change", Align::Right},
           {"Ratio", Align::Right},
           {"P90 change", Align::Right},
           {"Beyond spread", Align::Left}});
  for (auto [label, c] : {std::pair{"CPU (wall)", &d.cpu}, std::pair{"GPU (span)", &d.gpu}}) {
    if (!c->a.n || !c->b.n) continue;
    t.row({label, human_ns(c->a.median), human_ns(c->a.p90), human_ns(c->a.iqr()), human_ns(c->b.median),
           human_ns(c->b.p90), human_ns(c->b.iqr()), signed_ns(double(c->median_change)), ratio(c->ratio),
           signed_ns(double(c->p90_change)), c->beyond_spread ? "yes" : "no"});
  }
  t.print(stdout);
  std::printf("  (beyond spread: |median B - median A| > the larger interquartile range)\n");
}

void print_gpu(const Diff& d) {
  section("GPU activity (all devices; % of elapsed; Change: per step)");
  const cutrace::GpuBreakdown &a = d.a.gpu, &b = d.b.gpu;
  if (!a.intervals && !b.intervals) {
    std::printf("  none (no timed GPU operation)\n");
    return;
  }
  Table t({{"", Align::Left},
           {"A", Align::Right},
           {"A %", Align::Right},
           {"B", Align::Right},
           {"B %", Align::Right},
           {"Change", Align::Right}});
  using G = cutrace::GpuBreakdown;
  const std::pair<const char*, int64_t (*)(const G&)> rows[] = {
      {"Elapsed", [](const G& g) { return g.elapsed_ns(); }},
      {"Busy", [](const G& g) { return g.busy_ns(); }},
      {"  compute", [](const G& g) { return g.compute_ns(); }},
      {"  communication", [](const G& g) { return g.communication_ns(); }},
      {"  memory", [](const G& g) { return g.memory_ns(); }},
      {"Comm/comp overlap", [](const G& g) { return g.overlap_ns(); }},
      {"Idle", [](const G& g) { return g.idle_ns(); }},
      {"  host wait", [](const G& g) { return g.host_wait_ns; }},
      {"  kernel wait", [](const G& g) { return g.kernel_wait_ns; }},
  };
  for (const auto& [label, fn] : rows) {
    int64_t x = fn(a), y = fn(b);
    t.row({label, human_ns(x), percent(double(x), double(a.elapsed_ns())), human_ns(y),
           percent(double(y), double(b.elapsed_ns())), signed_ns(double(y) / d.b.divisor - double(x) / d.a.divisor)});
  }
  t.print(stdout);
}

void print_kernels(const Diff& d, size_t top) {
  section(fmt::format("Kernels: A {} launches {}, B {} launches {}; change {} (by contribution to it)",
                      human_count(d.a.kernels), human_ns(d.a.kernel_ns), human_count(d.b.kernels),
                      human_ns(d.b.kernel_ns), signed_ns(d.kernel_change_ns)));
  if (d.kernels.empty()) return;
  Table t({{"Name", Align::Left},
           {"Match", Align::Left},
           {"A count", Align::Right},
           {"B count", Align::Right},
           {"A time", Align::Right},
           {"B time", Align::Right},
           {"Change", Align::Right},
           {"Contrib", Align::Right},
           {"A mean", Align::Right},
           {"B mean", Align::Right},
           {"Ratio", Align::Right},
           {"A share", Align::Right},
           {"B share", Align::Right}});
  size_t only_a = 0, only_b = 0;
  for (const auto& k : d.kernels) {
    only_a += k.match == cutrace::KernelMatch::OnlyA;
    only_b += k.match == cutrace::KernelMatch::OnlyB;
  }
  for (size_t i = 0; i < d.kernels.size() && i < top; ++i) {
    const cutrace::KernelDiff& k = d.kernels[i];
    bool ha = !k.a.names.empty(), hb = !k.b.names.empty();
    t.row({cutrace::tools::ellipsize(printable(k.name), 80), cutrace::kernel_match_name(k.match),
           ha ? per_step(k.a.count_per_step) : "-", hb ? per_step(k.b.count_per_step) : "-",
           ha ? ns(k.a.per_step_ns) : "-", hb ? ns(k.b.per_step_ns) : "-", signed_ns(k.change_ns),
           percent(k.change_ns, d.kernel_change_ns), ha ? human_ns(k.a.mean_ns) : "-", hb ? human_ns(k.b.mean_ns) : "-",
           ratio(k.ratio), ha ? cutrace::tools::fraction(k.a.share) : "-",
           hb ? cutrace::tools::fraction(k.b.share) : "-"});
  }
  if (d.kernels.size() > top) t.row({fmt::format("(other {} names)", d.kernels.size() - top)});
  t.print(stdout);
  std::printf("  only in A: %zu names; only in B: %zu names%s\n", only_a, only_b,
              d.per_step ? "; count and time per step" : "");
}

void print_ranges(const Diff& d, size_t top) {
  section("NVTX ranges (names that differ only in their numbers share a row; by CPU time change)");
  if (d.ranges.empty()) {
    std::printf("  none\n");
    return;
  }
  Table t({{"Name", Align::Left},
           {"A count", Align::Right},
           {"B count", Align::Right},
           {"A CPU median", Align::Right},
           {"B CPU median", Align::Right},
           {"CPU change", Align::Right},
           {"A GPU mean", Align::Right},
           {"B GPU mean", Align::Right},
           {"GPU change", Align::Right}});
  for (size_t i = 0; i < d.ranges.size() && i < top; ++i) {
    const cutrace::RangeDiff& r = d.ranges[i];
    t.row({name_cell(r.domain, r.name), human_count(r.count_a), human_count(r.count_b), human_ns(r.cpu_median_a),
           human_ns(r.cpu_median_b), signed_ns(r.cpu_change_ns), human_ns(r.gpu_mean_a), human_ns(r.gpu_mean_b),
           signed_ns(r.gpu_change_ns)});
  }
  if (d.ranges.size() > top) t.row({fmt::format("(other {} names)", d.ranges.size() - top)});
  t.print(stdout);
  std::printf("  (Change: time per step; medians and means per range)\n");
}

void print_counts(const std::string& title, const std::vector<cutrace::CountDiff>& v, bool bytes, size_t top) {
  section(title);
  if (v.empty()) {
    std::printf("  none\n");
    return;
  }
  std::vector<Table::Column> cols = {{"", Align::Left},        {"A count", Align::Right}, {"B count", Align::Right},
                                     {"A time", Align::Right}, {"B time", Align::Right},  {"Change", Align::Right}};
  if (bytes) cols.insert(cols.begin() + 3, {{"A bytes", Align::Right}, {"B bytes", Align::Right}});
  Table t(std::move(cols));
  for (size_t i = 0; i < v.size() && i < top; ++i) {
    const cutrace::CountDiff& c = v[i];
    std::vector<std::string> row = {printable(c.name), human_count(c.count_a), human_count(c.count_b),
                                    human_ns(c.ns_a),  human_ns(c.ns_b),       signed_ns(c.change_ns)};
    if (bytes) row.insert(row.begin() + 3, {human_bytes(c.bytes_a), human_bytes(c.bytes_b)});
    t.row(std::move(row));
  }
  if (v.size() > top) t.row({fmt::format("(other {} names)", v.size() - top)});
  t.print(stdout);
}

void print_totals(const Diff& d) {
  section("Totals");
  Table t({{"", Align::Left}, {"A", Align::Right}, {"B", Align::Right}});
  auto peak = [](uint64_t b) { return b ? human_bytes(b) : std::string("-"); };
  t.row({"Memory peak (NVML)", peak(d.a.mem_peak), peak(d.b.mem_peak)});
  t.row({"Dropped records", human_count(d.a.losses.dropped), human_count(d.b.losses.dropped)});
  t.row({"API errors", human_count(d.a.api_errors), human_count(d.b.api_errors)});
  t.row({"Records", human_count(d.a.records), human_count(d.b.records)});
  t.print(stdout);
  for (auto [label, f] : {std::pair{"A", &d.a}, std::pair{"B", &d.b}})
    if (f->losses.dropped)
      std::printf("  WARNING: %s is incomplete: %s\n", label, cutrace::tools::loss_sentence(f->losses).c_str());
}

int run(const Options& o) {
  cutrace::SummaryOptions so;
  so.step_pattern = o.step_pattern;
  std::optional<cutrace::StepPick> pick;
  if (!o.steps.empty()) {
    cutrace::StepPick p;
    if (!cutrace::parse_step_pick(o.steps, &p)) {
      std::fprintf(stderr, "cutrace diff: --steps %s: expected FIRST-LAST, FIRST- or N (0-based step numbers)\n",
                   printable(o.steps).c_str());
      return 2;
    }
    pick = p;
  }
  cutrace::SummaryOptions sa = so, sb = so;
  if (int64_t r = o.rank_a >= 0 ? o.rank_a : o.rank; r >= 0) sa.rank = r;
  if (int64_t r = o.rank_b >= 0 ? o.rank_b : o.rank; r >= 0) sb.rank = r;
  cutrace::DiffSide a = cutrace::load_diff_side(o.a, sa, pick);
  cutrace::DiffSide b = cutrace::load_diff_side(o.b, sb, pick);
  bool failed = false;
  for (const auto* s : {&a, &b}) {
    for (const std::string& e : s->errors) std::fprintf(stderr, "cutrace: %s\n", printable(e).c_str());
    if (!s->ok) {
      if (!s->note.empty())
        std::fprintf(stderr, "cutrace diff: %s: %s\n", printable(s->path).c_str(), printable(s->note).c_str());
      failed = true;
    }
  }
  if (failed) return 1;
  Diff d = cutrace::compare(*a.model, *b.model);
  auto replace = nlohmann::json::error_handler_t::replace;
  if (!o.html.empty()) {
    std::string page, err;
    cutrace::exporter::OutFile f;
    bool ok = cutrace::report::diff_html(cutrace::diff_json(d, a, b).dump(-1, ' ', false, replace), &page, &err) &&
              f.open(o.html, &err);
    if (ok) f.buf() = std::move(page);
    if (!ok || !f.close(&err)) {
      std::fprintf(stderr, "cutrace diff: %s\n", printable(err).c_str());
      return 2;
    }
    std::fprintf(stderr, "cutrace diff: %s (%s)\n", printable(o.html).c_str(), human_bytes(f.written()).c_str());
  } else if (o.json) {
    std::printf("%s\n", cutrace::diff_json(d, a, b).dump(2, ' ', false, replace).c_str());
  } else {
    print_header(d, a, b);
    print_steps(d);
    print_gpu(d);
    print_kernels(d, o.top);
    print_ranges(d, o.top);
    print_counts("Memory copies and sets (GPU time)", d.copies, true, o.top);
    print_counts("Synchronisations (blocked CPU time)", d.syncs, false, o.top);
    print_counts("CUDA API calls (CPU time; by change)", d.apis, false, o.top);
    print_totals(d);
  }
  return a.errors.empty() && b.errors.empty() ? 0 : 1;
}

}  // namespace

void add_diff_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("diff", "Compare two runs (each a DIR, merged file or FILE): what changed");
  sub->add_option("a", o->a, "the first run (A): trace directory, merged job file or .cutrace file")->required();
  sub->add_option("b", o->b, "the second run (B)")->required();
  sub->add_flag("--json", o->json, "print the documented JSON document (docs/DIFF.md) instead of tables");
  sub->add_option("--html", o->html, "write a self-contained HTML page of the diff to this file")
      ->excludes(sub->get_option("--json"));
  sub->add_option("--top", o->top, "rows listed in each table (default 20)")->check(CLI::PositiveNumber);
  auto* rank =
      sub->add_option("--rank", o->rank, "only the trace(s) of this rank, in both runs")->check(CLI::NonNegativeNumber);
  sub->add_option("--rank-a", o->rank_a, "only this rank of A")->check(CLI::NonNegativeNumber)->excludes(rank);
  sub->add_option("--rank-b", o->rank_b, "only this rank of B")->check(CLI::NonNegativeNumber)->excludes(rank);
  sub->add_option("--steps", o->steps,
                  "only steps FIRST-LAST of each file (0-based, in the order they began; N or FIRST- also)");
  sub->add_option("--step-pattern", o->step_pattern,
                  "ranges that are training steps: globs separated by '|' (default 'step_[0-9]*|ProfilerStep#[0-9]*')");
  sub->callback([o] {
    if (int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}
