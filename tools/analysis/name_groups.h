// Names that differ only in their numbers (step_0 .. step_24, layer.3.mlp) grouped under one
// pattern, so that a table cut at --top rows is not filled by one name family while the other
// names fall into "(other N names)".
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tools/analysis/summary_model.h"

namespace cutrace {

// Every run of decimal digits replaced by '*': "step_12" -> "step_*"; "" for a name without one.
std::string digit_pattern(std::string_view name);

struct RangeGroup {
  RangeSummary range;
  size_t names = 1;  // the names it stands for
};

// Ranges of one domain whose names share a digit pattern, two or more of them, become one entry
// named "<pattern> (<names>)" with their statistics merged; the others stay as they are. Sorted
// as SummaryModel::ranges() sorts.
std::vector<RangeGroup> group_ranges(const std::vector<RangeSummary>& ranges);

}  // namespace cutrace
