#include "tools/analysis/align.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string_view>
#include <unordered_map>

#include "tools/analysis/runs.h"
#include "tools/analysis/summary_model.h"  // sat_add
#include "tools/common/format_util.h"
#include "trace/job_file.h"
#include "trace/reader.h"

namespace cutrace {
namespace {

using i128 = __int128;
constexpr size_t kMinPairs = 3;           // fewer matched collectives cannot show that they agree
constexpr double kAgreeShare = 0.8;       // of the matched that must end together
constexpr size_t kSampled = 256;          // collectives a correction is scored on
constexpr size_t kMaxCandidates = 20000;  // corrections scored (each sample proposes the true one)

// Times come from the files: a damaged one may hold any value. Differences are taken in 128
// bits and clamped, so that garbage gives garbage, never undefined behaviour.
int64_t clamp64(i128 v) { return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : int64_t(v); }
i128 mag(i128 v) { return v < 0 ? -v : v; }

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct Pair {
  int32_t ref = -1, other = -1;
  int64_t diff = 0;  // the correction this pair asks for
};

struct Match {
  bool found = false;  // an identity (by steps) or an unambiguous, agreeing correction (by times)
  int64_t correction = 0;
  std::vector<Pair> pairs;  // the agreeing pairs
  std::string by;           // "steps", "times"
  std::string note;         // why none was found
};

// A job's collective keys ("name grid/block") numbered across all ranks.
struct Keys {
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::vector<uint32_t>> of;  // of[rank][local key] -> global key
  explicit Keys(const std::vector<RankProfile>& ps) {
    for (const RankProfile& p : ps) {
      of.emplace_back();
      for (const std::string& k : p.keys) of.back().push_back(ids.try_emplace(k, uint32_t(ids.size())).first->second);
    }
  }
};

// The reference rank's collectives by global key, sorted by end: (end, index).
struct RefIndex {
  std::vector<std::vector<std::pair<int64_t, int32_t>>> by_key;
  int64_t first_end = INT64_MAX, last_end = INT64_MIN;
  RefIndex(const RankProfile& ref, const std::vector<uint32_t>& keys, size_t nkeys) : by_key(nkeys) {
    for (size_t i = 0; i < ref.collectives.size(); ++i) {
      const Collective& c = ref.collectives[i];
      by_key[keys[c.key]].push_back({c.gpu_end, int32_t(i)});
      first_end = std::min(first_end, c.gpu_end);
      last_end = std::max(last_end, c.gpu_end);
    }
    for (auto& v : by_key) std::sort(v.begin(), v.end());
  }
  // The reference collective of `key` whose end is nearest to t, if within `tol`; -1: none.
  int32_t nearest(uint32_t key, i128 t, int64_t tol) const {
    const auto& v = by_key[key];
    if (v.empty()) return -1;
    int64_t tt = clamp64(t);
    auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(tt, INT32_MIN));
    int32_t best = -1;
    i128 bd = i128(tol) + 1;
    if (it != v.end() && mag(i128(it->first) - t) < bd) best = it->second, bd = mag(i128(it->first) - t);
    if (it != v.begin() && mag(i128(std::prev(it)->first) - t) < bd) best = std::prev(it)->second;
    return best;
  }
};

// The identity of a collective in a trace with steps: "step\x1fkey\x1fordinal".
std::string step_id(const RankProfile& p, const Collective& c, uint32_t gkey) {
  return p.steps[size_t(c.step)].name + '\x1f' + std::to_string(gkey) + '\x1f' + std::to_string(c.ordinal);
}

// Collectives matched by the step they were launched in: an identity that holds whatever the
// clocks say. Step names used twice in a trace (a name per epoch) identify nothing and are left out.
Match by_steps(const RankProfile& ref, const std::vector<uint32_t>& rk, const RankProfile& o,
               const std::vector<uint32_t>& ok, i128 base, const AlignOptions& opt) {
  Match m;
  std::unordered_map<std::string, int32_t> ids;  // -1: used twice
  for (size_t i = 0; i < ref.collectives.size(); ++i) {
    const Collective& c = ref.collectives[i];
    if (c.step < 0) continue;
    auto [it, fresh] = ids.try_emplace(step_id(ref, c, rk[c.key]), int32_t(i));
    if (!fresh) it->second = -1;
  }
  std::unordered_map<std::string, int32_t> mine;
  for (size_t i = 0; i < o.collectives.size(); ++i) {
    const Collective& c = o.collectives[i];
    if (c.step < 0) continue;
    auto [it, fresh] = mine.try_emplace(step_id(o, c, ok[c.key]), int32_t(i));
    if (!fresh) it->second = -1;
  }
  std::vector<Pair> pairs;
  for (const auto& [id, i] : mine) {
    auto it = ids.find(id);
    if (i < 0 || it == ids.end() || it->second < 0) continue;
    i128 d = i128(ref.collectives[size_t(it->second)].gpu_end) - o.collectives[size_t(i)].gpu_end + base;
    pairs.push_back({it->second, i, clamp64(d)});
  }
  if (pairs.size() < kMinPairs) return m;
  std::vector<int64_t> diffs;
  for (const Pair& p : pairs) diffs.push_back(p.diff);
  int64_t c = median(diffs);
  for (const Pair& p : pairs)
    if (mag(i128(p.diff) - c) <= opt.agree_ns) m.pairs.push_back(p);
  if (double(m.pairs.size()) < kAgreeShare * double(pairs.size())) {
    m.note = ::fmt::format("collectives do not match: of {} matched by step names, {} end within {} of the others",
                           pairs.size(), m.pairs.size(), tools::human_ns(opt.agree_ns));
    m.pairs.clear();
    return m;
  }
  m.found = true;
  m.by = "steps";
  diffs.clear();
  for (const Pair& p : m.pairs) diffs.push_back(p.diff);
  m.correction = median(diffs);
  return m;
}

// Every collective of `o` paired with the reference's of the same key that ends nearest to it
// after `correction`, within agree_ns; one reference collective pairs with at most one.
std::vector<Pair> pair_at(const RefIndex& idx, const RankProfile& ref, const RankProfile& o,
                          const std::vector<uint32_t>& ok, i128 base, int64_t correction, int64_t agree) {
  std::unordered_map<int32_t, Pair> by_ref;
  for (size_t i = 0; i < o.collectives.size(); ++i) {
    const Collective& c = o.collectives[i];
    int32_t j = idx.nearest(ok[c.key], i128(c.gpu_end) - base + correction, agree);
    if (j < 0) continue;
    Pair p{j, int32_t(i), clamp64(i128(ref.collectives[size_t(j)].gpu_end) - c.gpu_end + base)};
    auto [it, fresh] = by_ref.try_emplace(j, p);
    if (!fresh && mag(i128(p.diff) - correction) < mag(i128(it->second.diff) - correction)) it->second = p;
  }
  std::vector<Pair> out;
  for (const auto& [j, p] : by_ref) out.push_back(p);
  std::sort(out.begin(), out.end(), [](const Pair& a, const Pair& b) { return a.ref < b.ref; });
  return out;
}

// Collectives matched by time: of the corrections within +-bound, the one under which most
// collectives end together with a reference collective of the same key. Refused when too few
// agree, or when another correction (collectives that repeat) does about as well.
Match by_times(const RefIndex& idx, const RankProfile& ref, const RankProfile& o, const std::vector<uint32_t>& ok,
               i128 base, int64_t bound, const AlignOptions& opt) {
  Match m;
  const size_t n = o.collectives.size();
  std::vector<size_t> sample;
  for (size_t i = 0; i < n; i += std::max<size_t>(1, n / kSampled)) sample.push_back(i);
  std::vector<int64_t> cand;
  for (size_t i : sample) {
    const Collective& c = o.collectives[i];
    const auto& v = idx.by_key[ok[c.key]];
    i128 at = i128(c.gpu_end) - base;
    auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(clamp64(at - bound), INT32_MIN));
    for (; it != v.end() && i128(it->first) <= at + bound && cand.size() < kMaxCandidates; ++it)
      cand.push_back(clamp64(i128(it->first) - at));
  }
  if (cand.empty()) {
    m.note =
        ::fmt::format("no collective of the same name and size ends within the clocks' uncertainty +-{} of one of its",
                      tools::human_ns(bound));
    return m;
  }
  // Corrections that agree within agree_ns are one; each group scored at its median.
  std::sort(cand.begin(), cand.end());
  struct Scored {
    int64_t c;
    size_t score, overlap;
  };
  std::vector<Scored> scored;
  for (size_t a = 0; a < cand.size();) {
    size_t b = a + 1;
    while (b < cand.size() && i128(cand[b]) - cand[b - 1] <= opt.agree_ns) ++b;
    int64_t c = cand[a + (b - a) / 2];
    size_t score = 0, overlap = 0;
    for (size_t i : sample) {
      const Collective& x = o.collectives[i];
      i128 t = i128(x.gpu_end) - base + c;
      if (t < i128(idx.first_end) - opt.agree_ns || t > i128(idx.last_end) + opt.agree_ns) continue;
      ++overlap;
      score += idx.nearest(ok[x.key], t, opt.agree_ns) >= 0;
    }
    scored.push_back({c, score, overlap});
    a = b;
  }
  auto better = [](const Scored& x, const Scored& y) {
    return x.score != y.score ? x.score > y.score : mag(x.c) < mag(y.c);
  };
  std::sort(scored.begin(), scored.end(), better);
  const Scored& best = scored[0];
  if (best.score < kMinPairs || double(best.score) < kAgreeShare * double(best.overlap)) {
    m.note = ::fmt::format("collectives do not match: at best {} of {} end together with rank {}'s within +-{}",
                           best.score, best.overlap, ref.rank, tools::human_ns(bound));
    return m;
  }
  for (size_t i = 1; i < scored.size(); ++i) {
    const Scored& s = scored[i];
    if (mag(i128(s.c) - best.c) > 2 * i128(opt.agree_ns) && double(s.score) >= kAgreeShare * double(best.score)) {
      m.note = ::fmt::format(
          "collectives repeat every {}, less than the clocks' uncertainty +-{} allows to tell apart, and no step names "
          "in common identify them: which ones match is ambiguous",
          tools::human_ns(clamp64(mag(i128(s.c) - best.c))), tools::human_ns(bound));
      return m;
    }
  }
  m.pairs = pair_at(idx, ref, o, ok, base, best.c, opt.agree_ns);
  std::vector<int64_t> diffs;
  for (const Pair& p : m.pairs) diffs.push_back(p.diff);
  int64_t refined = median(diffs);
  m.pairs = pair_at(idx, ref, o, ok, base, refined, opt.agree_ns);
  diffs.clear();
  for (const Pair& p : m.pairs) diffs.push_back(p.diff);
  m.correction = median(diffs);
  m.found = m.pairs.size() >= kMinPairs;
  m.by = "times";
  return m;
}

// Ranks written before a merge's alignment: the offsets stored in their merged job file.
bool stored_alignment(const std::vector<std::string>& files, Alignment* a) {
  if (files.empty()) return false;
  std::string file, member;
  if (!job::split_member_path(files[0], &file, &member)) return false;
  job::Index idx;
  if (!job::read_index(file, &idx, nullptr) || idx.members.size() != files.size()) return false;
  for (size_t i = 0; i < files.size(); ++i)
    if (files[i] != file + "/" + idx.members[i].name) return false;
  auto num = [](std::string_view s) { return std::strtoll(std::string(s).c_str(), nullptr, 10); };
  for (size_t i = 0; i < files.size(); ++i) {
    const job::Member& m = idx.members[i];
    RankClock r;
    r.file = files[i];
    r.rank = int(num(job::prop(m.props, "rank")));
    r.host = std::string(job::prop(m.props, "host"));
    r.offset_ns = m.clock_offset_ns;
    r.wall_offset_ns = num(job::prop(m.props, "wall_offset_ns"));
    r.refined_ns = num(job::prop(m.props, "refined_ns"));
    r.uncertainty_ns = num(job::prop(m.props, "uncertainty_ns"));
    r.collectives = uint64_t(num(job::prop(m.props, "collectives")));
    r.matched = uint64_t(num(job::prop(m.props, "matched")));
    r.matched_by = std::string(job::prop(m.props, "matched_by"));
    r.residual_median_ns = num(job::prop(m.props, "residual_median_ns"));
    r.residual_max_ns = num(job::prop(m.props, "residual_max_ns"));
    r.status = std::string(job::prop(m.props, "status"));
    r.note = std::string(job::prop(m.props, "note"));
    a->ranks.push_back(r);
  }
  a->method = "merged file: " + std::string(idx.prop("method"));
  a->reference = int(num(idx.prop("reference")));
  a->matched = size_t(num(idx.prop("matched")));
  a->residual_median_ns = num(idx.prop("residual_median_ns"));
  a->residual_max_ns = num(idx.prop("residual_max_ns"));
  for (const auto& [k, v] : idx.props)
    if (k == "warning") a->warnings.push_back(v);
  return true;
}

std::string rank_name(const RankClock& r) {
  return ::fmt::format("rank {}{}", r.rank, r.host.empty() ? "" : " (" + r.host + ")");
}

}  // namespace

int64_t Alignment::offset_of(const std::string& file) const {
  for (const RankClock& r : ranks)
    if (r.file == file) return r.offset_ns;
  return 0;
}

Alignment align_profiles(const std::vector<RankProfile>& ps, const AlignOptions& opt) {
  Alignment a;
  a.method = "realtime";
  for (const RankProfile& p : ps) {
    RankClock r;
    r.file = p.file;
    r.rank = int(std::max<int64_t>(p.rank, 0));  // as written: a trace without a rank is rank 0
    r.host = p.host;
    r.offset_ns = r.wall_offset_ns = p.wall_offset_ns;
    r.collectives = p.collectives.size() + p.collectives_beyond;
    r.status = "wall clock";
    a.ranks.push_back(r);
  }
  for (size_t i = 0; i < ps.size(); ++i) {
    if (ps[i].collectives.empty()) continue;
    if (a.reference < 0 || a.ranks[i].rank < a.ranks[size_t(a.reference)].rank) a.reference = int(i);
  }
  if (ps.size() < 2) {
    if (!ps.empty()) a.ranks[0].status = "reference";
    return a;
  }
  if (a.reference < 0) {
    a.warnings.push_back("no NCCL collectives in any trace: ranks aligned on their wall clocks only");
    for (size_t i = 0; i < ps.size(); ++i) {
      const RankProfile& ref = ps[0];
      a.ranks[i].uncertainty_ns =
          i == 0 ? 0
                 : sat_add(ps[i].host == ref.host ? opt.same_host_tolerance_ns : opt.cross_host_tolerance_ns,
                           sat_add(ps[i].clock_spread_ns, ref.clock_spread_ns));
      a.ranks[i].note = i == 0 ? "" : "no NCCL collectives";
    }
    a.ranks[0].status = "reference";
    return a;
  }
  const size_t R = size_t(a.reference);
  const RankProfile& ref = ps[R];
  Keys keys(ps);
  RefIndex idx(ref, keys.of[R], keys.ids.size());
  a.ranks[R].status = "reference";
  a.ranks[R].matched = ref.collectives.size();
  a.instances.assign(ref.collectives.size(), std::vector<int32_t>(ps.size(), -1));
  for (size_t j = 0; j < ref.collectives.size(); ++j) a.instances[j][R] = int32_t(j);
  std::vector<int64_t> residuals;
  bool corrected = false;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (i == R) continue;
    const RankProfile& o = ps[i];
    RankClock& rc = a.ranks[i];
    const int64_t bound = sat_add(o.host == ref.host ? opt.same_host_tolerance_ns : opt.cross_host_tolerance_ns,
                                  sat_add(o.clock_spread_ns, ref.clock_spread_ns));
    rc.uncertainty_ns = bound;
    auto wall_only = [&](const std::string& why) {
      rc.note = why;
      a.warnings.push_back(::fmt::format("{}: {}; aligned on wall clocks only, uncertainty +-{}", rank_name(rc), why,
                                         tools::human_ns(bound)));
    };
    if (o.collectives.empty()) {
      wall_only("no NCCL collectives");
      continue;
    }
    const i128 base = i128(ref.wall_offset_ns) - o.wall_offset_ns;
    Match m = by_steps(ref, keys.of[R], o, keys.of[i], base, opt);
    std::string step_note = m.note;
    if (!m.found) m = by_times(idx, ref, o, keys.of[i], base, bound, opt);
    if (!m.found) {
      wall_only(step_note.empty() ? m.note : step_note + "; by time: " + m.note);
      continue;
    }
    rc.matched = m.pairs.size();
    rc.matched_by = m.by;
    for (const Pair& p : m.pairs) a.instances[size_t(p.ref)][i] = p.other;
    std::vector<int64_t> res;
    for (const Pair& p : m.pairs) res.push_back(clamp64(mag(i128(p.diff) - m.correction)));
    rc.residual_median_ns = median(res);
    rc.residual_max_ns = res.empty() ? 0 : *std::max_element(res.begin(), res.end());
    if (mag(m.correction) > bound) {
      wall_only(
          ::fmt::format("its {} collectives matched by step names put its clock {} off its wall clock, more "
                        "than the +-{} the clocks allow (--clock-tolerance)",
                        m.pairs.size(), tools::human_ns(m.correction), tools::human_ns(bound)));
      continue;
    }
    rc.refined_ns = m.correction;
    rc.offset_ns = clamp64(i128(rc.wall_offset_ns) + m.correction);
    rc.uncertainty_ns = rc.residual_max_ns;
    rc.status = "collectives";
    corrected = true;
    residuals.insert(residuals.end(), res.begin(), res.end());
  }
  if (corrected) a.method = "realtime+nccl";
  // Instances matched on every rank that has collectives.
  for (const auto& inst : a.instances) {
    bool all = true;
    for (size_t i = 0; i < ps.size() && all; ++i) all = ps[i].collectives.empty() || inst[i] >= 0;
    a.matched += all;
  }
  a.residual_median_ns = median(residuals);
  a.residual_max_ns = residuals.empty() ? 0 : *std::max_element(residuals.begin(), residuals.end());
  return a;
}

Alignment align_traces(const std::vector<std::string>& files, const AlignOptions& opt,
                       std::vector<RankProfile>* profiles) {
  std::vector<RankProfile> ps(files.size());
  std::vector<runs::Trace> ids;
  std::vector<std::string> errors;
  for (size_t i = 0; i < files.size(); ++i) {
    TraceReader r;
    std::string err;
    if (!r.open(files[i], &err)) {
      errors.push_back(err);
      ps[i].file = files[i];
      continue;
    }
    read_profile(r, opt.step_pattern, &ps[i], nullptr);
    ids.push_back(ps[i].id);
  }
  Alignment a = align_profiles(ps, opt);
  Alignment stored;
  if (stored_alignment(files, &stored)) {
    stored.instances = std::move(a.instances);  // the identities, for tools/analysis/straggler.h
    a = std::move(stored);
  }
  a.errors = std::move(errors);
  a.mixed_runs = runs::mixed_runs(ids);
  if (profiles) *profiles = std::move(ps);
  return a;
}

bool write_merged(const std::string& out, const std::vector<std::string>& files, const Alignment& a,
                  int64_t clock_tolerance_ns, std::string* err) {
  std::vector<job::Member> members;
  std::vector<job::Source> sources;
  std::set<std::string> names;
  if (a.ranks.size() != files.size()) {
    *err = "internal error: an alignment of other files";
    return false;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const RankClock& r = a.ranks[i];
    job::Member m;
    size_t slash = files[i].find_last_of('/');
    m.name = slash == std::string::npos ? files[i] : files[i].substr(slash + 1);
    if (!names.insert(m.name).second) {
      *err = "two traces are named " + m.name;
      return false;
    }
    m.clock_offset_ns = r.offset_ns;
    m.props = {{"rank", std::to_string(r.rank)},
               {"host", r.host},
               {"wall_offset_ns", std::to_string(r.wall_offset_ns)},
               {"refined_ns", std::to_string(r.refined_ns)},
               {"uncertainty_ns", std::to_string(r.uncertainty_ns)},
               {"collectives", std::to_string(r.collectives)},
               {"matched", std::to_string(r.matched)},
               {"matched_by", r.matched_by},
               {"residual_median_ns", std::to_string(r.residual_median_ns)},
               {"residual_max_ns", std::to_string(r.residual_max_ns)},
               {"status", r.status},
               {"note", r.note}};
    members.push_back(std::move(m));
    sources.emplace_back();
    if (!job::find_source(files[i], &sources.back(), err)) return false;
  }
  std::string method = a.method.rfind("merged file: ", 0) == 0 ? a.method.substr(13) : a.method;
  job::Props props = {{"method", method},
                      {"reference", std::to_string(a.reference)},
                      {"matched", std::to_string(a.matched)},
                      {"residual_median_ns", std::to_string(a.residual_median_ns)},
                      {"residual_max_ns", std::to_string(a.residual_max_ns)},
                      {"clock_tolerance_ns", std::to_string(clock_tolerance_ns)}};
  for (const std::string& w : a.warnings) props.emplace_back("warning", w);
  return job::write_job_file(out, members, sources, props, err);
}

std::vector<std::string> alignment_lines(const Alignment& a) {
  std::vector<std::string> out;
  for (const RankClock& r : a.ranks) {
    std::string s = rank_name(r) + ": ";
    if (r.status == "reference") {
      s += ::fmt::format("reference, {} collectives", r.collectives);
    } else if (r.status == "collectives") {
      s += ::fmt::format("{} of {} collectives matched by {}, correction {}, residual median {}, max {}", r.matched,
                         r.collectives, r.matched_by, tools::human_ns(r.refined_ns),
                         tools::human_ns(r.residual_median_ns), tools::human_ns(r.residual_max_ns));
    } else {
      s += ::fmt::format("wall clock, uncertainty +-{}", tools::human_ns(r.uncertainty_ns));
      if (r.collectives) s += ::fmt::format(", {} collectives, {} matched", r.collectives, r.matched);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace cutrace
