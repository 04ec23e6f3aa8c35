#include "tools/analysis/diff.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "tools/analysis/name_groups.h"
#include "tools/common/format_util.h"
#include "trace/name_pattern.h"

namespace cutrace {

namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_separator(char c) { return c == '_' || c == ':' || c == ' ' || c == ','; }

std::string strip_templates(std::string_view s) {
  std::string out;
  int depth = 0;
  for (char c : s) {
    if (c == '<') {
      ++depth;
    } else if (c == '>' && depth > 0) {
      --depth;
    } else if (depth == 0) {
      out += c;
    }
  }
  return out;
}

// Drops a balanced "(...)" that ends the name (a demangled parameter list).
void strip_parameters(std::string* s) {
  while (!s->empty() && s->back() == ' ') s->pop_back();
  if (s->empty() || s->back() != ')') return;
  int depth = 0;
  for (size_t i = s->size(); i-- > 0;) {
    if ((*s)[i] == ')') ++depth;
    if ((*s)[i] == '(' && --depth == 0) {
      if (i > 0) s->resize(i);  // a name that is all parentheses stays
      return;
    }
  }
}

std::string star_numbers(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (!is_digit(s[i])) {
      out += s[i++];
      continue;
    }
    size_t j = i, numbers = 0;
    for (;;) {  // NUMBER (x NUMBER)*
      while (j < s.size() && is_digit(s[j])) ++j;
      ++numbers;
      if (j + 1 < s.size() && s[j] == 'x' && is_digit(s[j + 1])) {
        ++j;
        continue;
      }
      break;
    }
    bool whole = (i == 0 || is_separator(s[i - 1])) && (j == s.size() || is_separator(s[j]));
    if (numbers >= 2 || whole) out += '*';
    else out.append(s, i, j - i);
    i = j;
  }
  return out;
}

StepQuantiles quantiles(const StepStats& s, bool gpu) {
  const Dist& d = gpu ? s.gpu : s.cpu;
  StepQuantiles q;
  q.n = d.n;
  if (!d.n) return q;
  auto pct = [&](double p) { return gpu ? s.gpu_percentile(p) : s.cpu_percentile(p); };
  q.mean = d.mean();
  q.median = pct(0.5);
  q.p25 = pct(0.25);
  q.p75 = pct(0.75);
  q.p90 = pct(0.9);
  q.min = d.min;
  q.max = d.max;
  return q;
}

StepChange step_change(const StepStats& a, const StepStats& b, bool gpu) {
  StepChange c;
  c.a = quantiles(a, gpu);
  c.b = quantiles(b, gpu);
  if (!c.a.n || !c.b.n) return c;
  c.median_change = sat_sub(c.b.median, c.a.median);
  c.p90_change = sat_sub(c.b.p90, c.a.p90);
  c.ratio = c.a.median ? double(c.b.median) / double(c.a.median) : 0;
  int64_t spread = std::max(c.a.iqr(), c.b.iqr());
  c.beyond_spread = std::llabs(c.median_change) > spread;
  return c;
}

SideFacts side_facts(const SummaryModel& m) {
  SideFacts f;
  f.files = m.files().size();
  f.records = m.records();
  f.steps = m.steps().cpu.n;
  f.step_source = m.step_source();
  f.gpu = m.total_breakdown();
  for (const FileSummary& file : m.files())
    for (const NvmlStat& s : file.nvml) f.mem_peak = std::max(f.mem_peak, s.mem_used_max);
  f.losses = m.losses();
  f.api_errors = m.api_errors();
  return f;
}

void add_kernel(KernelSide* s, const KernelStat& k, TimeStat* acc) {
  s->names.push_back(k.name);
  acc->merge(k.time);
}

void finish_kernel(KernelSide* s, const TimeStat& t, const SideFacts& f) {
  s->count = t.count;
  s->total_ns = t.total_ns();
  s->mean_ns = t.mean_ns();
  s->per_step_ns = double(s->total_ns) / f.divisor;
  s->count_per_step = double(s->count) / f.divisor;
  s->share = f.kernel_ns ? double(s->total_ns) / double(f.kernel_ns) : 0;
}

std::vector<KernelDiff> compare_kernels(const std::vector<KernelStat>& ka, const std::vector<KernelStat>& kb,
                                        const SideFacts& fa, const SideFacts& fb) {
  std::map<std::string, const KernelStat*> a, b;
  for (const auto& k : ka) a[k.name] = &k;
  for (const auto& k : kb) b[k.name] = &k;
  struct Row {
    KernelDiff d;
    TimeStat ta, tb;
  };
  std::vector<Row> rows;
  std::map<std::string, std::vector<const KernelStat*>> rest_a, rest_b;  // by normalised name
  for (const auto& [name, k] : a) {
    if (auto it = b.find(name); it != b.end()) {
      Row r;
      r.d.name = name;
      add_kernel(&r.d.a, *k, &r.ta);
      add_kernel(&r.d.b, *it->second, &r.tb);
      rows.push_back(std::move(r));
    } else {
      rest_a[normalise_kernel_name(name)].push_back(k);
    }
  }
  for (const auto& [name, k] : b)
    if (!a.count(name)) rest_b[normalise_kernel_name(name)].push_back(k);
  for (const auto& [key, ks] : rest_a) {
    auto it = rest_b.find(key);
    if (it == rest_b.end()) {
      for (const KernelStat* k : ks) {
        Row r;
        r.d.name = k->name;
        r.d.match = KernelMatch::OnlyA;
        add_kernel(&r.d.a, *k, &r.ta);
        rows.push_back(std::move(r));
      }
      continue;
    }
    Row r;
    r.d.name = key;
    r.d.match = KernelMatch::Normalised;
    for (const KernelStat* k : ks) add_kernel(&r.d.a, *k, &r.ta);
    for (const KernelStat* k : it->second) add_kernel(&r.d.b, *k, &r.tb);
    rows.push_back(std::move(r));
    rest_b.erase(it);
  }
  for (const auto& [key, ks] : rest_b) {
    for (const KernelStat* k : ks) {
      Row r;
      r.d.name = k->name;
      r.d.match = KernelMatch::OnlyB;
      add_kernel(&r.d.b, *k, &r.tb);
      rows.push_back(std::move(r));
    }
  }
  std::vector<KernelDiff> out;
  for (Row& r : rows) {
    finish_kernel(&r.d.a, r.ta, fa);
    finish_kernel(&r.d.b, r.tb, fb);
    r.d.change_ns = r.d.b.per_step_ns - r.d.a.per_step_ns;
    r.d.ratio = r.d.a.mean_ns && r.tb.timed() ? double(r.d.b.mean_ns) / double(r.d.a.mean_ns) : 0;
    out.push_back(std::move(r.d));
  }
  return out;
}

template <class T>
void sort_by_change(std::vector<T>* v, double T::*change) {
  std::stable_sort(v->begin(), v->end(), [&](const T& x, const T& y) {
    double cx = std::fabs(x.*change), cy = std::fabs(y.*change);
    if (cx != cy) return cx > cy;
    return x.name < y.name;
  });
}

std::vector<RangeDiff> compare_ranges(const std::vector<RangeSummary>& ra, const std::vector<RangeSummary>& rb,
                                      const SideFacts& fa, const SideFacts& fb) {
  // A name joins its digit pattern's group when the pattern has two or more names in either run.
  std::map<std::pair<std::string, std::string>, std::set<std::string>> family;
  for (const auto* rs : {&ra, &rb})
    for (const RangeSummary& r : *rs)
      if (std::string p = digit_pattern(r.name); !p.empty()) family[{r.domain, p}].insert(r.name);
  struct Acc {
    RangeStat a, b;
    size_t names_a = 0, names_b = 0;
  };
  std::map<std::pair<std::string, std::string>, Acc> by_key;
  auto key_of = [&](const RangeSummary& r) {
    std::string p = digit_pattern(r.name);
    if (!p.empty() && family[{r.domain, p}].size() >= 2) return std::make_pair(r.domain, p);
    return std::make_pair(r.domain, r.name);
  };
  for (const RangeSummary& r : ra) {
    Acc& x = by_key[key_of(r)];
    x.a.merge(r.stat);
    ++x.names_a;
  }
  for (const RangeSummary& r : rb) {
    Acc& x = by_key[key_of(r)];
    x.b.merge(r.stat);
    ++x.names_b;
  }
  std::vector<RangeDiff> out;
  for (const auto& [key, x] : by_key) {
    RangeDiff d;
    d.domain = key.first;
    d.name = key.second;
    d.names_a = x.names_a;
    d.names_b = x.names_b;
    d.count_a = x.a.count;
    d.count_b = x.b.count;
    d.cpu_total_a = x.a.cpu_total_ns();
    d.cpu_total_b = x.b.cpu_total_ns();
    d.gpu_total_a = x.a.gpu_total_ns();
    d.gpu_total_b = x.b.gpu_total_ns();
    d.cpu_mean_a = x.a.cpu_mean_ns();
    d.cpu_mean_b = x.b.cpu_mean_ns();
    d.gpu_mean_a = x.a.gpu_mean_ns();
    d.gpu_mean_b = x.b.gpu_mean_ns();
    d.cpu_median_a = x.a.cpu.median();
    d.cpu_median_b = x.b.cpu.median();
    d.cpu_change_ns = double(d.cpu_total_b) / fb.divisor - double(d.cpu_total_a) / fa.divisor;
    d.gpu_change_ns = double(d.gpu_total_b) / fb.divisor - double(d.gpu_total_a) / fa.divisor;
    out.push_back(std::move(d));
  }
  sort_by_change(&out, &RangeDiff::cpu_change_ns);
  return out;
}

CountDiff count_diff(std::string name, uint64_t ca, int64_t na, uint64_t cb, int64_t nb, const SideFacts& fa,
                     const SideFacts& fb) {
  CountDiff d;
  d.name = std::move(name);
  d.count_a = ca, d.count_b = cb, d.ns_a = na, d.ns_b = nb;
  d.change_ns = double(nb) / fb.divisor - double(na) / fa.divisor;
  return d;
}

nlohmann::ordered_json quantiles_json(const StepQuantiles& q) {
  if (!q.n) return nullptr;
  return {{"count", q.n},    {"mean_ns", q.mean}, {"median_ns", q.median}, {"p25_ns", q.p25},
          {"p75_ns", q.p75}, {"p90_ns", q.p90},   {"min_ns", q.min},       {"max_ns", q.max}};
}

nlohmann::ordered_json step_json(const StepChange& c) {
  bool both = c.a.n && c.b.n;
  return {{"a", quantiles_json(c.a)},
          {"b", quantiles_json(c.b)},
          {"median_change_ns", both ? nlohmann::ordered_json(c.median_change) : nlohmann::ordered_json()},
          {"p90_change_ns", both ? nlohmann::ordered_json(c.p90_change) : nlohmann::ordered_json()},
          {"ratio", both && c.a.median ? nlohmann::ordered_json(c.ratio) : nlohmann::ordered_json()},
          {"beyond_spread", c.beyond_spread}};
}

nlohmann::ordered_json breakdown_side_json(const GpuBreakdown& g) {
  return {{"elapsed_ns", g.elapsed_ns()},
          {"busy_ns", g.busy_ns()},
          {"idle_ns", g.idle_ns()},
          {"compute_ns", g.compute_ns()},
          {"communication_ns", g.communication_ns()},
          {"memory_ns", g.memory_ns()},
          {"overlap_ns", g.overlap_ns()},
          {"comm_total_ns", g.comm_total_ns()},
          {"host_wait_ns", g.host_wait_ns},
          {"kernel_wait_ns", g.kernel_wait_ns}};
}

nlohmann::ordered_json kernel_side_json(const KernelSide& s) {
  if (s.names.empty()) return nullptr;
  return {{"names", s.names},
          {"count", s.count},
          {"total_ns", s.total_ns},
          {"mean_ns", s.mean_ns},
          {"per_step_ns", s.per_step_ns},
          {"count_per_step", s.count_per_step},
          {"share", s.share}};
}

nlohmann::ordered_json side_json(const SideFacts& f, const DiffSide& s) {
  return {{"path", s.path},
          {"files", f.files},
          {"records", f.records},
          {"steps", f.steps},
          {"step_source", f.step_source},
          {"divisor", f.divisor},
          {"selection", s.note.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s.note)},
          {"kernels", f.kernels},
          {"kernel_ns", f.kernel_ns},
          {"api_errors", f.api_errors},
          {"mem_peak_bytes", f.mem_peak ? nlohmann::ordered_json(f.mem_peak) : nlohmann::ordered_json()},
          {"drops", tools::loss_json(f.losses)}};
}

nlohmann::ordered_json counts_json(const std::vector<CountDiff>& v, bool bytes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const CountDiff& c : v) {
    nlohmann::ordered_json j = {
        {"name", c.name}, {"count_a", c.count_a}, {"count_b", c.count_b}, {"ns_a", c.ns_a}, {"ns_b", c.ns_b}};
    if (bytes) j["bytes_a"] = c.bytes_a, j["bytes_b"] = c.bytes_b;
    j["change_ns"] = c.change_ns;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

std::string normalise_kernel_name(std::string_view name) {
  std::string s = strip_templates(name);
  strip_parameters(&s);
  s = star_numbers(s);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool parse_step_pick(std::string_view text, StepPick* out) {
  auto number = [](std::string_view t, uint64_t* v) {
    if (t.empty() || t.size() > 18 || !std::all_of(t.begin(), t.end(), is_digit)) return false;
    *v = std::stoull(std::string(t));
    return true;
  };
  StepPick p;
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    if (!number(text, &p.first)) return false;
    p.last = p.first;
  } else {
    if (!number(text.substr(0, dash), &p.first)) return false;
    std::string_view rest = text.substr(dash + 1);
    if (!rest.empty() && !number(rest, &p.last)) return false;
  }
  if (p.last < p.first) return false;
  *out = p;
  return true;
}

DiffSide load_diff_side(const std::string& path, const SummaryOptions& opt, const std::optional<StepPick>& pick) {
  DiffSide side;
  side.path = path;
  TraceSet set(path);
  SummaryOptions o = opt;
  if (pick) {
    // First pass: each file's step ranges by begin time; the span of steps first..last.
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    std::set<std::string> hosts;
    uint64_t most = 0;
    set.for_each([&](TraceReader& r) {
      if (opt.rank && r.meta_int("rank", -1) != *opt.rank) return;
      std::vector<std::pair<int64_t, int64_t>> steps;
      r.read([&](const Record& rec) {
        if (rec.type() != trace::RecType::Range) return;
        const auto& g = rec.as<trace::RangeRec>();
        if (trace::range_open(g) || !trace::name_pattern_match(o.step_pattern, r.str(g.name_id))) return;
        steps.emplace_back(+g.cpu_begin, +g.cpu_end);  // copies: packed fields
      });
      std::sort(steps.begin(), steps.end());
      most = std::max<uint64_t>(most, steps.size());
      if (pick->first >= steps.size()) return;
      hosts.insert(std::string(r.meta("host")));
      lo = std::min(lo, steps[pick->first].first);
      for (uint64_t i = pick->first; i < steps.size() && i <= pick->last; ++i) hi = std::max(hi, steps[i].second);
    });
    std::string which = pick->last == UINT64_MAX    ? fmt::format("steps {}-", pick->first)
                        : pick->last == pick->first ? fmt::format("step {}", pick->first)
                                                    : fmt::format("steps {}-{}", pick->first, pick->last);
    if (lo > hi) {
      side.note = fmt::format("{}: no file has so many steps ({} at most)", which, most);
      side.errors = set.errors();
      return side;
    }
    if (hosts.size() > 1) {
      side.note = which + ": the files come from several hosts (different clocks): pick one with --rank";
      return side;
    }
    o.from_ns = lo;
    o.to_ns = hi;
    o.relative = false;
    side.note = fmt::format("{} (pattern {}): {} ns of the trace clock", which, o.step_pattern, sat_sub(hi, lo));
  }
  side.model = std::make_unique<SummaryModel>(o);
  side.files = set.for_each([&](TraceReader& r) {
    if (!side.model->add(r)) side.errors.push_back(r.path() + ": " + r.error());
  });
  for (const std::string& e : set.errors()) side.errors.push_back(e);
  side.ok = side.files > 0;
  return side;
}

const char* kernel_match_name(KernelMatch m) {
  switch (m) {
    case KernelMatch::Exact: return "exact";
    case KernelMatch::Normalised: return "normalised";
    case KernelMatch::OnlyA: return "only_a";
    case KernelMatch::OnlyB: return "only_b";
  }
  return "?";
}

Diff compare(const SummaryModel& ma, const SummaryModel& mb) {
  Diff d;
  d.a = side_facts(ma);
  d.b = side_facts(mb);
  d.per_step = d.a.steps && d.b.steps;
  if (d.per_step) d.a.divisor = double(d.a.steps), d.b.divisor = double(d.b.steps);
  d.cpu = step_change(ma.steps(), mb.steps(), false);
  d.gpu = step_change(ma.steps(), mb.steps(), true);

  std::vector<KernelStat> ka = ma.kernels(), kb = mb.kernels();
  for (auto [ks, f] : {std::pair{&ka, &d.a}, std::pair{&kb, &d.b}}) {
    for (const KernelStat& k : *ks) {
      f->kernels += k.time.count;
      f->kernel_ns = sat_add(f->kernel_ns, k.time.total_ns());
    }
  }
  d.kernels = compare_kernels(ka, kb, d.a, d.b);
  sort_by_change(&d.kernels, &KernelDiff::change_ns);
  for (const KernelDiff& k : d.kernels) d.kernel_change_ns += k.change_ns;

  d.ranges = compare_ranges(ma.ranges(), mb.ranges(), d.a, d.b);

  for (size_t k = 0; k <= SummaryModel::kCopyKinds; ++k) {
    bool set = k == SummaryModel::kCopyKinds;
    const CopyStat& a = set ? ma.memsets() : ma.memcpy_kind(k);
    const CopyStat& b = set ? mb.memsets() : mb.memcpy_kind(k);
    if (!a.time.count && !b.time.count) continue;
    CountDiff c = count_diff(set ? "memset" : "memcpy " + std::string(copy_kind_name(uint8_t(k))), a.time.count,
                             a.time.total_ns(), b.time.count, b.time.total_ns(), d.a, d.b);
    c.bytes_a = a.bytes, c.bytes_b = b.bytes;
    d.copies.push_back(std::move(c));
  }
  for (size_t k = 0; k < SummaryModel::kSyncKinds; ++k) {
    const SyncStat &a = ma.sync_kind(k), &b = mb.sync_kind(k);
    if (a.count || b.count)
      d.syncs.push_back(count_diff(sync_kind_name(uint8_t(k)), a.count, a.total_ns, b.count, b.total_ns, d.a, d.b));
  }
  std::map<std::string, std::pair<CpuTimeStat, CpuTimeStat>> apis;
  for (const ApiStat& s : ma.apis()) apis[s.name].first = s.time;
  for (const ApiStat& s : mb.apis()) apis[s.name].second = s.time;
  for (const auto& [name, t] : apis)
    d.apis.push_back(count_diff(name, t.first.count, t.first.total_ns, t.second.count, t.second.total_ns, d.a, d.b));
  sort_by_change(&d.apis, &CountDiff::change_ns);
  return d;
}

nlohmann::ordered_json diff_json(const Diff& d, const DiffSide& a, const DiffSide& b) {
  nlohmann::ordered_json j;
  j["a"] = side_json(d.a, a);
  j["b"] = side_json(d.b, b);
  j["per_step"] = d.per_step;
  j["spread_rule"] = "|median B - median A| > max(IQR A, IQR B)";
  j["steps"] = {{"cpu", step_json(d.cpu)}, {"gpu", step_json(d.gpu)}};
  j["gpu"] = {{"a", breakdown_side_json(d.a.gpu)}, {"b", breakdown_side_json(d.b.gpu)}};
  nlohmann::ordered_json ks = nlohmann::ordered_json::array();
  for (const KernelDiff& k : d.kernels) {
    ks.push_back({{"name", k.name},
                  {"match", kernel_match_name(k.match)},
                  {"a", kernel_side_json(k.a)},
                  {"b", kernel_side_json(k.b)},
                  {"change_ns", k.change_ns},
                  {"ratio", k.ratio ? nlohmann::ordered_json(k.ratio) : nlohmann::ordered_json()}});
  }
  j["kernels"] = {{"change_ns", d.kernel_change_ns}, {"rows", std::move(ks)}};
  nlohmann::ordered_json rs = nlohmann::ordered_json::array();
  for (const RangeDiff& r : d.ranges) {
    rs.push_back({{"domain", r.domain},
                  {"name", r.name},
                  {"names_a", r.names_a},
                  {"names_b", r.names_b},
                  {"count_a", r.count_a},
                  {"count_b", r.count_b},
                  {"cpu_total_ns_a", r.cpu_total_a},
                  {"cpu_total_ns_b", r.cpu_total_b},
                  {"cpu_mean_ns_a", r.cpu_mean_a},
                  {"cpu_mean_ns_b", r.cpu_mean_b},
                  {"cpu_median_ns_a", r.cpu_median_a},
                  {"cpu_median_ns_b", r.cpu_median_b},
                  {"gpu_total_ns_a", r.gpu_total_a},
                  {"gpu_total_ns_b", r.gpu_total_b},
                  {"gpu_mean_ns_a", r.gpu_mean_a},
                  {"gpu_mean_ns_b", r.gpu_mean_b},
                  {"cpu_change_ns", r.cpu_change_ns},
                  {"gpu_change_ns", r.gpu_change_ns}});
  }
  j["ranges"] = std::move(rs);
  j["copies"] = counts_json(d.copies, true);
  j["syncs"] = counts_json(d.syncs, false);
  j["apis"] = counts_json(d.apis, false);
  return j;
}

}  // namespace cutrace
