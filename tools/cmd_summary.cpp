// `cutrace summary DIR|FILE [--json] [--top N]`: where the GPU time went, across every trace of
// a run. The aggregation is tools/summary_model; this file only renders it.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include "tools/commands.h"
#include "tools/format_util.h"
#include "tools/summary_model.h"

namespace {

using cutrace::SummaryModel;
using cutrace::tools::Align;
using cutrace::tools::human_bytes;
using cutrace::tools::human_count;
using cutrace::tools::human_ns;
using cutrace::tools::Table;

constexpr size_t kNameWidth = 80;

struct Options {
  std::string path;
  bool json = false;
  size_t top = 20;
};

std::string device_line(const cutrace::DeviceInfo& d) {
  return fmt::format("{}: {} (sm_{}{}, {} SMs, {})", d.device, d.name, d.cc_major, d.cc_minor,
                     d.sm_count, human_bytes(d.total_mem));
}

std::string status_line(const cutrace::FileSummary& f) {
  const cutrace::ReadStatus& s = f.status;
  std::string out = s.complete ? "complete" : "truncated (no End record)";
  out += fmt::format(", blocks {}", human_count(s.blocks));
  if (s.bad_blocks) out += fmt::format(", bad blocks skipped {}", s.bad_blocks);
  if (s.missing_blocks) out += fmt::format(", blocks missing {}", s.missing_blocks);
  if (f.read_error) out += ", read error";
  return out + fmt::format(", dropped records {}", human_count(f.dropped));
}

void print_files(const SummaryModel& m) {
  for (const cutrace::FileSummary& f : m.files()) {
    std::printf("%s\n", f.file.c_str());
    std::string rank = f.rank < 0 ? "-" : std::to_string(f.rank);
    if (f.world_size > 0) rank += fmt::format(" of {}", f.world_size);
    if (f.local_rank >= 0) rank += fmt::format(" (local {})", f.local_rank);
    std::printf("  host %s   rank %s   pid %lld   format %s\n",
                f.host.empty() ? "-" : f.host.c_str(), rank.c_str(),
                static_cast<long long>(f.pid), f.version.c_str());
    std::printf("  cmdline  %s\n", f.cmdline.empty() ? "-" : cutrace::tools::ellipsize(f.cmdline, 200).c_str());
    for (const auto& d : f.devices) std::printf("  device   %s\n", device_line(d).c_str());
    std::printf("  status   %s\n", status_line(f).c_str());
  }
}

std::vector<std::string> kernel_row(const std::string& name, const cutrace::TimeStat& t,
                                    int64_t all_ns) {
  return {cutrace::tools::ellipsize(name, kNameWidth),
          human_count(t.count),
          human_ns(t.total_ns),
          human_ns(t.mean_ns()),
          human_ns(t.min_ns),
          human_ns(t.max_ns),
          cutrace::tools::percent(double(t.total_ns), double(all_ns)),
          t.untimed ? human_count(t.untimed) : ""};
}

void print_kernels(const SummaryModel& m, size_t top) {
  std::vector<cutrace::KernelStat> ks = m.kernels();
  cutrace::TimeStat all;
  for (const auto& k : ks) all.merge(k.time);
  std::printf("\nKernels: %s launches, %s GPU time, %s names\n", human_count(all.count).c_str(),
              human_ns(all.total_ns).c_str(), human_count(ks.size()).c_str());
  if (ks.empty()) return;
  Table t({{"Name", Align::Left},
           {"Count", Align::Right},
           {"Total", Align::Right},
           {"Mean", Align::Right},
           {"Min", Align::Right},
           {"Max", Align::Right},
           {"Time%", Align::Right},
           {"Untimed", Align::Right}});
  for (size_t i = 0; i < ks.size() && i < top; ++i) {
    t.row(kernel_row(ks[i].name, ks[i].time, all.total_ns));
  }
  if (ks.size() > top) {
    cutrace::TimeStat rest;
    for (size_t i = top; i < ks.size(); ++i) rest.merge(ks[i].time);
    t.row(kernel_row(fmt::format("(other {} names)", ks.size() - top), rest, all.total_ns));
  }
  t.print(stdout);
}

std::vector<std::string> copy_row(const std::string& kind, const cutrace::CopyStat& c) {
  return {kind,
          human_count(c.time.count),
          human_bytes(c.bytes),
          human_ns(c.time.total_ns),
          cutrace::tools::human_rate(c.timed_bytes, c.time.total_ns),
          c.time.untimed ? human_count(c.time.untimed) : ""};
}

void print_copies(const SummaryModel& m) {
  Table t({{"Kind", Align::Left},
           {"Count", Align::Right},
           {"Bytes", Align::Right},
           {"Total", Align::Right},
           {"Bandwidth", Align::Right},
           {"Untimed", Align::Right}});
  std::vector<std::pair<std::string, const cutrace::CopyStat*>> rows;
  for (size_t k = 0; k < SummaryModel::kCopyKinds; ++k) {
    const cutrace::CopyStat& c = m.memcpy_kind(k);
    if (c.time.count) rows.emplace_back(cutrace::copy_kind_name(uint8_t(k)), &c);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second->time.total_ns > b.second->time.total_ns;
  });
  for (const auto& [kind, c] : rows) t.row(copy_row("memcpy " + kind, *c));
  if (m.memsets().time.count) t.row(copy_row("memset", m.memsets()));
  std::printf("\nMemory copies and sets (GPU time)\n");
  if (t.empty()) std::printf("  none\n");
  else t.print(stdout);
}

void print_syncs(const SummaryModel& m) {
  Table t({{"Kind", Align::Left},
           {"Count", Align::Right},
           {"Total", Align::Right},
           {"Mean", Align::Right}});
  std::vector<size_t> kinds;
  for (size_t k = 0; k < SummaryModel::kSyncKinds; ++k) {
    if (m.sync_kind(k).count) kinds.push_back(k);
  }
  std::stable_sort(kinds.begin(), kinds.end(), [&](size_t a, size_t b) {
    return m.sync_kind(a).total_ns > m.sync_kind(b).total_ns;
  });
  for (size_t k : kinds) {
    const cutrace::SyncStat& s = m.sync_kind(k);
    t.row({cutrace::sync_kind_name(uint8_t(k)), human_count(s.count), human_ns(s.total_ns),
           human_ns(s.total_ns / int64_t(s.count))});
  }
  std::printf("\nSynchronisation (CPU time blocked)\n");
  if (t.empty()) std::printf("  none\n");
  else t.print(stdout);
}

std::vector<std::string> range_row(const std::string& name, const cutrace::RangeStat& r) {
  bool gpu = r.gpu_count != 0;
  return {cutrace::tools::ellipsize(name, kNameWidth),
          human_count(r.count),
          human_ns(r.cpu_total_ns),
          human_ns(r.cpu_mean_ns()),
          human_ns(r.cpu_min_ns),
          human_ns(r.cpu_max_ns),
          gpu ? human_ns(r.gpu_total_ns) : "-",
          gpu ? human_ns(r.gpu_mean_ns()) : "-",
          human_count(r.gpu_ops)};
}

// An empty name reads "" rather than a blank cell.
std::string name_label(const std::string& name) { return name.empty() ? "\"\"" : name; }

// Ranges of a non-default NVTX domain read "domain: name".
std::string range_label(const cutrace::RangeSummary& g) {
  return g.domain.empty() ? name_label(g.name) : g.domain + ": " + name_label(g.name);
}

void print_ranges(const SummaryModel& m, size_t top) {
  std::vector<cutrace::RangeSummary> rs = m.ranges();
  cutrace::RangeStat all;
  for (const auto& g : rs) all.merge(g.stat);
  std::printf("\nNVTX ranges and annotations: %s ranges, %s names\n",
              human_count(all.count).c_str(), human_count(rs.size()).c_str());
  if (!rs.empty()) {
    std::printf("  (CPU: range open to close; GPU: first start to last end of the GPU work "
                "launched inside)\n");
    Table t({{"Name", Align::Left},
             {"Count", Align::Right},
             {"CPU total", Align::Right},
             {"CPU mean", Align::Right},
             {"CPU min", Align::Right},
             {"CPU max", Align::Right},
             {"GPU total", Align::Right},
             {"GPU mean", Align::Right},
             {"GPU ops", Align::Right}});
    for (size_t i = 0; i < rs.size() && i < top; ++i) t.row(range_row(range_label(rs[i]), rs[i].stat));
    if (rs.size() > top) {
      cutrace::RangeStat rest;
      for (size_t i = top; i < rs.size(); ++i) rest.merge(rs[i].stat);
      t.row(range_row(fmt::format("(other {} names)", rs.size() - top), rest));
    }
    t.print(stdout);
  }
  std::vector<std::pair<std::string, uint64_t>> marks = m.marks();
  if (marks.empty()) return;
  uint64_t n = 0;
  for (const auto& mk : marks) n += mk.second;
  std::printf("\nMarks: %s, %s names\n", human_count(n).c_str(), human_count(marks.size()).c_str());
  Table t({{"Name", Align::Left}, {"Count", Align::Right}});
  uint64_t rest = 0;
  for (size_t i = 0; i < marks.size(); ++i) {
    if (i >= top) {
      rest += marks[i].second;
      continue;
    }
    t.row({cutrace::tools::ellipsize(name_label(marks[i].first), kNameWidth),
           human_count(marks[i].second)});
  }
  if (marks.size() > top) t.row({fmt::format("(other {} names)", marks.size() - top), human_count(rest)});
  t.print(stdout);
}

void print_text(const SummaryModel& m, size_t top) {
  print_files(m);
  print_kernels(m, top);
  print_copies(m);
  print_syncs(m);
  print_ranges(m, top);
  std::printf("\nRecords %s   API errors %s   dropped records %s", human_count(m.records()).c_str(),
              human_count(m.api_errors()).c_str(), human_count(m.dropped_records()).c_str());
  if (m.captured_ops()) {
    std::printf("   ops captured into graphs %s", human_count(m.captured_ops()).c_str());
  }
  std::printf("\n");
}

int run(const Options& o) {
  cutrace::TraceSet set(o.path);
  SummaryModel model;
  bool read_errors = false;
  size_t opened = set.for_each([&](cutrace::TraceReader& r) {
    if (!model.add(r)) {
      std::fprintf(stderr, "cutrace: %s: %s\n", r.path().c_str(), r.error().c_str());
      read_errors = true;
    }
  });
  for (const std::string& e : set.errors()) std::fprintf(stderr, "cutrace: %s\n", e.c_str());
  if (opened == 0) return 1;
  if (o.json) std::printf("%s\n", model.to_json().dump(2).c_str());
  else print_text(model, o.top);
  return set.errors().empty() && !read_errors ? 0 : 1;
}

}  // namespace

void add_summary_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("summary", "Summarise the traces of a run (DIR) or one FILE");
  sub->add_option("path", o->path, "trace directory or .cutrace file")->required();
  sub->add_flag("--json", o->json, "print the documented JSON document instead of tables");
  sub->add_option("--top", o->top, "kernel, range and mark names listed before the rest are summed (default 20)")
      ->check(CLI::PositiveNumber);
  sub->callback([o] {
    if (int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}
