// Call stacks in the Chrome export (tools/export/chrome.cpp): the trace's stack records, each
// host call's recorded stack as `args.backtrace` (frame texts, innermost first, as the summary
// writes them) and its Python frames as Kineto's `python_function` events, named
// "file.py(LINE): qualname" as torch.profiler(with_stack=True) names them. Each stack is
// symbolised once.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/analysis/stacks.h"
#include "trace/reader.h"

namespace cutrace::exporter {

class ChromeStacks {
 public:
  // Keeps Module, Stack, PyCode, PyStack and OpStack records; false for any other record.
  bool absorb(const Record& rec, const TraceReader& r);
  // The stack recorded for the call with this correlation id (0 = none); once per call.
  uint32_t take(uint64_t corr) { return ops_.take(corr); }
  // ,"backtrace":["...", ...] of stack `id`; "" for 0 or an unknown stack.
  const std::string& backtrace_arg(uint32_t id) { return text(id).backtrace; }
  // The quoted names of stack `id`'s Python frames, outermost first; empty without any.
  const std::vector<std::string>& python_names(uint32_t id) { return text(id).python; }

 private:
  struct Text {
    std::string backtrace;
    std::vector<std::string> python;
  };
  const Text& text(uint32_t id);

  StackTable table_;
  Symbolizer sym_;
  OpStacks ops_;
  std::unordered_map<uint32_t, Text> texts_;
};

}  // namespace cutrace::exporter
