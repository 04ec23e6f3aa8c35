// Unwinding with the GCC unwinder (_Unwind_Backtrace from libgcc_eh, already linked statically
// into the shim for its own C++ exceptions). Not libunwind: Debian's libunwind.a is not
// position-independent (R_X86_64_32 relocations: it cannot be linked into a shared object) and
// the target machines have no libunwind.so. With glibc >= 2.35 libgcc finds each frame's FDE
// through _dl_find_object, which takes no lock and makes no system call; the walk itself uses
// only the stack.
#include "shim/backtrace.h"
#include <link.h>
#include <unwind.h>
#include "shim/py_stack.h"

namespace cutrace {

namespace {
uint64_t g_shim_lo = 0, g_shim_hi = 0;

int find_shim(struct dl_phdr_info* info, size_t, void* data) {
  uint64_t me = reinterpret_cast<uint64_t>(data);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    if (a < lo) lo = a;
    if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
  }
  if (me < lo || me >= hi) return 0;
  g_shim_lo = lo, g_shim_hi = hi;
  return 1;
}

_Unwind_Reason_Code add_frame(struct _Unwind_Context* ctx, void* arg) {
  auto* slot = static_cast<StackSlot*>(arg);
  uint64_t pc = _Unwind_GetIP(ctx);
  if (pc == 0) return _URC_END_OF_STACK;
  slot->pc[slot->depth++] = pc;
  return slot->depth < uint32_t(kStackCaptureFrames) ? _URC_NO_REASON : _URC_END_OF_STACK;
}
}  // namespace

void capture_stack(StackSlot* slot) {
  slot->depth = 0;
  _Unwind_Backtrace(add_frame, slot);
}

void backtrace_init() {
  g_backtrace = config().backtrace;
  py_stack_init();
  dl_iterate_phdr(find_shim, reinterpret_cast<void*>(&capture_stack));
}

bool in_shim(uint64_t pc) { return pc >= g_shim_lo && pc < g_shim_hi; }

}  // namespace cutrace
