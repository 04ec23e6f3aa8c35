/* cutrace's annotation and capture-control API, exported by libcutrace.so (the preloaded shim).
 * Plain C so that any language reaches it: the Python module `cutrace` calls it through ctypes.
 * Annotations become the same Range/Mark records as NVTX ranges (source = Api). Every function is
 * safe to call from any thread; when the shim is not recording they return at once. */
#ifndef CUTRACE_API_H
#define CUTRACE_API_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 for this API version; a caller that finds the symbol knows the shim is loaded. */
int cutrace_api_version(void);

/* Push/pop ranges nest per thread. */
void cutrace_range_push(const char* name);
void cutrace_range_pop(void);

/* Start/end ranges may end on another thread; the handle identifies the range (0 = none). */
uint64_t cutrace_range_start(const char* name);
void cutrace_range_end(uint64_t handle);

/* An instant event. */
void cutrace_mark(const char* name);

/* Capture windows: start opens one (as cuProfilerStart does), stop closes it.
 * cutrace_capturing() is 1 while records are being taken. */
void cutrace_capture_start(void);
void cutrace_capture_stop(void);
// The smprof API (SMProfiler) is in use: without a capture range chosen, windows are its
// start/stop pairs from now on (the window open since the process began closes). 0 when the user
// chose the whole process (`--capture-range process`): its start/stop calls then change nothing.
int cutrace_capture_by_api(void);
int cutrace_capturing(void);

#ifdef __cplusplus
}
#endif
#endif
