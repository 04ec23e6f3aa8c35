// Reading the calling thread's Python frames without the interpreter's help.
//
// The thread's PyThreadState is the value of the interpreter's own thread-specific key (the
// gilstate Py_tss_t in _PyRuntime, set for every thread that ran Python: main, threading,
// PyGILState_Ensure), read with pthread_getspecific: no lock, no system call, and right whether
// or not the thread holds the GIL (a GIL-releasing ctypes call clears the "current" thread state,
// not this key). Its thread_id must be pthread_self(), or nothing is read.
//
// Plain loads, not process_vm_readv (a system call per read, ~1 us): every address read is the
// calling thread's own live interpreter state. It is inside this C call, so its frames cannot be
// popped or freed under us, and each frame holds a reference to its code object. The layout is
// the one of the version detected at load; on top of that every frame pointer must be aligned
// and every code object's ob_type must be &PyCode_Type, else the walk skips the frame (3.13
// frames of non-code executables, 3.12+ C-stack entry frames) or stops (anything else).
#include "shim/py_stack.h"
#include <dlfcn.h>
#include <pthread.h>
#include <atomic>
#include <cstring>
#include "runtime/config.h"
#include "runtime/py_layout.h"

namespace cutrace {

namespace {

PyLayout g_layout313;  // 3.13: the built-in table updated from _Py_DebugOffsets
// An unsupported interpreter's version, warned about once the process uses CUDA (py_stack_report):
// not at load, where every Python process under `cutrace record` would print it.
int g_unsupported_minor = -2;  // -2: nothing to report; -1: older than 3.10
std::atomic<bool> g_reported{false};

template <class T>
inline T at(const char* base, uint32_t off) {
  T v;
  memcpy(&v, base + off, sizeof v);
  return v;
}

// 3.13's _Py_DebugOffsets (the first member of _PyRuntime): an 8-byte cookie "xdebugpy", the
// version (PY_VERSION_HEX), then groups of uint64 offsets; only the groups used here.
bool apply_debug_offsets(const char* rt, PyLayout* l) {
  if (memcmp(rt, "xdebugpy", 8) != 0) return false;
  uint64_t version = at<uint64_t>(rt, 8);
  if ((version >> 16) != 0x030d) return false;
  auto u = [&](uint32_t off) { return at<uint64_t>(rt, off); };
  const uint32_t ts = 152, fr = 224, co = 272, by = 512, un = 536;
  uint64_t v[] = {u(ts + 32), u(ts + 40), u(fr + 8),  u(fr + 16), u(fr + 24), u(fr + 40),
                  u(co + 8),  u(co + 16), u(co + 24), u(co + 32), u(co + 40), u(co + 72),
                  u(by + 8),  u(by + 16), u(un + 8),  u(un + 16), u(un + 24)};
  for (uint64_t x : v)
    if (x > 4096) return false;  // not offsets into these objects: keep the built-in table
  l->ts_frame = uint32_t(v[0]), l->ts_thread_id = uint32_t(v[1]);
  l->f_previous = uint32_t(v[2]), l->f_code = uint32_t(v[3]), l->f_instr = uint32_t(v[4]);
  l->f_owner = int32_t(v[5]);
  l->co_filename = uint32_t(v[6]), l->co_name = uint32_t(v[7]), l->co_qualname = uint32_t(v[8]);
  l->co_linetable = uint32_t(v[9]), l->co_firstlineno = uint32_t(v[10]), l->co_code = uint32_t(v[11]);
  l->bytes_size = uint32_t(v[12]), l->bytes_data = uint32_t(v[13]);
  l->str_state = uint32_t(v[14]), l->str_length = uint32_t(v[15]), l->ascii_size = uint32_t(v[16]);
  return true;
}

}  // namespace

void py_stack_init() {
  g_py_stacks = PyStacks::None;
  if (config().py_stacks == PyStacks::None) return;
  const char* rt = static_cast<const char*>(dlsym(RTLD_DEFAULT, "_PyRuntime"));
  if (!rt) {  // not a Python process (or libpython dlopen'ed later: not followed), or before 3.7
    if (dlsym(RTLD_DEFAULT, "Py_GetVersion")) g_unsupported_minor = -1;
    return;
  }
  // Py_Version (3.11+) is data; 3.10 has no Py_Version but is the first with PyAIter_Check.
  const auto* ver = static_cast<const uint32_t*>(dlsym(RTLD_DEFAULT, "Py_Version"));
  int major = 3, minor = -1;
  if (ver) major = int(*ver >> 24), minor = int((*ver >> 16) & 0xff);
  else if (dlsym(RTLD_DEFAULT, "PyAIter_Check")) minor = 10;
  const PyLayout* l = major == 3 ? builtin_py_layout(minor) : nullptr;
  const void* code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
  if (!l || !code_type) {
    g_unsupported_minor = major == 3 ? minor : 99;
    return;
  }
  if (minor == 13) {
    g_layout313 = *l;
    if (!apply_debug_offsets(rt, &g_layout313))
      log_info("CPython 3.13 without readable _Py_DebugOffsets: using the 3.13.0 layout");
    l = &g_layout313;
  }
  g_pyrt.layout = l;
  g_pyrt.runtime = rt;
  g_pyrt.code_type = code_type;
  g_pyrt.str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  g_pyrt.bytes_type = dlsym(RTLD_DEFAULT, "PyBytes_Type");
  g_pyrt.version_hex = ver ? *ver : 0;
  g_py_stacks = config().py_stacks;
  log_info("CPython 3.%d found: Python call stacks on", minor);
}

void py_stack_report() {
  if (g_unsupported_minor == -2 || g_reported.exchange(true, std::memory_order_relaxed)) return;
  if (g_unsupported_minor < 0)
    log_warn("CPython older than 3.10: Python call stacks not supported; native stacks only");
  else
    log_warn("CPython 3.%d: Python call stacks not supported (3.10 to 3.13); native stacks only", g_unsupported_minor);
}

uint32_t capture_py_stack(PyRawFrame* out, uint32_t max) {
  const PyLayout* l = g_pyrt.layout;
  if (!l) return 0;
  const char* rt = g_pyrt.runtime;
  // The key exists once the interpreter is initialised; until then no thread runs Python.
  if (at<int>(rt, l->rt_tss_key) == 0) return 0;
  auto key = pthread_key_t(at<unsigned>(rt, l->rt_tss_key + 4));
  const char* ts = static_cast<const char*>(pthread_getspecific(key));
  if (!ts || (reinterpret_cast<uintptr_t>(ts) & 7)) return 0;
  if (at<unsigned long>(ts, l->ts_thread_id) != static_cast<unsigned long>(pthread_self())) return 0;
  const char* f = at<const char*>(ts, l->ts_frame);
  if (l->kind == PyFrameKind::InterpFrame && f) f = at<const char*>(f, l->cframe_current);
  const void* code_type = g_pyrt.code_type;
  uint32_t n = 0;
  // Bounded: a chain that loops (a wrong layout) ends after this many frames.
  for (int guard = 0; f && n < max && guard < 4096; ++guard) {
    if (reinterpret_cast<uintptr_t>(f) & 7) break;
    const char* next = at<const char*>(f, l->f_previous);
    if (l->f_owner >= 0 && uint8_t(at<char>(f, uint32_t(l->f_owner))) == l->owner_cstack) {
      f = next;
      continue;
    }
    const char* code = at<const char*>(f, l->f_code);
    if (!code || (reinterpret_cast<uintptr_t>(code) & 7)) break;
    if (at<const void*>(code, 8) != code_type) {  // ob_type: 3.13 frames may run other executables
      f = next;
      continue;
    }
    int32_t lasti;
    if (l->kind == PyFrameKind::FrameObject) {
      lasti = at<int>(f, l->f_instr);  // f_lasti, in code units
    } else {
      const char* instr = at<const char*>(f, l->f_instr);
      intptr_t d = instr - (code + l->co_code);
      lasti = d < 0 ? -1 : int32_t(d / 2);
    }
    out[n].code = reinterpret_cast<uint64_t>(code);
    out[n].lasti = lasti;
    out[n].first_line = at<uint32_t>(code, l->co_firstlineno);
    ++n;
    f = next;
  }
  return n;
}

}  // namespace cutrace
