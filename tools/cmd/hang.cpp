// cutrace hang DIR [--json]: compares the ranks' traces (live or finished) after a hang: the
// collective the ranks wait in, the ranks that never reached it and what each was doing instead
// (tools/analysis/hang.h). The hang reports the watchdog wrote (DIR/hang.*.txt) are listed.
#include <dirent.h>
#include <sys/stat.h>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tools/analysis/hang.h"
#include "tools/analysis/runs.h"
#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"
#include "trace/reader.h"

namespace {

using cutrace::HangOpInfo;
using cutrace::RankHang;
using Json = nlohmann::ordered_json;
namespace t = cutrace::tools;

std::vector<std::string> hang_reports(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("hang.", 0) == 0 && n.size() > 9 && n.compare(n.size() - 4, 4, ".txt") == 0)
        out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string at(const RankHang& r, int64_t ns) {
  char b[48];
  snprintf(b, sizeof b, "+%.3f s", double(ns - r.origin) / 1e9);
  return b;
}

Json op_json(const RankHang& r, const HangOpInfo& op) {
  Json j = {{"kind", op.kind},     {"name", op.name}, {"corr", op.corr},
            {"stream", op.stream}, {"tid", op.tid},   {"launch_ns", op.begin - r.origin}};
  if (op.seq) j["collective_seq"] = op.seq;
  j["stack"] = op.frames;
  return j;
}

Json rank_json(const RankHang& r) {
  Json j = {{"rank", r.rank},
            {"host", r.host},
            {"pid", r.pid},
            {"file", r.file},
            {"complete", r.complete},
            {"hangs", r.hangs},
            {"hangs_over", r.hangs_over},
            {"collectives_launched", r.collectives},
            {"collectives_complete", r.collectives_complete}};
  j["waiting_in"] = r.waiting_seq ? Json{{"seq", r.waiting_seq}, {"name", r.waiting_name}} : Json(nullptr);
  j["in_flight"] = Json::array();
  for (const HangOpInfo& op : r.in_flight) j["in_flight"].push_back(op_json(r, op));
  j["blocked"] = Json::array();
  for (const auto& s : r.blocked)
    j["blocked"].push_back({{"tid", s.tid}, {"api", s.api}, {"stream", s.stream}, {"since_ns", s.begin - r.origin}});
  j["open_ranges"] = Json::array();
  for (const auto& g : r.open_ranges)
    j["open_ranges"].push_back({{"tid", g.tid}, {"name", g.name}, {"begin_ns", g.begin - r.origin}});
  j["last_ops"] = Json::array();
  for (const HangOpInfo& op : r.last_ops) j["last_ops"].push_back(op_json(r, op));
  return j;
}

void print_doing(const RankHang& r) {
  if (!r.open_ranges.empty()) {
    std::printf("    open NVTX ranges:");
    uint32_t tid = 0;
    for (size_t i = 0; i < r.open_ranges.size(); ++i) {
      const auto& g = r.open_ranges[i];
      if (i == 0 || g.tid != tid) std::printf("%s tid %u: ", i ? ";" : "", g.tid);
      else std::printf(" > ");
      std::printf("%s (since %s)", t::printable(g.name).c_str(), at(r, g.begin).c_str());
      tid = g.tid;
    }
    std::printf("\n");
  }
  for (const auto& s : r.blocked)
    std::printf("    blocked: tid %u in %s%s since %s\n", s.tid, s.api.c_str(),
                s.stream ? (" on stream " + std::to_string(s.stream)).c_str() : "", at(r, s.begin).c_str());
  for (const HangOpInfo& op : r.in_flight) {
    std::printf("    in flight: %s %s on stream %u, launched at %s by tid %u\n", op.kind.c_str(),
                t::printable(op.name).c_str(), op.stream, at(r, op.begin).c_str(), op.tid);
    for (size_t i = 0; i < op.frames.size() && i < 6; ++i)
      std::printf("      %s %s\n", i ? "  " : "at", t::printable(op.frames[i]).c_str());
  }
  if (r.open_ranges.empty() && r.blocked.empty() && r.in_flight.empty())
    std::printf("    no open range, blocked thread or GPU work in flight%s\n",
                r.complete ? "" : " in what its trace holds so far (open ranges are written when the process ends)");
  for (const HangOpInfo& op : r.last_ops)
    std::printf("    last ops: %s %s on stream %u, launched at %s\n", op.kind.c_str(), t::printable(op.name).c_str(),
                op.stream, at(r, op.begin).c_str());
}

int run_hang(const std::string& dir, bool json) {
  std::vector<std::string> files = cutrace::list_trace_files(dir);
  if (files.empty()) {
    std::fprintf(stderr, "cutrace hang: no trace files in %s\n", t::printable(dir).c_str());
    return 2;
  }
  std::vector<RankHang> ranks;
  std::vector<std::string> problems;
  int64_t world = -1;
  for (const std::string& f : files) {
    cutrace::TraceReader r;
    std::string err;
    if (!r.open(f, &err)) {
      problems.push_back(t::printable(f) + ": " + err);
      continue;
    }
    world = std::max(world, cutrace::runs::identify(r).world_size);
    RankHang h;
    if (!cutrace::read_rank_hang(r, &h, &err)) problems.push_back(t::printable(f) + ": " + err);
    ranks.push_back(std::move(h));
  }
  std::sort(ranks.begin(), ranks.end(), [](const RankHang& a, const RankHang& b) { return a.rank < b.rank; });
  cutrace::HangVerdict v = cutrace::judge_hang(ranks, world);
  std::vector<std::string> reports = hang_reports(dir);
  if (json) {
    Json j;
    j["verdict"] = v.text;
    j["collective"] = v.seq ? Json{{"seq", v.seq}, {"name", v.collective}} : Json(nullptr);
    j["waiting"] = Json::array();
    for (size_t i : v.waiting) j["waiting"].push_back(ranks[i].rank);
    j["culprits"] = Json::array();
    for (const auto& c : v.culprits)
      j["culprits"].push_back({{"rank", ranks[c.rank_index].rank}, {"reached", c.reached}});
    j["missing_ranks"] = v.missing_ranks;
    j["ranks"] = Json::array();
    for (const RankHang& r : ranks) j["ranks"].push_back(rank_json(r));
    j["reports"] = reports;
    j["problems"] = problems;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  uint32_t hangs = 0;
  for (const RankHang& r : ranks) hangs += r.hangs;
  std::printf("%zu rank%s, %u hang report%s: %s\n", ranks.size(), ranks.size() == 1 ? "" : "s", hangs,
              hangs == 1 ? "" : "s", v.text.c_str());
  for (size_t i : v.waiting) {
    const RankHang& r = ranks[i];
    std::printf("  rank %lld waits in collective #%llu %s (%llu complete before it)%s\n", (long long)r.rank,
                (unsigned long long)r.waiting_seq, t::printable(r.waiting_name).c_str(),
                (unsigned long long)r.collectives_complete, r.hangs ? "" : " (no hang reported by its watchdog)");
    for (const auto& s : r.blocked)
      std::printf("    blocked: tid %u in %s%s since %s\n", s.tid, s.api.c_str(),
                  s.stream ? (" on stream " + std::to_string(s.stream)).c_str() : "", at(r, s.begin).c_str());
  }
  for (const auto& c : v.culprits) {
    const RankHang& r = ranks[c.rank_index];
    std::printf("  culprit: rank %lld (pid %lld on %s) never reached collective #%llu: it launched %llu%s\n",
                (long long)r.rank, (long long)r.pid, t::printable(r.host).c_str(), (unsigned long long)v.seq,
                (unsigned long long)c.reached, r.complete ? "" : " (trace still being written)");
    std::printf("  what rank %lld was doing instead:\n", (long long)r.rank);
    print_doing(r);
  }
  for (int64_t k : v.missing_ranks)
    std::printf("  rank %lld: no trace in %s\n", (long long)k, t::printable(dir).c_str());
  if (v.culprits.empty())
    for (const RankHang& r : ranks)
      if (r.hangs || !r.in_flight.empty()) {
        std::printf("  rank %lld:\n", (long long)r.rank);
        print_doing(r);
      }
  for (const std::string& p : reports) std::printf("  report: %s\n", t::printable(p).c_str());
  for (const std::string& p : problems) std::printf("  could not read %s\n", p.c_str());
  return 0;
}

}  // namespace

void add_hang_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "hang", "After a hang: the collective the ranks wait in, the ranks that never reached it, what they did instead");
  sub->add_option("dir", *dir, "The job's output directory (cutrace record -o DIR), live or finished")->required();
  sub->add_flag("--json", *json, "One JSON document (docs/USAGE.md lists its keys)");
  sub->callback([dir, json] {
    if (int rc = run_hang(*dir, *json)) throw CLI::RuntimeError(rc);
  });
}
