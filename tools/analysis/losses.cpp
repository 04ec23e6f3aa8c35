#include "tools/analysis/losses.h"
#include "tools/common/format_util.h"

namespace cutrace::tools {

LossFacts loss_facts(const TraceReader& r, uint64_t dropped_total) {
  LossFacts f;
  const ReadStatus& s = r.status();
  f.dropped = dropped_total;
  for (int k = 0; k < trace::kLossKinds; ++k) f.by_kind[k] = s.lost[k];
  for (const trace::LossRec& l : s.losses)
    if (l.reason == uint8_t(trace::LossReason::Exit))
      for (uint64_t n : l.count) f.at_exit += n;
  f.intervals = s.losses.size();
  f.captured = r.meta_int("records_captured", -1);
  f.budget_bytes = r.meta_int("buffer_budget_bytes", -1);
  return f;
}

const char* loss_kind_name(int kind) {
  static const char* const names[trace::kLossKinds] = {"kernels", "copies",       "sets",       "syncs", "memory",
                                                       "api",     "range_begins", "range_ends", "marks", "other"};
  return kind >= 0 && kind < trace::kLossKinds ? names[kind] : "other";
}

std::string loss_sentence(const LossFacts& f) {
  std::string s = human_count(f.dropped);
  if (f.captured >= 0) {
    uint64_t issued = uint64_t(f.captured) + f.dropped;
    s += " of " + human_count(issued) + " records dropped";
    s += ::fmt::format(" ({:.1f}%)", issued ? 100.0 * double(f.dropped) / double(issued) : 0.0);
  } else {
    s += " records dropped";
  }
  uint64_t budget = f.dropped - f.at_exit;
  if (budget && f.budget_bytes > 0)
    s += ::fmt::format(": buffer budget {} MB reached; raise --buffer-mb", f.budget_bytes >> 20);
  if (f.at_exit)
    s += ::fmt::format("{}{} in progress when the process ended", budget ? "; " : ": ", human_count(f.at_exit));
  return s;
}

std::string loss_kinds_text(const LossFacts& f) {
  std::string s;
  for (int k = 0; k < trace::kLossKinds; ++k) {
    if (!f.by_kind[k]) continue;
    if (!s.empty()) s += ", ";
    std::string name = loss_kind_name(k);
    for (char& c : name) c = c == '_' ? ' ' : c;
    s += name + " " + human_count(f.by_kind[k]);
  }
  return s;
}

nlohmann::json loss_json(const LossFacts& f) {
  nlohmann::json by = nlohmann::json::object();
  for (int k = 0; k < trace::kLossKinds; ++k) by[loss_kind_name(k)] = f.by_kind[k];
  nlohmann::json j = {{"records", f.dropped}, {"by_kind", by}, {"at_exit", f.at_exit}, {"intervals", f.intervals}};
  j["of"] = f.captured >= 0 ? nlohmann::json(uint64_t(f.captured) + f.dropped) : nlohmann::json(nullptr);
  j["budget_bytes"] = f.budget_bytes > 0 ? nlohmann::json(f.budget_bytes) : nlohmann::json(nullptr);
  return j;
}

}  // namespace cutrace::tools
