// Python call stacks of intercepted calls (CUTRACE_PYTHON_STACKS): the calling thread reads its
// own CPython frame chain into its stack slot, next to the native frames (shim/backtrace.h).
// No GIL, no allocation, no Python API call, no system call: see py_stack.cpp.
#pragma once
#include <cstdint>
#include "runtime/stack_ring.h"

namespace cutrace {

// At load: finds CPython in the process (dlsym of _PyRuntime, Py_Version, PyCode_Type) and its
// layout; sets g_py_stacks to None when there is none.
void py_stack_init();
// Once, when the process first uses CUDA: the warning for an unsupported CPython, if any.
void py_stack_report();
// The calling thread's Python frames, innermost first, at most `max`; 0 when it has none.
uint32_t capture_py_stack(PyRawFrame* out, uint32_t max);

}  // namespace cutrace
