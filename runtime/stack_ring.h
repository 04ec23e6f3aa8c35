// The per-thread ring of native call stacks (CUTRACE_BACKTRACE): the owner thread unwinds into a
// slot (shim/backtrace.h), the collector reads it (collector/stacks.h).
#pragma once
#include <cstdint>
#include "runtime/config.h"
#include "runtime/spsc.h"

namespace cutrace {

extern Backtrace g_backtrace;  // copy of config().backtrace, read on the hot path
extern PyStacks g_py_stacks;   // copy of config().py_stacks, or None when no CPython was found

// Raw frames unwound per call: the shim's own (3: capture_stack, the wrapper, the exported entry;
// removed by the collector), then the 24 frames (trace::kMaxStackFrames) the trace keeps, and one
// spare. Each frame costs an unwind step: no more are walked than can be kept.
inline constexpr int kStackCaptureFrames = 28;
// Python frames read per call (trace::kMaxPyFrames, innermost first).
inline constexpr int kPyCaptureFrames = 32;
inline constexpr size_t kStackSlots = 2048;  // 1.5 MiB per thread, allocated only when enabled

// One Python frame as the shim reads it: the code object and where in it the frame is. Names
// and lines are read later by the collector (collector/py_code.h).
struct PyRawFrame {
  uint64_t code;        // PyCodeObject*
  int32_t lasti;        // offset of the executing instruction in code units (-1: not started)
  uint32_t first_line;  // co_firstlineno, checked again when the collector reads the object
};

struct StackSlot {
  uint32_t depth;                    // valid entries of pc
  uint32_t py_depth;                 // valid entries of py
  uint64_t pc[kStackCaptureFrames];  // innermost first
  PyRawFrame py[kPyCaptureFrames];   // innermost first
};
using StackRing = SpscRing<StackSlot, kStackSlots>;

// Whether pc is in the shim's own code (not the application's); defined in shim/backtrace.cpp.
bool in_shim(uint64_t pc);

}  // namespace cutrace
