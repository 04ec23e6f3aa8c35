// Settings read once from the environment when the shim loads (cutrace record sets them).
#pragma once
#include <atomic>
#include <string>

namespace cutrace {

enum class GpuTiming { End, Exact, None, Cupti };

struct Config {
  std::string out_dir;         // CUTRACE_OUTPUT (default ./cutrace-trace)
  GpuTiming timing = GpuTiming::End;  // CUTRACE_GPU_TIMING=end|exact|cupti|none
  int sample_hz = 10;          // CUTRACE_SAMPLE_HZ (0 disables the samplers)
  bool verbose = false;        // CUTRACE_VERBOSE=1
  bool enabled = true;         // CUTRACE_DISABLE=1 turns the shim into a pass-through
};

const Config& config();
void load_config();

// The one check every wrapper makes first: capture on or off.
extern std::atomic<bool> g_capture_on;
inline bool capture_on() { return __builtin_expect(g_capture_on.load(std::memory_order_relaxed), 1); }

// Number of stream captures in progress in the process (graph capture): when non-zero, wrappers
// ask the driver whether their stream is capturing before recording events.
extern std::atomic<int> g_active_captures;

void log_warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace cutrace
