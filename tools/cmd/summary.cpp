// `cutrace summary DIR|FILE [--rank R] [--json] [--top N] [--window W] [--from NS --to NS]
//                  [--step-pattern GLOB | --step-sync KIND]`:
// where the GPU and CPU time went, across every trace of a run. The aggregation is
// tools/summary_model; this file only renders it. docs/SUMMARY.md describes every table and key.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <memory>
#include <tuple>

#include <CLI/CLI.hpp>

#include "tools/analysis/name_groups.h"
#include "tools/analysis/straggler.h"
#include "tools/analysis/summary_model.h"
#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"

namespace {

using cutrace::Dist;
using cutrace::FileSummary;
using cutrace::GpuBreakdown;
using cutrace::SummaryModel;
using cutrace::tools::Align;
using cutrace::tools::fraction;
using cutrace::tools::human_bytes;
using cutrace::tools::human_count;
using cutrace::tools::human_ns;
using cutrace::tools::percent;
using cutrace::tools::printable;
using cutrace::tools::Table;

constexpr size_t kNameWidth = 80;

struct Options {
  std::string path;
  bool json = false;
  size_t top = 20;
  int64_t rank = -1;
  int64_t window = -1;
  std::string from, to;  // ns of the file's clock, or a duration from its start ("5s", "120ms")
  std::string step_pattern = cutrace::SummaryOptions{}.step_pattern;
  std::string py_skip = cutrace::kDefaultPySkip;
  std::string step_sync;
};

std::string ellipsize(const std::string& s) { return cutrace::tools::ellipsize(s, kNameWidth); }
std::string rank_label(int64_t rank) { return rank < 0 ? "-" : std::to_string(rank); }

std::string device_line(const cutrace::DeviceInfo& d) {
  return fmt::format("{}: {} (sm_{}{}, {} SMs, {})", d.device, printable(d.name), d.cc_major, d.cc_minor, d.sm_count,
                     human_bytes(d.total_mem));
}

std::string status_line(const FileSummary& f) {
  const cutrace::ReadStatus& s = f.status;
  std::string out = s.complete ? "complete" : "truncated (no End record)";
  if (s.complete && (s.end.flags & cutrace::trace::kEndSignal)) out += ", ended by a signal";
  if (f.exit_status > 0) out += fmt::format(", exit status {}", f.exit_status);
  out += fmt::format(", blocks {}", human_count(s.blocks));
  if (s.bad_blocks) out += fmt::format(", bad blocks skipped {}", s.bad_blocks);
  if (s.missing_blocks) out += fmt::format(", blocks missing {}", s.missing_blocks);
  if (s.duplicate_blocks) out += fmt::format(", duplicate blocks skipped {}", s.duplicate_blocks);
  if (f.read_error) out += ", read error";
  return out + fmt::format(", dropped records {}", human_count(f.dropped));
}

std::string human_or_ns(int64_t ns, bool human) { return human ? human_ns(ns) : std::to_string(ns); }

void print_files(const SummaryModel& m) {
  for (const FileSummary& f : m.files()) {
    std::printf("%s\n", printable(f.file).c_str());
    std::string rank = rank_label(f.rank);
    if (f.world_size > 0) rank += fmt::format(" of {}", f.world_size);
    if (f.local_rank >= 0) rank += fmt::format(" (local {})", f.local_rank);
    std::printf("  host %s   rank %s   pid %lld   format %s   gpu timing %s\n",
                f.host.empty() ? "-" : printable(f.host).c_str(), rank.c_str(), static_cast<long long>(f.pid),
                f.version.c_str(), f.gpu_timing.empty() ? "-" : printable(f.gpu_timing).c_str());
    std::printf("  cmdline  %s\n",
                f.cmdline.empty() ? "-" : printable(cutrace::tools::ellipsize(f.cmdline, 200)).c_str());
    for (const auto& d : f.devices) std::printf("  device   %s\n", device_line(d).c_str());
    std::printf("  status   %s\n", status_line(f).c_str());
    if (f.flight_seconds > 0 && f.flight_snapshots.empty())
      std::printf("  flight recorder: the last %g s kept, no snapshot written (no trigger)\n", f.flight_seconds);
    for (const std::string& line : f.flight_snapshots) std::printf("  flight recorder: %s\n", printable(line).c_str());
  }
  const cutrace::SummaryOptions& o = m.options();
  std::string filters;
  if (o.rank) filters += fmt::format(" rank {}", *o.rank);
  if (o.window) filters += fmt::format(" window {}", *o.window);
  if (o.from_ns != std::numeric_limits<int64_t>::min())
    filters += fmt::format(" from {}", human_or_ns(o.from_ns, o.relative));
  if (o.to_ns != std::numeric_limits<int64_t>::max())
    filters += fmt::format(" to {}", human_or_ns(o.to_ns, o.relative));
  if (!filters.empty())
    std::printf("Filters:%s (%s)\n", filters.c_str(),
                o.relative ? "from each file's capture start" : "ns on each file's clock");
  if (m.skipped_files()) std::printf("Files skipped by the filters: %s\n", human_count(m.skipped_files()).c_str());
  for (const std::string& n : m.notes()) std::printf("Note: %s\n", printable(n).c_str());
}

void section(const std::string& title) { std::printf("\n%s\n", printable(title).c_str()); }

// ---- kernels -----------------------------------------------------------------------------------

std::vector<std::string> kernel_row(const std::string& name, const cutrace::TimeStat& t, int64_t all_ns,
                                    bool exact_stats) {
  const Dist& d = t.gpu;
  return {ellipsize(name),
          human_count(t.count),
          human_ns(t.total_ns()),
          percent(double(t.total_ns()), double(all_ns)),
          human_ns(t.mean_ns()),
          exact_stats ? human_ns(d.median()) : "",
          human_ns(t.min_ns()),
          human_ns(t.max_ns()),
          exact_stats ? human_ns(d.stddev()) : "",
          t.untimed ? human_count(t.untimed) + (t.pending ? " (" + human_count(t.pending) + " pending)" : "") : ""};
}

void print_kernels(const SummaryModel& m, size_t top) {
  std::vector<cutrace::KernelStat> ks = m.kernels();
  cutrace::TimeStat all;
  int64_t all_est = 0;
  for (const auto& k : ks) all.merge(k.time), all_est = cutrace::sat_add(all_est, k.est_ns);
  // A sampled trace (--gpu-sample): Total is the timed launches' time, Est. total all launches'.
  const bool sampled = m.sampled();
  // Kernels of graph replays have no launch call of their own: "N kernels (K of them in R replays)".
  const std::string lower = m.losses().by_kind[cutrace::trace::kLossKernel] ? ">=" : "";
  const std::string count =
      m.graph_kernels() == 0 ? lower + human_count(all.count) + " launches"
                             : fmt::format("{} kernels ({} of them in {} CUDA graph replays)", human_count(all.count),
                                           human_count(m.graph_kernels()), human_count(m.graph_replays()));
  if (sampled) {
    section(fmt::format("Kernels: {}, {} GPU time timed, {} estimated for all, {} names (by estimated GPU time)", count,
                        human_ns(all.total_ns()), human_ns(all_est), human_count(ks.size())));
  } else {
    section(fmt::format("Kernels: {}, {} GPU time, {} names (by GPU time)", count, human_ns(all.total_ns()),
                        human_count(ks.size())));
  }
  if (ks.empty()) return;
  std::vector<Table::Column> cols = {{"Name", Align::Left},    {"Count", Align::Right}, {"Total", Align::Right},
                                     {"Time%", Align::Right},  {"Mean", Align::Right},  {"Median", Align::Right},
                                     {"Min", Align::Right},    {"Max", Align::Right},   {"StdDev", Align::Right},
                                     {"Untimed", Align::Right}};
  if (sampled) cols.insert(cols.begin() + 3, {"Est. total", Align::Right});
  Table t(std::move(cols));
  auto row = [&](std::vector<std::string> cells, int64_t est) {
    if (sampled) cells.insert(cells.begin() + 3, human_ns(est));
    t.row(std::move(cells));
  };
  for (size_t i = 0; i < ks.size() && i < top; ++i)
    row(kernel_row(ks[i].name, ks[i].time, all.total_ns(), true), ks[i].est_ns);
  if (ks.size() > top) {
    cutrace::TimeStat rest;
    int64_t rest_est = 0;
    for (size_t i = top; i < ks.size(); ++i)
      rest.merge(ks[i].time), rest_est = cutrace::sat_add(rest_est, ks[i].est_ns);
    row(kernel_row(fmt::format("(other {} names)", ks.size() - top), rest, all.total_ns(), false), rest_est);
  }
  t.print(stdout);

  std::vector<const cutrace::KernelStat*> by_count;
  for (const auto& k : ks) by_count.push_back(&k);
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto* a, const auto* b) { return a->time.count > b->time.count; });
  section("Kernels by launch count");
  Table c({{"Name", Align::Left},
           {"Count", Align::Right},
           {"Count%", Align::Right},
           {"Total", Align::Right},
           {"Mean", Align::Right},
           {"Median", Align::Right}});
  uint64_t rest_n = 0;
  int64_t rest_ns = 0;
  for (size_t i = 0; i < by_count.size(); ++i) {
    const cutrace::TimeStat& s = by_count[i]->time;
    if (i >= top) {
      rest_n += s.count;
      rest_ns = cutrace::sat_add(rest_ns, s.total_ns());
      continue;
    }
    c.row({ellipsize(by_count[i]->name), human_count(s.count), percent(double(s.count), double(all.count)),
           human_ns(s.total_ns()), human_ns(s.mean_ns()), human_ns(s.gpu.median())});
  }
  if (by_count.size() > top) {
    c.row({fmt::format("(other {} names)", by_count.size() - top), human_count(rest_n),
           percent(double(rest_n), double(all.count)), human_ns(rest_ns), "", ""});
  }
  c.print(stdout);
}

void print_precision(const SummaryModel& m) {
  section("Kernel precision (inferred from kernel names, see docs/SUMMARY.md)");
  Table t({{"Precision", Align::Left},
           {"Names", Align::Right},
           {"Launches", Align::Right},
           {"GPU time", Align::Right},
           {"Time%", Align::Right}});
  auto prec = m.precisions();
  int64_t all = 0;
  for (const auto& p : prec) all += p.total_ns;
  std::vector<size_t> order;
  for (size_t i = 0; i < prec.size(); ++i) {
    if (prec[i].count) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return prec[a].total_ns > prec[b].total_ns; });
  for (size_t i : order) {
    const cutrace::PrecisionTotal& p = prec[i];
    t.row({cutrace::precision_name(cutrace::Precision(i)), human_count(p.names), human_count(p.count),
           human_ns(p.total_ns), percent(double(p.total_ns), double(all))});
  }
  if (t.empty()) std::printf("  none\n");
  else t.print(stdout);
}

std::string dist_line(const Dist& d) {
  return fmt::format("n={} mean {} median {} p90 {} p99 {} min {} max {} stddev {}", human_count(d.n),
                     human_ns(d.mean()), human_ns(d.median()), human_ns(d.percentile(0.9)),
                     human_ns(d.percentile(0.99)), human_ns(d.min), human_ns(d.max), human_ns(d.stddev()));
}

void print_launches(const SummaryModel& m) {
  uint64_t timed = 0;
  int64_t kernel_ns = 0;
  for (const auto& k : m.kernels()) {
    timed += k.time.timed();
    kernel_ns = cutrace::sat_add(kernel_ns, k.time.total_ns());
  }
  section(fmt::format("Short kernels (GPU time < {}): {} of {} timed launches ({}), {} of kernel GPU time ({})",
                      human_ns(m.options().short_kernel_ns), human_count(m.short_kernels()), human_count(timed),
                      percent(double(m.short_kernels()), double(timed)), human_ns(m.short_kernel_ns()),
                      percent(double(m.short_kernel_ns()), double(kernel_ns))));
  const Dist& l = m.launch_latency();
  section("Launch latency (kernel GPU start - launch call return; measured starts only)");
  if (l.n == 0) {
    std::printf(
        "  none: no kernel has a measured start (default timing mode infers starts;\n"
        "  record with --gpu-timing cupti, exact or events)\n");
    return;
  }
  std::printf("  all launches          %s\n", dist_line(l).c_str());
  if (l.neg.count())
    std::printf("                        %s started before the launch call returned\n",
                human_count(l.neg.count()).c_str());
  std::printf("  stream idle at launch %s\n", dist_line(m.launch_latency_idle()).c_str());
  if (m.worst_launches().empty()) return;
  std::printf("  Worst launches on an idle stream:\n");
  Table t({{"Latency", Align::Right}, {"Rank", Align::Right}, {"Corr", Align::Right}, {"Kernel", Align::Left}});
  for (const auto& w : m.worst_launches()) {
    t.row({human_ns(w.latency_ns), rank_label(w.rank), std::to_string(w.corr), ellipsize(w.name)});
  }
  t.print(stdout, 4);
}

// ---- memory operations ---------------------------------------------------------------------------

std::vector<std::string> copy_row(const std::string& kind, const cutrace::CopyStat& c, int64_t mem_ns) {
  return {kind,
          human_count(c.time.count),
          human_bytes(c.bytes),
          human_ns(c.time.total_ns()),
          percent(double(c.time.total_ns()), double(mem_ns)),
          human_ns(c.time.mean_ns()),
          human_ns(c.time.gpu.median()),
          cutrace::tools::human_rate(c.timed_bytes, c.time.total_ns()),
          c.time.untimed ? human_count(c.time.untimed) : ""};
}

void print_copies(const SummaryModel& m) {
  Table t({{"Kind", Align::Left},
           {"Count", Align::Right},
           {"Bytes", Align::Right},
           {"Total", Align::Right},
           {"Share", Align::Right},
           {"Mean", Align::Right},
           {"Median", Align::Right},
           {"Bandwidth", Align::Right},
           {"Untimed", Align::Right}});
  int64_t mem_ns = m.memsets().time.total_ns();
  std::vector<std::pair<std::string, const cutrace::CopyStat*>> rows;
  for (size_t k = 0; k < SummaryModel::kCopyKinds; ++k) {
    const cutrace::CopyStat& c = m.memcpy_kind(k);
    mem_ns = cutrace::sat_add(mem_ns, c.time.total_ns());  // saturating: times from the file
    if (c.time.count) rows.emplace_back("memcpy " + std::string(cutrace::copy_kind_name(uint8_t(k))), &c);
  }
  if (m.memsets().time.count) rows.emplace_back("memset", &m.memsets());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second->time.total_ns() > b.second->time.total_ns(); });
  for (const auto& [kind, c] : rows) t.row(copy_row(kind, *c, mem_ns));
  section("Memory copies and sets (GPU time; Share: of all memory-operation time)");
  if (t.empty()) std::printf("  none\n");
  else t.print(stdout);
}

// ---- GPU activity, breakdown, utilisation --------------------------------------------------------

std::string nvml_util(const FileSummary& f, uint16_t device) {
  for (const auto& s : f.nvml) {
    if (s.device == device && s.samples) return fmt::format("{:.1f}%", s.util_mean());
  }
  return "-";
}

// CPU performance counters per rank: the process's, then one row per counter summed over CPUs.
void print_cpu_counters(const SummaryModel& m) {
  Table t({{"Rank", Align::Right},
           {"Counter", Align::Left},
           {"Scope", Align::Left},
           {"Total", Align::Right},
           {"Per second", Align::Right},
           {"Note", Align::Left}});
  std::vector<std::string> missing;
  for (const FileSummary& f : m.files()) {
    const cutrace::tools::CounterSet& cs = f.counters;
    std::vector<std::string> cpu_done;
    for (const cutrace::tools::CounterTrack& c : cs.tracks()) {
      bool ns = c.unit == cutrace::trace::CounterUnit::Nanoseconds;
      std::string note = c.source == 1 ? "getrusage" : "";
      if (c.min_running < 10000)
        note += fmt::format("{}multiplexed (on {:.0f}% of the time at least)", note.empty() ? "" : ", ",
                            c.min_running / 100.0);
      if (c.scope == cutrace::trace::CounterScope::Process) {
        t.row({rank_label(f.rank), c.name, "process", ns ? human_ns(int64_t(c.total)) : human_count(c.total),
               ns ? fmt::format("{:.2f} CPUs", c.per_second() / 1e9) : fmt::format("{:.4g}", c.per_second()), note});
        continue;
      }
      if (std::find(cpu_done.begin(), cpu_done.end(), c.name) != cpu_done.end()) continue;
      cpu_done.push_back(c.name);
      uint64_t total = 0;
      double rate = 0;
      int n = 0;
      for (const cutrace::tools::CounterTrack& o : cs.tracks())
        if (o.scope == cutrace::trace::CounterScope::Cpu && o.name == c.name)
          total += o.total, rate += o.per_second(), ++n;
      t.row({rank_label(f.rank), c.name, fmt::format("{} CPUs", n), human_count(total), fmt::format("{:.4g}", rate),
             note});
    }
    if (double ipc = cs.ipc(); ipc >= 0)
      t.row({rank_label(f.rank), "IPC", "process", fmt::format("{:.3f}", ipc), "", "instructions / cycles"});
    for (const cutrace::tools::CounterMissing& x : cs.missing())
      missing.push_back(fmt::format("rank {}: {}{}: {}", rank_label(f.rank), x.name,
                                    x.scope == cutrace::trace::CounterScope::Cpu ? " per CPU" : "", x.reason));
  }
  if (t.empty() && missing.empty()) return;
  section("CPU counters (perf_event_open, over the sampled intervals)");
  if (!t.empty()) t.print(stdout);
  for (const std::string& line : missing) printf("  missing: %s\n", line.c_str());
}

void print_activity(const SummaryModel& m) {
  section("GPU activity per device (union of busy intervals; overlaps count once: kernel > memcpy > memset)");
  Table t({{"Rank", Align::Right},
           {"Dev", Align::Right},
           {"Elapsed", Align::Right},
           {"Busy", Align::Right},
           {"Util", Align::Right},
           {"NVML util", Align::Right},
           {"Kernels", Align::Right},
           {"Memcpy", Align::Right},
           {"Memset", Align::Right},
           {"Idle", Align::Right},
           {"Late", Align::Right}});
  for (const FileSummary& f : m.files()) {
    for (const auto& a : f.activity) {
      const GpuBreakdown& b = a.timeline;
      double e = double(b.elapsed_ns());
      t.row({rank_label(f.rank), std::to_string(a.device), human_ns(b.elapsed_ns()), human_ns(b.busy_ns()),
             percent(double(b.busy_ns()), e), nvml_util(f, a.device), percent(double(b.kernel_ns()), e),
             percent(double(b.memcpy_ns()), e), percent(double(b.memset_ns()), e), percent(double(b.idle_ns()), e),
             b.late ? human_count(b.late) : ""});
    }
  }
  if (t.empty()) {
    std::printf("  none (no timed GPU operation)\n");
    return;
  }
  t.print(stdout);

  section("Temporal breakdown per rank (HTA-style, % of elapsed; idle = host wait + kernel wait)");
  Table b({{"Rank", Align::Right},
           {"Dev", Align::Right},
           {"Compute", Align::Right},
           {"Comm", Align::Right},
           {"Memory", Align::Right},
           {"Idle", Align::Right},
           {"Host wait", Align::Right},
           {"Kernel wait", Align::Right},
           {"Comm||compute", Align::Right},
           {"of comm", Align::Right}});
  auto row = [&](const std::string& rank, const std::string& dev, const GpuBreakdown& g) {
    double e = double(g.elapsed_ns());
    b.row({rank, dev, percent(double(g.compute_ns()), e), percent(double(g.communication_ns()), e),
           percent(double(g.memory_ns()), e), percent(double(g.idle_ns()), e), percent(double(g.host_wait_ns), e),
           percent(double(g.kernel_wait_ns), e), human_ns(g.overlap_ns()),
           percent(double(g.overlap_ns()), double(g.comm_total_ns()))});
  };
  size_t rows = 0;
  for (const FileSummary& f : m.files()) {
    for (const auto& a : f.activity) {
      row(rank_label(f.rank), std::to_string(a.device), a.timeline);
      ++rows;
    }
  }
  if (rows > 1) row("all", "", m.total_breakdown());
  b.print(stdout);

  Table c({{"Rank", Align::Right},
           {"Samples", Align::Right},
           {"Host CPU", Align::Right},
           {"Process CPU (of one core)", Align::Right}});
  for (const FileSummary& f : m.files()) {
    if (!f.cpu_samples) continue;
    double n = double(f.cpu_samples);
    c.row({rank_label(f.rank), human_count(f.cpu_samples),
           fmt::format("{:.1f}% of {} cores", double(f.cpu_total_util_sum) / 100.0 / n, f.cpu_cores),
           fmt::format("{:.1f}%", double(f.cpu_process_util_sum) / 100.0 / n)});
  }
  if (!c.empty()) {
    section("CPU utilisation (CPU samples, mean)");
    c.print(stdout);
  }
  print_cpu_counters(m);
}

// ---- host side -----------------------------------------------------------------------------------

void print_apis(const SummaryModel& m, size_t top) {
  std::vector<cutrace::ApiStat> as = m.apis();
  section("CUDA API calls (CPU time in the call)");
  if (as.empty()) {
    std::printf("  none\n");
    return;
  }
  Table t({{"API", Align::Left},
           {"Count", Align::Right},
           {"Total", Align::Right},
           {"Mean", Align::Right},
           {"Max", Align::Right}});
  cutrace::CpuTimeStat rest;
  for (size_t i = 0; i < as.size(); ++i) {
    if (i >= top) {
      rest.merge(as[i].time);
      continue;
    }
    t.row({as[i].name, human_count(as[i].time.count), human_ns(as[i].time.total_ns), human_ns(as[i].time.mean_ns()),
           human_ns(as[i].time.max_ns)});
  }
  if (as.size() > top) {
    t.row({fmt::format("(other {} APIs)", as.size() - top), human_count(rest.count), human_ns(rest.total_ns),
           human_ns(rest.mean_ns()), human_ns(rest.max_ns)});
  }
  t.print(stdout);
}

void print_syncs(const SummaryModel& m) {
  Table t({{"Kind", Align::Left},
           {"Count", Align::Right},
           {"Total", Align::Right},
           {"Mean", Align::Right},
           {"Max", Align::Right}});
  std::vector<size_t> kinds;
  for (size_t k = 0; k < SummaryModel::kSyncKinds; ++k) {
    if (m.sync_kind(k).count) kinds.push_back(k);
  }
  std::stable_sort(kinds.begin(), kinds.end(),
                   [&](size_t a, size_t b) { return m.sync_kind(a).total_ns > m.sync_kind(b).total_ns; });
  for (size_t k : kinds) {
    const cutrace::SyncStat& s = m.sync_kind(k);
    t.row({cutrace::sync_kind_name(uint8_t(k)), human_count(s.count), human_ns(s.total_ns), human_ns(s.mean_ns()),
           human_ns(s.max_ns)});
  }
  section("Synchronisation (CPU time blocked)");
  if (t.empty()) std::printf("  none\n");
  else t.print(stdout);
}

// Where the blocking calls come from: the call stacks recorded with CUTRACE_BACKTRACE.
void print_sync_sites(const SummaryModel& m) {
  constexpr size_t kFrames = 12;  // frames printed per site (the JSON has them all)
  std::vector<cutrace::SyncSite> sites = m.sync_sites();
  const cutrace::CpuTimeStat& none = m.sync_unattributed();
  section(fmt::format("Sync call sites (synchronisations and blocking copies by blocked CPU time; top {} of {})",
                      std::min(sites.size(), SummaryModel::kSyncSites), sites.size()));
  if (sites.empty()) std::printf("  no call stacks recorded (record with --backtrace sync or all)\n");
  for (size_t i = 0; i < sites.size() && i < SummaryModel::kSyncSites; ++i) {
    const cutrace::SyncSite& s = sites[i];
    std::string apis;
    for (const auto& [name, n] : s.apis) apis += fmt::format("{}{} x{}", apis.empty() ? "" : ", ", name, n);
    std::printf("  #%zu %s: %s calls, total %s, mean %s, max %s (%s)\n", i + 1,
                printable(cutrace::sync_site_label(s, m.options().py_skip)).c_str(), human_count(s.time.count).c_str(),
                human_ns(s.time.total_ns).c_str(), human_ns(s.time.mean_ns()).c_str(), human_ns(s.time.max_ns).c_str(),
                printable(apis).c_str());
    for (size_t k = 0; k < s.frames.size() && k < kFrames; ++k)
      std::printf("      %s\n", printable(cutrace::frame_text(s.frames[k])).c_str());
    if (s.frames.size() > kFrames) std::printf("      ... %zu more frames\n", s.frames.size() - kFrames);
  }
  if (none.count)
    std::printf("  blocking calls without a call stack: %s, total %s\n", human_count(none.count).c_str(),
                human_ns(none.total_ns).c_str());
  for (const std::string& p : m.symbol_problems()) std::printf("  note: symbols of %s\n", printable(p).c_str());
}

// Kernels by the Python line that launched them (stacks of launches: --python-stacks launch).
void print_py_call_sites(const SummaryModel& m) {
  constexpr size_t kRows = 15;
  std::vector<cutrace::PyCallSite> sites = m.py_call_sites();
  if (sites.empty()) return;  // no launch had Python frames
  section(fmt::format("GPU time by Python call site (innermost frame outside {}; top {} of {})", m.options().py_skip,
                      std::min(sites.size(), kRows), sites.size()));
  Table t({{"Call site", Align::Left},
           {"Kernels", Align::Right},
           {"Timed", Align::Right},
           {"GPU time", Align::Right},
           {"Mean", Align::Right}});
  for (size_t i = 0; i < sites.size() && i < kRows; ++i) {
    const cutrace::PyCallSite& s = sites[i];
    t.row({ellipsize(printable(s.label)), human_count(s.count), human_count(s.timed), human_ns(s.gpu_ns),
           human_ns(s.timed ? s.gpu_ns / int64_t(s.timed) : 0)});
  }
  t.print(stdout);
}

std::vector<std::string> range_row(const std::string& name, const cutrace::RangeStat& r, bool exact_stats) {
  bool gpu = r.gpu.n != 0;
  return {ellipsize(name),
          r.open ? fmt::format("{} (+{} open)", human_count(r.count), human_count(r.open)) : human_count(r.count),
          human_ns(r.cpu.sum),
          human_ns(r.cpu.mean()),
          exact_stats ? human_ns(r.cpu.median()) : "",
          human_ns(r.cpu.min),
          human_ns(r.cpu.max),
          exact_stats ? human_ns(r.cpu.stddev()) : "",
          gpu ? human_ns(r.gpu.sum) : "-",
          gpu ? human_ns(r.gpu.mean()) : "-",
          gpu && exact_stats ? human_ns(r.gpu.median()) : (gpu ? "" : "-"),
          human_count(r.gpu_ops)};
}

// An empty name reads "" rather than a blank cell.
std::string name_label(const std::string& name) { return name.empty() ? "\"\"" : name; }

// Ranges of a non-default NVTX domain read "domain: name".
std::string range_label(const cutrace::RangeSummary& g) {
  return g.domain.empty() ? name_label(g.name) : g.domain + ": " + name_label(g.name);
}

void print_ranges(const SummaryModel& m, size_t top) {
  std::vector<cutrace::RangeSummary> names = m.ranges();
  cutrace::RangeStat all;
  for (const auto& g : names) all.merge(g.stat);
  section(fmt::format("NVTX ranges and annotations: {} ranges, {} names", human_count(all.count),
                      human_count(names.size())));
  // Names that differ only in their numbers share a row (`step_* (25)`); the JSON keeps each.
  std::vector<cutrace::RangeGroup> rs = cutrace::group_ranges(names);
  if (!rs.empty()) {
    std::printf("  (CPU: range open to close; GPU: first start to last end of the GPU work launched inside)\n");
    if (rs.size() < names.size())
      std::printf("  (names that differ only in their numbers share a row: pattern (names))\n");
    Table t({{"Name", Align::Left},
             {"Count", Align::Right},
             {"CPU total", Align::Right},
             {"CPU mean", Align::Right},
             {"CPU median", Align::Right},
             {"CPU min", Align::Right},
             {"CPU max", Align::Right},
             {"CPU stddev", Align::Right},
             {"GPU total", Align::Right},
             {"GPU mean", Align::Right},
             {"GPU median", Align::Right},
             {"GPU ops", Align::Right}});
    for (size_t i = 0; i < rs.size() && i < top; ++i)
      t.row(range_row(range_label(rs[i].range), rs[i].range.stat, true));
    if (rs.size() > top) {
      cutrace::RangeStat rest;
      size_t rest_names = 0;
      for (size_t i = top; i < rs.size(); ++i) rest.merge(rs[i].range.stat), rest_names += rs[i].names;
      t.row(range_row(fmt::format("(other {} names)", rest_names), rest, false));
    }
    t.print(stdout);
  }
  std::vector<std::pair<std::string, uint64_t>> marks = m.marks();
  if (marks.empty()) return;
  uint64_t n = 0;
  for (const auto& mk : marks) n += mk.second;
  section(fmt::format("Marks: {}, {} names", human_count(n), human_count(marks.size())));
  Table t({{"Name", Align::Left}, {"Count", Align::Right}});
  uint64_t rest = 0;
  for (size_t i = 0; i < marks.size(); ++i) {
    if (i >= top) {
      rest += marks[i].second;
      continue;
    }
    t.row({ellipsize(name_label(marks[i].first)), human_count(marks[i].second)});
  }
  if (marks.size() > top) t.row({fmt::format("(other {} names)", marks.size() - top), human_count(rest)});
  t.print(stdout);
}

void print_steps(const SummaryModel& m) {
  const cutrace::StepStats& s = m.steps();
  section(fmt::format("Steps ({}): {}", m.step_source(), human_count(s.cpu.n)));
  if (s.cpu.n == 0) {
    std::printf(
        "  none: no range matches the step pattern (--step-pattern GLOB), or steps are\n"
        "  delimited by synchronisations (--step-sync context|stream|event)\n");
    return;
  }
  Table t({{"", Align::Left},
           {"Count", Align::Right},
           {"Mean", Align::Right},
           {"Median", Align::Right},
           {"P90", Align::Right},
           {"Min", Align::Right},
           {"Max", Align::Right},
           {"StdDev", Align::Right}});
  t.row({"CPU (wall)", human_count(s.cpu.n), human_ns(s.cpu.mean()), human_ns(s.cpu_percentile(0.5)),
         human_ns(s.cpu_percentile(0.9)), human_ns(s.cpu.min), human_ns(s.cpu.max), human_ns(s.cpu.stddev())});
  if (s.gpu.n) {
    t.row({"GPU (span)", human_count(s.gpu.n), human_ns(s.gpu.mean()), human_ns(s.gpu_percentile(0.5)),
           human_ns(s.gpu_percentile(0.9)), human_ns(s.gpu.min), human_ns(s.gpu.max), human_ns(s.gpu.stddev())});
  }
  t.print(stdout);
  std::vector<cutrace::HistBin> bins = s.bins(false);
  uint64_t most = 0;
  for (const auto& b : bins) most = std::max(most, b.count);
  std::printf("\n  Step time (CPU) distribution%s\n", s.exact ? "" : " (from the log histogram)");
  Table h({{"From", Align::Right}, {"To", Align::Right}, {"Steps", Align::Right}, {"", Align::Left}});
  for (const auto& b : bins) {
    h.row({human_ns(b.lo_ns), human_ns(b.hi_ns), human_count(b.count), cutrace::tools::bar(b.count, most, 40)});
  }
  h.print(stdout);
}

// One row per capture window, when a file has more than one (--capture-repeat, cudaProfilerApi,
// manual): how the job changed over the run. More than `top` windows in a file: evenly spaced ones.
void print_windows(const SummaryModel& m, size_t top) {
  const auto& files = m.files();
  if (std::none_of(files.begin(), files.end(), [](const FileSummary& f) { return f.windows.size() > 1; })) return;
  section("Capture windows");
  bool ranks = files.size() > 1;
  std::vector<Table::Column> cols;
  if (ranks) cols.push_back({"Rank", Align::Right});
  for (const char* c : {"Window", "Start", "Length", "Steps", "Step median", "Step mean", "Kernels", "Kernel time"})
    cols.push_back({c, Align::Right});
  Table t(cols);
  std::vector<std::string> notes;
  for (const FileSummary& f : files) {
    size_t n = f.windows.size();
    if (n == 0) continue;
    size_t shown = std::min(n, top);
    int64_t t0 = f.windows[0].begin_ns;
    for (size_t k = 0; k < shown; ++k) {
      // Evenly spaced when not all fit: the first, the last, and between (one row: the first).
      const cutrace::WindowSummary& w = f.windows[shown == n ? k : shown == 1 ? 0 : k * (n - 1) / (shown - 1)];
      std::vector<std::string> row;
      if (ranks) row.push_back(rank_label(f.rank));
      bool steps = w.steps.n != 0;
      row.insert(row.end(), {std::to_string(w.index), human_ns(cutrace::sat_sub(w.begin_ns, t0)),
                             w.end_ns >= 0 ? human_ns(cutrace::sat_sub(w.end_ns, w.begin_ns)) : "(open)",
                             human_count(w.steps.n), steps ? human_ns(w.steps.median()) : "-",
                             steps ? human_ns(w.steps.mean()) : "-", human_count(w.kernels), human_ns(w.kernel_ns)});
      t.row(row);
    }
    if (shown < n)
      notes.push_back(fmt::format("{} windows{}: {} shown, evenly spaced (--top N for more)", n,
                                  ranks ? " of rank " + rank_label(f.rank) : "", shown));
    if (f.windows_beyond)
      notes.push_back(fmt::format("{} more windows{} not tabled (over {})", f.windows_beyond,
                                  ranks ? " of rank " + rank_label(f.rank) : "", FileSummary::kMaxWindows));
  }
  t.print(stdout);
  for (const std::string& n : notes) std::printf("  %s\n", n.c_str());
}

// With collectives, the straggler they name is starred (step times are equal across ranks that
// synchronise); without, the slowest rank by the summary model's criterion.
void print_ranks(const SummaryModel& m, const cutrace::StragglerReport& strag) {
  if (m.files().size() < 2) return;
  std::string criterion;
  int slow = m.slowest_file(&criterion);
  if (strag.analysed) {
    slow = -1;
    for (size_t i = 0; i < m.files().size() && strag.straggler >= 0; ++i)
      if (m.files()[i].file == strag.ranks[size_t(strag.straggler)].file) slow = int(i);
    section(slow >= 0 ? std::string("Per-rank comparison (* the straggler, from the collectives: see Stragglers)")
                      : std::string("Per-rank comparison (no straggler, from the collectives: see Stragglers)"));
  } else {
    section(fmt::format("Per-rank comparison (* slowest by {})", criterion));
  }
  Table t({{"Rank", Align::Right},
           {"Steps", Align::Right},
           {"Step mean", Align::Right},
           {"Step median", Align::Right},
           {"Kernels", Align::Right},
           {"Kernel time", Align::Right},
           {"Comm time", Align::Right},
           {"Compute time", Align::Right},
           {"GPU busy", Align::Right},
           {"Idle", Align::Right},
           {"", Align::Left}});
  for (size_t i = 0; i < m.files().size(); ++i) {
    const FileSummary& f = m.files()[i];
    GpuBreakdown b;
    for (const auto& a : f.activity) b.merge(a.timeline);
    bool steps = f.steps.cpu.n != 0;
    t.row({rank_label(f.rank), human_count(f.steps.cpu.n), steps ? human_ns(f.steps.cpu.mean()) : "-",
           steps ? human_ns(f.steps.cpu_percentile(0.5)) : "-", human_count(f.kernels), human_ns(f.kernel_ns),
           human_ns(f.comm_kernel_ns), human_ns(f.kernel_ns - f.comm_kernel_ns), human_ns(b.busy_ns()),
           percent(double(b.idle_ns()), double(b.elapsed_ns())), int(i) == slow ? "*" : ""});
  }
  t.print(stdout);
}

// First: a trace that is missing records says so, and which counts below are lower bounds.
void print_losses(const SummaryModel& m) {
  cutrace::tools::LossFacts all = m.losses();
  if (!all.dropped) return;
  std::printf("WARNING: incomplete capture: %s\n", cutrace::tools::loss_sentence(all).c_str());
  if (std::string kinds = cutrace::tools::loss_kinds_text(all); !kinds.empty())
    std::printf("  missing: %s; counts and totals marked '>=' below are lower bounds\n", kinds.c_str());
  else std::printf("  counts and totals below are lower bounds\n");
  for (const FileSummary& f : m.files())
    if (f.losses.dropped && m.files().size() > 1)
      std::printf("  rank %s: %s\n", rank_label(f.rank).c_str(), cutrace::tools::loss_sentence(f.losses).c_str());
  std::printf("\n");
}

void print_text(const SummaryModel& m, size_t top, const cutrace::StragglerReport& strag) {
  print_losses(m);
  print_files(m);
  print_kernels(m, top);
  print_precision(m);
  print_launches(m);
  print_copies(m);
  print_activity(m);
  print_apis(m, top);
  print_syncs(m);
  print_sync_sites(m);
  print_py_call_sites(m);
  print_ranges(m, top);
  print_steps(m);
  print_windows(m, top);
  print_ranks(m, strag);
  if (m.files().size() > 1) {
    section(
        "Stragglers (the last rank to arrive at a collective makes the others wait; its NCCL kernel is the shortest)");
    cutrace::print_stragglers(strag, stdout);
  }
  std::printf("\nRecords %s   API errors %s   dropped records %s", human_count(m.records()).c_str(),
              human_count(m.api_errors()).c_str(), human_count(m.dropped_records()).c_str());
  if (m.captured_ops()) {
    std::printf("   ops captured into graphs %s", human_count(m.captured_ops()).c_str());
  }
  if (m.pending_ops() || m.open_syncs()) {
    std::printf(
        "\nPending at exit: %s GPU operations launched and not complete, %s synchronisations blocked "
        "(in no time statistic; `cutrace dump` lists them)",
        human_count(m.pending_ops()).c_str(), human_count(m.open_syncs()).c_str());
  }
  if (m.graph_replays()) {
    std::printf("\nCUDA graph replays %s, shown as their %s kernels", human_count(m.graph_replays()).c_str(),
                human_count(m.graph_kernels()).c_str());
  }
  std::printf("\n");
}

int run(const Options& o) {
  cutrace::SummaryOptions so;
  if (o.rank >= 0) so.rank = o.rank;
  if (o.window >= 0) so.window = uint32_t(o.window);
  // A plain number is ns on each file's clock; with a unit (5s, 120ms) it counts from the
  // file's capture start. One of each kind cannot be mixed.
  auto with_unit = [](const std::string& t) {
    return !t.empty() && !std::isdigit(static_cast<unsigned char>(t.back()));
  };
  for (const auto& [text, ns, name] :
       {std::tuple{&o.from, &so.from_ns, "--from"}, std::tuple{&o.to, &so.to_ns, "--to"}}) {
    if (text->empty()) continue;
    if (!cutrace::tools::parse_duration(*text, ns)) {
      std::fprintf(stderr,
                   "cutrace summary: %s %s: expected ns of the trace's clock or a time from its start (5s, 120ms)\n",
                   name, text->c_str());
      return 2;
    }
  }
  so.relative = with_unit(o.from) || with_unit(o.to);
  if (!o.from.empty() && !o.to.empty() && with_unit(o.from) != with_unit(o.to)) {
    std::fprintf(stderr, "cutrace summary: --from %s and --to %s: both absolute ns or both times from the start\n",
                 o.from.c_str(), o.to.c_str());
    return 2;
  }
  so.step_pattern = o.step_pattern;
  so.py_skip = o.py_skip;
  if (!o.step_sync.empty()) {
    static const std::pair<const char*, cutrace::trace::SyncKind> kinds[] = {
        {"context", cutrace::trace::SyncKind::Context},
        {"stream", cutrace::trace::SyncKind::Stream},
        {"event", cutrace::trace::SyncKind::Event}};
    for (const auto& [name, kind] : kinds) {
      if (o.step_sync == name) so.step_sync = uint8_t(kind);
    }
  }
  cutrace::TraceSet set(o.path);
  SummaryModel model(so);
  bool read_errors = false;
  size_t opened = set.for_each([&](cutrace::TraceReader& r) {
    if (!model.add(r)) {
      std::fprintf(stderr, "cutrace: %s: %s\n", printable(r.path()).c_str(), printable(r.error()).c_str());
      read_errors = true;
    }
  });
  for (const std::string& e : set.errors()) std::fprintf(stderr, "cutrace: %s\n", printable(e).c_str());
  if (opened == 0) return 1;
  // Stragglers: over the whole traces of a job (not with --rank, which keeps one).
  cutrace::StragglerReport strag;
  strag.why_not = "one rank";
  if (set.files().size() > 1 && !so.rank) {
    cutrace::AlignOptions ao;
    ao.step_pattern = so.step_pattern;
    std::vector<cutrace::RankProfile> profiles;
    cutrace::Alignment a = cutrace::align_traces(set.files(), ao, &profiles);
    strag = cutrace::find_stragglers(profiles, a);
  }
  // Names are the profiled program's bytes: invalid UTF-8 becomes U+FFFD instead of an exception.
  auto replace = nlohmann::json::error_handler_t::replace;
  if (o.json) {
    nlohmann::ordered_json j = model.to_json();
    j["stragglers"] = model.files().size() > 1 ? cutrace::straggler_json(strag) : nlohmann::ordered_json();
    j["unreadable"] = unreadable_json(set);
    std::printf("%s\n", j.dump(2, ' ', false, replace).c_str());
  } else {
    print_text(model, o.top, strag);
    for (const auto& [file, why] : set.unreadable())
      std::printf("Unreadable, not counted: %s: %s\n", printable(file).c_str(), printable(why).c_str());
  }
  return set.errors().empty() && !read_errors ? 0 : 1;
}

}  // namespace

void add_summary_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("summary", "Summarise the traces of a run (DIR) or one FILE");
  sub->add_option("path", o->path, "trace directory or .cutrace file")->required();
  sub->add_flag("--json", o->json, "print the documented JSON document (docs/SUMMARY.md) instead of tables");
  sub->add_option("--top", o->top, "rows listed in each table before the rest are summed (default 20)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--rank", o->rank, "only the trace(s) of this rank")->check(CLI::NonNegativeNumber);
  sub->add_option("--window", o->window, "only capture window W (its Window records' begin..end)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--from", o->from,
                  "only records from this time (by cpu_begin): ns of the file's CLOCK_MONOTONIC, or a time from "
                  "each file's capture start such as 5s or 120ms");
  sub->add_option("--to", o->to, "only records up to this time (inclusive), as --from");
  auto* pattern = sub->add_option("--step-pattern", o->step_pattern,
                                  "ranges that are training steps: globs separated by '|' "
                                  "(default 'step_[0-9]*|ProfilerStep#[0-9]*')");
  sub->add_option("--step-sync", o->step_sync,
                  "steps are the intervals between consecutive synchronisations of this kind")
      ->check(CLI::IsMember({"context", "stream", "event"}))
      ->excludes(pattern);
  sub->add_option("--python-skip", o->py_skip,
                  "packages whose Python frames are not call sites, comma-separated path components; "
                  "'stdlib' is the standard library (default torch,triton,jax,stdlib)");
  sub->callback([o] {
    if (int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}
