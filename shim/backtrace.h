// Native call stacks of intercepted calls (CUTRACE_BACKTRACE). The calling thread unwinds (GCC's
// DWARF unwinder, see backtrace.cpp) straight into a slot of its own stack ring and publishes it
// before the call's record (RawRecord flag kRawStackSlot): no allocation, no lock, no system
// call. Raw PCs only: the collector maps them to modules and interns the stacks
// (collector/stacks.h); the tools symbolise them (tools/analysis/stacks.h).
#pragma once
#include <cstdint>
#include "runtime/stack_ring.h"

namespace cutrace {

// Unwinds the calling thread into `slot`.
void capture_stack(StackSlot* slot);
// At load: the mode, and the address range of the shim's code.
void backtrace_init();

}  // namespace cutrace
