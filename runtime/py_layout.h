// Where CPython keeps what a Python call stack needs, per interpreter version: the offsets of the
// fields the shim reads on the app thread (shim/py_stack.h) and those the collector reads to name
// code objects (collector/py_code.h). Offsets are x86-64/aarch64 LP64 builds without
// Py_TRACE_REFS; 3.13 takes its own from the interpreter's _Py_DebugOffsets at run time.
#pragma once
#include <cstdint>

namespace cutrace {

enum class PyFrameKind : uint8_t {
  FrameObject,       // 3.10: tstate->frame, a PyFrameObject chain (f_back, f_lasti in code units)
  InterpFrame,       // 3.11, 3.12: tstate->cframe->current_frame, prev_instr
  InterpFrameDirect  // 3.13: tstate->current_frame, instr_ptr
};

struct PyLayout {
  int minor = 0;  // 3.minor
  PyFrameKind kind = PyFrameKind::InterpFrame;
  // _PyRuntimeState
  uint32_t rt_tss_key = 0;  // gilstate's Py_tss_t: {int _is_initialized; pthread_key_t _key}
  // PyThreadState
  uint32_t ts_thread_id = 0;  // unsigned long, pthread_self() of its thread
  uint32_t ts_frame = 0;      // 3.10 frame, 3.11/3.12 cframe, 3.13 current_frame
  uint32_t cframe_current = 0;
  // frames
  uint32_t f_previous = 0;
  uint32_t f_code = 0;
  uint32_t f_instr = 0;         // prev_instr / instr_ptr (pointer) or f_lasti (int, 3.10)
  int32_t f_owner = -1;         // char; -1: no owner field (3.10)
  uint8_t owner_cstack = 0xff;  // FRAME_OWNED_BY_CSTACK (3.12+): shim frames, no code
  // PyCodeObject
  uint32_t co_filename = 0, co_name = 0, co_qualname = 0, co_linetable = 0, co_firstlineno = 0;
  uint32_t co_code = 0;  // co_code_adaptive: the instructions, inline in the object (3.11+)
  // str and bytes
  uint32_t ascii_size = 0;    // sizeof(PyASCIIObject): compact ASCII data follows
  uint32_t compact_size = 0;  // sizeof(PyCompactUnicodeObject): other compact data follows
  uint32_t str_length = 16;   // Py_ssize_t length
  uint32_t str_state = 32;    // bit field: kind bits 2-4, compact bit 5, ascii bit 6
  uint32_t bytes_size = 16;   // ob_size
  uint32_t bytes_data = 32;   // ob_sval
};

// The built-in table for 3.10, 3.11 and 3.12 (and 3.13's thread-state key offset), nullptr for
// other minors.
const PyLayout* builtin_py_layout(int minor);

// What the shim found at load (shim/py_stack.cpp): null layout when no supported CPython is in
// the process. Written once before any thread records, read-only afterwards.
struct PyRuntimeInfo {
  const PyLayout* layout = nullptr;
  const char* runtime = nullptr;     // &_PyRuntime
  const void* code_type = nullptr;   // &PyCode_Type
  const void* str_type = nullptr;    // &PyUnicode_Type
  const void* bytes_type = nullptr;  // &PyBytes_Type
  uint32_t version_hex = 0;          // Py_Version, 0 if unknown (3.10)
};
extern PyRuntimeInfo g_pyrt;

}  // namespace cutrace
