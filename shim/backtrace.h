// Native call stacks of intercepted calls (CUTRACE_BACKTRACE). The calling thread unwinds (GCC's
// DWARF unwinder, see backtrace.cpp) straight into a slot of its own stack ring and publishes it
// before the call's record (RawRecord flag kRawStackSlot): no allocation, no lock, no system
// call. Raw PCs only: the collector maps them to modules and interns the stacks
// (collector/stacks.h); the tools symbolise them (tools/stacks.h).
#pragma once
#include <cstdint>
#include "shim/config.h"
#include "shim/spsc.h"

namespace cutrace {

extern Backtrace g_backtrace;  // copy of config().backtrace, read on the hot path

// Raw frames unwound per call: the shim's own (3: capture_stack, the wrapper, the exported entry;
// removed by the collector), then the 24 frames (fmt::kMaxStackFrames) the trace keeps, and one
// spare. Each frame costs an unwind step: no more are walked than can be kept.
inline constexpr int kStackCaptureFrames = 28;
inline constexpr size_t kStackSlots = 2048;  // 528 KiB per thread, allocated only when enabled

struct StackSlot {
  uint32_t depth;  // valid entries of pc
  uint32_t pad;
  uint64_t pc[kStackCaptureFrames];  // innermost first
};
using StackRing = SpscRing<StackSlot, kStackSlots>;

// Unwinds the calling thread into `slot`.
void capture_stack(StackSlot* slot);
// At load: the mode, and the address range of the shim's code.
void backtrace_init();
// The address range of the shim's own code: frames in it are not the application's.
bool in_shim(uint64_t pc);

}  // namespace cutrace
