// The cost of reading one Python call stack (shim/py_stack.cpp's capture_py_stack), in the
// interpreter that loads this library: bench/py_stack_cost.py calls bench_py_stack at a chosen
// Python depth through ctypes.PyDLL. Built by bench/py_stack_cost.sh from the shim's own sources.
#include <time.h>
#include <cstdint>
#include "shim/py_stack.h"

namespace {
int64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}
}  // namespace

// Reads the calling thread's Python stack `iters` times; returns the best of `rounds` means in
// ns per stack, the frames read in *depth (-1: no supported CPython found).
extern "C" __attribute__((visibility("default"))) double bench_py_stack(int iters, int rounds, int* depth) {
  static bool ready = false;
  if (!ready) cutrace::py_stack_init(), ready = true;
  cutrace::PyRawFrame frames[cutrace::kPyCaptureFrames];
  *depth = int(cutrace::capture_py_stack(frames, cutrace::kPyCaptureFrames));
  if (*depth == 0 && cutrace::g_py_stacks == cutrace::PyStacks::None) *depth = -1;
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    int64_t t0 = now_ns();
    uint32_t sum = 0;
    for (int i = 0; i < iters; ++i) sum += cutrace::capture_py_stack(frames, cutrace::kPyCaptureFrames);
    int64_t t1 = now_ns();
    asm volatile("" : : "r"(sum));
    double ns = double(t1 - t0) / iters;
    if (ns < best) best = ns;
  }
  return best;
}
