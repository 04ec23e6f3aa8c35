#include "tools/analysis/name_groups.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

namespace cutrace {

std::string digit_pattern(std::string_view name) {
  std::string out;
  bool digits = false, any = false;
  for (char c : name) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (!digits) out += '*';
      digits = any = true;
    } else {
      out += c;
      digits = false;
    }
  }
  return any ? out : std::string();
}

std::vector<RangeGroup> group_ranges(const std::vector<RangeSummary>& ranges) {
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> families;  // (domain, pattern)
  for (size_t i = 0; i < ranges.size(); ++i) {
    std::string p = digit_pattern(ranges[i].name);
    if (!p.empty()) families[{ranges[i].domain, p}].push_back(i);
  }
  std::vector<bool> grouped(ranges.size(), false);
  std::vector<RangeGroup> out;
  for (const auto& [key, members] : families) {
    if (members.size() < 2) continue;
    RangeSummary g;
    g.domain = key.first;
    g.name = key.second + " (" + std::to_string(members.size()) + ")";
    for (size_t i : members) {
      g.stat.merge(ranges[i].stat);
      grouped[i] = true;
    }
    out.push_back({std::move(g), members.size()});
  }
  for (size_t i = 0; i < ranges.size(); ++i)
    if (!grouped[i]) out.push_back({ranges[i], 1});
  std::sort(out.begin(), out.end(), [](const RangeGroup& x, const RangeGroup& y) {
    const RangeSummary &a = x.range, &b = y.range;
    if (a.stat.cpu_total_ns() != b.stat.cpu_total_ns()) return a.stat.cpu_total_ns() > b.stat.cpu_total_ns();
    if (a.stat.count != b.stat.count) return a.stat.count > b.stat.count;
    if (a.name != b.name) return a.name < b.name;
    return a.domain < b.domain;
  });
  return out;
}

}  // namespace cutrace
