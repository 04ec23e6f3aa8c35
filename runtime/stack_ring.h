// The per-thread ring of native call stacks (CUTRACE_BACKTRACE): the owner thread unwinds into a
// slot (shim/backtrace.h), the collector reads it (collector/stacks.h).
#pragma once
#include <cstdint>
#include "runtime/config.h"
#include "runtime/spsc.h"

namespace cutrace {

extern Backtrace g_backtrace;  // copy of config().backtrace, read on the hot path

// Raw frames unwound per call: the shim's own (3: capture_stack, the wrapper, the exported entry;
// removed by the collector), then the 24 frames (trace::kMaxStackFrames) the trace keeps, and one
// spare. Each frame costs an unwind step: no more are walked than can be kept.
inline constexpr int kStackCaptureFrames = 28;
inline constexpr size_t kStackSlots = 2048;  // 528 KiB per thread, allocated only when enabled

struct StackSlot {
  uint32_t depth;  // valid entries of pc
  uint32_t pad;
  uint64_t pc[kStackCaptureFrames];  // innermost first
};
using StackRing = SpscRing<StackSlot, kStackSlots>;

// Whether pc is in the shim's own code (not the application's); defined in shim/backtrace.cpp.
bool in_shim(uint64_t pc);

}  // namespace cutrace
