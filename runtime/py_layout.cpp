// Offsets measured with offsetof() against each version's own headers (Py_BUILD_CORE, internal/
// pycore_runtime.h, pycore_frame.h): 3.10.13, 3.11.2 and 3.11.7 (equal), 3.12.1, 3.13.0.
#include "runtime/py_layout.h"

namespace cutrace {

PyRuntimeInfo g_pyrt;

namespace {

constexpr PyLayout make_310() {
  PyLayout l;
  l.minor = 10, l.kind = PyFrameKind::FrameObject;
  l.rt_tss_key = 584, l.ts_thread_id = 176, l.ts_frame = 24;
  l.f_previous = 24, l.f_code = 32, l.f_instr = 96;
  l.co_filename = 104, l.co_name = 112, l.co_qualname = 112, l.co_linetable = 120, l.co_firstlineno = 40;
  l.ascii_size = 48, l.compact_size = 72;
  return l;
}

constexpr PyLayout make_311() {
  PyLayout l;
  l.minor = 11, l.kind = PyFrameKind::InterpFrame;
  l.rt_tss_key = 592, l.ts_thread_id = 152, l.ts_frame = 56, l.cframe_current = 8;
  l.f_previous = 48, l.f_code = 32, l.f_instr = 56, l.f_owner = 69;
  l.co_filename = 112, l.co_name = 120, l.co_qualname = 128, l.co_linetable = 136, l.co_firstlineno = 72;
  l.co_code = 184;
  l.ascii_size = 48, l.compact_size = 72;
  return l;
}

constexpr PyLayout make_312() {
  PyLayout l;
  l.minor = 12, l.kind = PyFrameKind::InterpFrame;
  l.rt_tss_key = 1544, l.ts_thread_id = 136, l.ts_frame = 56, l.cframe_current = 0;
  l.f_previous = 8, l.f_code = 0, l.f_instr = 56, l.f_owner = 70, l.owner_cstack = 3;
  l.co_filename = 112, l.co_name = 120, l.co_qualname = 128, l.co_linetable = 136, l.co_firstlineno = 68;
  l.co_code = 192;
  l.ascii_size = 40, l.compact_size = 56;
  return l;
}

// The frame and code offsets are replaced by the interpreter's _Py_DebugOffsets when it has
// them (shim/py_stack.cpp); the thread-state key is not among those.
constexpr PyLayout make_313() {
  PyLayout l;
  l.minor = 13, l.kind = PyFrameKind::InterpFrameDirect;
  l.rt_tss_key = 2160, l.ts_thread_id = 152, l.ts_frame = 72;
  l.f_previous = 8, l.f_code = 0, l.f_instr = 56, l.f_owner = 70, l.owner_cstack = 3;
  l.co_filename = 112, l.co_name = 120, l.co_qualname = 128, l.co_linetable = 136, l.co_firstlineno = 68;
  l.co_code = 200;
  l.ascii_size = 40, l.compact_size = 56;
  return l;
}

constexpr PyLayout k310 = make_310(), k311 = make_311(), k312 = make_312(), k313 = make_313();

}  // namespace

const PyLayout* builtin_py_layout(int minor) {
  switch (minor) {
    case 10: return &k310;
    case 11: return &k311;
    case 12: return &k312;
    case 13: return &k313;
    default: return nullptr;
  }
}

}  // namespace cutrace
