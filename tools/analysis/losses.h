// Records a trace is missing (LossRec, docs/FORMAT.md): what every tool says about them, in one
// wording. A trace with losses has counts that are lower bounds; the tools say so first.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include "trace/reader.h"

namespace cutrace::tools {

struct LossFacts {
  uint64_t dropped = 0;  // records lost (all kinds)
  uint64_t by_kind[trace::kLossKinds] = {};
  int64_t captured = -1;      // records the process published (meta records_captured); -1: unknown
  int64_t budget_bytes = -1;  // meta buffer_budget_bytes; -1: unknown
  uint64_t at_exit = 0;       // of `dropped`: calls in progress when the process ended
  size_t intervals = 0;       // Loss records (intervals with missing records)
};

// From a reader that has read the whole file (status and close-time metadata).
LossFacts loss_facts(const TraceReader& r, uint64_t dropped_total);

const char* loss_kind_name(int kind);  // "kernels", "copies", ..., as in summary JSON `drops`

// "265,020 of 301,001 records dropped (88.0%): buffer budget 16 MB reached; raise --buffer-mb"
std::string loss_sentence(const LossFacts& f);
// The kinds with losses: "kernels 265,000, range begins 20"
std::string loss_kinds_text(const LossFacts& f);
// {"records": N, "of": M|null, "by_kind": {...}, "at_exit": N, "intervals": N, "budget_bytes": N|null}
nlohmann::json loss_json(const LossFacts& f);

}  // namespace cutrace::tools
