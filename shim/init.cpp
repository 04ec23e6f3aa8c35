// Load-time setup: read the configuration, pick the tick source, prepare for fork. Nothing here
// touches CUDA, creates threads or files: a process that never uses CUDA stays untouched.
#include <pthread.h>
#include "collector/collector.h"
#include "runtime/config.h"
#include "runtime/thread_state.h"
#include "shim/backtrace.h"
#include "shim/op.h"
#include "shim/py_stack.h"

namespace cutrace {

GpuTiming g_timing = GpuTiming::End;
void choose_tick_source();

namespace {
void after_fork_child() { collector_after_fork_child(); }

__attribute__((constructor)) void cutrace_init() {
  load_config();
  g_timing = config().timing;
  backtrace_init();
  choose_tick_source();
  pthread_atfork(nullptr, nullptr, after_fork_child);
}
}  // namespace

ThreadState* thread_state_slow() {
  if (t_in_shim || !collector_ensure_started()) return nullptr;
  py_stack_report();
  return registry_add_current_thread();
}

}  // namespace cutrace
