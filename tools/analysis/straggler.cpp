#include "tools/analysis/straggler.h"

#include <algorithm>
#include <map>

#include "tools/analysis/summary_model.h"  // sat_add, sat_sub
#include "tools/common/format_util.h"

namespace cutrace {
namespace {

using tools::human_ns;

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string who(const RankLoad& r) {
  return "rank " + std::to_string(r.rank) + (r.host.empty() ? "" : " (" + r.host + ")");
}

// The other ranks' median of a per-rank figure (-1 values: not known, left out).
int64_t others_median(const std::vector<RankLoad>& ranks, size_t me, int64_t RankLoad::*field) {
  std::vector<int64_t> v;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (i != me && ranks[i].*field >= 0) v.push_back(ranks[i].*field);
  return v.empty() ? -1 : median(v);
}

std::string verdict(const StragglerReport& s) {
  if (!s.analysed) return "no straggler analysis: " + s.why_not;
  if (s.straggler < 0) {
    return ::fmt::format("no straggler: at {} collectives the ranks waited {} on average for the last to arrive",
                         s.instances, human_ns(s.instances ? s.waited_ns / int64_t(s.instances) : 0));
  }
  const size_t me = size_t(s.straggler);
  const RankLoad& r = s.ranks[me];
  std::string v = ::fmt::format(
      "{} is the straggler: the other ranks waited {} for it, at {} of {} collectives ({} a rank each time)", who(r),
      human_ns(r.waited_for_ns), r.last, s.instances, human_ns(r.waits ? r.waited_for_ns / int64_t(r.waits) : 0));
  int64_t host = others_median(s.ranks, me, &RankLoad::host_per_step_ns);
  int64_t compute = others_median(s.ranks, me, &RankLoad::compute_per_step_ns);
  if (r.host_per_step_ns >= 0 && host >= 0)
    v += ::fmt::format("; host time {} a step (others {})", human_ns(r.host_per_step_ns), human_ns(host));
  if (r.compute_per_step_ns >= 0 && compute >= 0)
    v += ::fmt::format(", compute {} a step (others {})", human_ns(r.compute_per_step_ns), human_ns(compute));
  if (!r.range.empty())
    v += ::fmt::format("; {} {} {} (others {})", r.range, human_ns(r.range_ns), s.per_step ? "a step" : "a call",
                       human_ns(r.range_others_ns));
  return v;
}

}  // namespace

StragglerReport find_stragglers(const std::vector<RankProfile>& ps, const Alignment& a) {
  StragglerReport s;
  for (size_t i = 0; i < ps.size(); ++i) {
    RankLoad r;
    r.rank = i < a.ranks.size() ? a.ranks[i].rank : int(std::max<int64_t>(ps[i].rank, 0));
    r.host = ps[i].host;
    r.file = ps[i].file;
    r.steps = ps[i].steps.size();
    if (r.steps) {
      r.compute_per_step_ns = ps[i].compute_ns / int64_t(r.steps);
      r.host_per_step_ns = std::max<int64_t>(0, sat_sub(ps[i].step_cpu_ns, ps[i].step_blocked_ns)) / int64_t(r.steps);
    }
    s.ranks.push_back(std::move(r));
  }
  if (ps.size() < 2) {
    s.why_not = "one rank";
  } else if (a.reference < 0) {
    s.why_not = "no NCCL collectives";
  } else {
    // Each instance: the last to arrive (shortest kernel) and how long the others waited for it.
    for (const std::vector<int32_t>& inst : a.instances) {
      if (inst.size() != ps.size()) break;
      size_t n = 0, last = 0;
      int64_t shortest = INT64_MAX;
      for (size_t i = 0; i < inst.size(); ++i) {
        if (inst[i] < 0) continue;
        int64_t d = ps[i].collectives[size_t(inst[i])].duration();
        ++n;
        ++s.ranks[i].collectives;
        if (d < shortest) shortest = d, last = i;
      }
      if (n < 2) {
        for (size_t i = 0; i < inst.size(); ++i) s.ranks[i].collectives -= inst[i] >= 0;
        continue;
      }
      ++s.instances;
      ++s.ranks[last].last;
      for (size_t i = 0; i < inst.size(); ++i) {
        if (inst[i] < 0 || i == last) continue;
        int64_t w = sat_sub(ps[i].collectives[size_t(inst[i])].duration(), shortest);
        s.ranks[last].waited_for_ns = sat_add(s.ranks[last].waited_for_ns, w);
        ++s.ranks[last].waits;
        s.waited_ns = sat_add(s.waited_ns, w);
      }
    }
    s.analysed = s.instances > 0;
    if (!s.analysed) s.why_not = "no collective matched across ranks (see the clock alignment's warnings)";
  }
  // The range that differs most from the other ranks'.
  for (const RankProfile& p : ps) s.per_step = s.per_step && !p.steps.empty();
  std::vector<std::map<std::string, int64_t>> per(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    for (const RangeTotal& t : ps[i].ranges) {
      uint64_t unit = s.per_step ? ps[i].steps.size() : t.count;
      if (unit) per[i][t.name] = t.cpu_ns / int64_t(unit);
    }
  }
  for (size_t i = 0; i < ps.size() && ps.size() > 1; ++i) {
    int64_t best = 0;
    for (const auto& [name, mine] : per[i]) {
      std::vector<int64_t> others;
      for (size_t o = 0; o < ps.size(); ++o) {
        if (o == i) continue;
        auto it = per[o].find(name);
        others.push_back(it == per[o].end() ? 0 : it->second);
      }
      int64_t m = median(others);
      if (sat_sub(mine, m) > best) {
        best = sat_sub(mine, m);
        s.ranks[i].range = name;
        s.ranks[i].range_ns = mine;
        s.ranks[i].range_others_ns = m;
      }
    }
  }
  if (s.analysed) {
    size_t top = 0;
    for (size_t i = 1; i < s.ranks.size(); ++i)
      if (s.ranks[i].waited_for_ns > s.ranks[top].waited_for_ns) top = i;
    int64_t second = 0;
    for (size_t i = 0; i < s.ranks.size(); ++i)
      if (i != top) second = std::max(second, s.ranks[i].waited_for_ns);
    const RankLoad& t = s.ranks[top];
    if (__int128(t.waited_for_ns) >= 2 * __int128(second) && t.last * 2 > s.instances &&
        t.waited_for_ns / int64_t(s.instances) >= StragglerReport::kMinWaitNs)
      s.straggler = int(top);
  }
  s.verdict = verdict(s);
  return s;
}

nlohmann::ordered_json straggler_json(const StragglerReport& s) {
  using J = nlohmann::ordered_json;
  J j;
  j["analysed"] = s.analysed;
  j["why_not"] = s.analysed ? J() : J(s.why_not);
  j["instances"] = s.instances;
  j["waited_ns"] = s.waited_ns;
  j["straggler_rank"] = s.straggler >= 0 ? J(s.ranks[size_t(s.straggler)].rank) : J();
  j["verdict"] = s.verdict;
  j["range_unit"] = s.per_step ? "step" : "call";
  J ranks = J::array();
  for (const RankLoad& r : s.ranks) {
    J range = r.range.empty() ? J() : J{{"name", r.range}, {"ns", r.range_ns}, {"others_ns", r.range_others_ns}};
    ranks.push_back({{"rank", r.rank},
                     {"host", r.host},
                     {"file", r.file},
                     {"collectives", r.collectives},
                     {"last_arrivals", r.last},
                     {"waited_for_ns", r.waited_for_ns},
                     {"steps", r.steps},
                     {"compute_per_step_ns", r.compute_per_step_ns >= 0 ? J(r.compute_per_step_ns) : J()},
                     {"host_per_step_ns", r.host_per_step_ns >= 0 ? J(r.host_per_step_ns) : J()},
                     {"range", range}});
  }
  j["ranks"] = ranks;
  return j;
}

void print_stragglers(const StragglerReport& s, std::FILE* out) {
  using tools::Align;
  if (s.analysed) {
    tools::Table t({{"Rank", Align::Right},
                    {"Last to arrive", Align::Right},
                    {"Others waited", Align::Right},
                    {"Host / step", Align::Right},
                    {"Compute / step", Align::Right},
                    {s.per_step ? "Range above the others (a step)" : "Range above the others (a call)", Align::Left}});
    for (const RankLoad& r : s.ranks) {
      t.row({std::to_string(r.rank), ::fmt::format("{} of {}", r.last, r.collectives), human_ns(r.waited_for_ns),
             r.host_per_step_ns >= 0 ? human_ns(r.host_per_step_ns) : "n/a",
             r.compute_per_step_ns >= 0 ? human_ns(r.compute_per_step_ns) : "n/a",
             r.range.empty()
                 ? "-"
                 : ::fmt::format("{} {} (others {})", r.range, human_ns(r.range_ns), human_ns(r.range_others_ns))});
    }
    t.print(out);
  }
  std::fprintf(out, "  %s\n", s.verdict.c_str());
}

}  // namespace cutrace
