// Capture windows. Outside a window every wrapper takes the one relaxed check and forwards; no
// record, no event. Each window's edges are written to the trace (WindowRec) in order with the
// records around them.
#pragma once
#include <cstdint>

namespace cutrace {

// From an application thread (cuProfilerStart/Stop, the C API, an NVTX trigger range).
void capture_begin_from_app(const char* reason);
// `last`: no window can follow (NVTX steps without a repeat): CUPTI's callbacks may go off.
void capture_end_from_app(const char* reason, bool last = false);
// The smprof API is in use (SMProfiler created): with no capture range chosen, its
// start_profiling/stop_profiling pairs become the windows; the whole-process window closes now.
// False when the user chose the whole process (CUTRACE_CAPTURE_RANGE=process): the smprof calls
// then leave capture as it is.
bool capture_by_api();

// NVTX trigger (CUTRACE_CAPTURE_RANGE=nvtx): called for every range push and pop, even while
// capture is off, with the push's level in its domain on this thread (pop: the level it ends).
void capture_nvtx_push(const char* name, const void* domain, int depth);
void capture_nvtx_pop(const void* domain, int depth);

}  // namespace cutrace
