// The collector thread: drains every thread's ring, resolves GPU times from the pooled events,
// names kernels, samples CPU/GPU utilisation and writes the trace file. It starts with the
// first recorded call of the process, so processes that never use CUDA write nothing; with
// capture windows (it then starts when CUDA is first bound), a process in which no window opened
// removes its file at exit.
#pragma once
#include <cuda.h>
#include <cstdint>

namespace cutrace {

// Slow path of the first recorded call: opens the output file and starts the thread.
// False if capture cannot happen (output not writable, ...): capture is then switched off.
bool collector_ensure_started();
// The collector thread runs (started, not yet shut down).
bool collector_running();

// Blocks the caller until the collector has drained every ring (and, with wait_gpu, resolved
// every pending GPU time). For teardown calls: context destroy, module unload. No-op when the
// collector is not running or when called from the collector itself.
void collector_sync(bool wait_gpu);

// A context / device is being destroyed or reset: drop its cached state after the sync.
void collector_forget_context(CUcontext ctx);

// Final flush and close (atexit, fatal signal). Idempotent.
void collector_shutdown(uint32_t end_flags);

// exec*: shut down cleanly before the real exec; start afresh if the exec failed.
void collector_before_exec();
void collector_after_failed_exec();

// fork() child: the parent's collector thread does not exist here; start afresh on demand.
void collector_after_fork_child();

}  // namespace cutrace
