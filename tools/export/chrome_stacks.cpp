#include "tools/export/chrome_stacks.h"

#include "tools/export/exports.h"

namespace cutrace::exporter {

bool ChromeStacks::absorb(const Record& rec, const TraceReader& r) {
  if (rec.type() == trace::RecType::OpStack) {
    ops_.link(rec.as<trace::OpStackRec>());
    return true;
  }
  return table_.absorb(rec, r);
}

const ChromeStacks::Text& ChromeStacks::text(uint32_t id) {
  static const Text kNone;
  if (!id) return kNone;
  auto it = texts_.find(id);
  if (it != texts_.end()) return it->second;
  Text& t = texts_[id];
  std::vector<SymFrame> frames = sym_.stack(table_, id);
  if (frames.empty()) return t;
  t.backtrace = ",\"backtrace\":[";
  for (size_t k = 0; k < frames.size(); ++k) {
    if (k) t.backtrace += ',';
    chrome_text::append_json_string(t.backtrace, frame_text(frames[k]));
  }
  t.backtrace += ']';
  // Python frames come first, innermost first: their names, outermost first.
  for (size_t k = frames.size(); k-- > 0;) {
    const SymFrame& f = frames[k];
    if (!f.python) continue;
    std::string name = f.module + "(" + std::to_string(f.line) + "): " + f.function;
    t.python.emplace_back();
    chrome_text::append_json_string(t.python.back(), name);
  }
  return t;
}

}  // namespace cutrace::exporter
