#!/usr/bin/env bash
# Bytes on disk per kernel, format 1.1 (cutrace 0.1: 108-byte kernel records, LZ4) against 2.x
# (packed columns, LZ4), on the same records:
#   - fake-driver workloads recorded with the shim (test/e2e: launch_loop, sample_app, stress);
#     each recorded 2.x trace is re-written as 1.1 by bench/trace_rewrite.cpp;
#   - bench/jitter_trace_gen.cpp: 1M kernels with GPU-like jitter (the fake driver's timings are
#     regular), "end" timing (inferred starts, the default) and "exact" (measured starts).
#   bash bench/trace_size.sh            (builds what it needs; prints one line per trace)
# On a GPU, `cutrace dump --stats TRACE` prints the same "B/kernel" for a real run.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
make -s -j2 all "$B/test/fake_cuda/libcuda.so.1" "$B/test/e2e/launch_loop" "$B/test/e2e/sample_app" \
  "$B/test/e2e/stress" "$B/lib/libcutrace_format.a" >/dev/null
TMP=$(mktemp -d "${TMPDIR:-/tmp}/trace_size.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
LZ4_A=$( (ls /usr/lib/x86_64-linux-gnu/liblz4.a /usr/lib/liblz4.a 2>/dev/null || true) | head -1)
for t in trace_rewrite jitter_trace_gen; do
  ${CXX:-g++} -O2 -std=c++17 -I. "bench/$t.cpp" "$B/lib/libcutrace_format.a" "$LZ4_A" -o "$TMP/$t"
done
CT=$B/bin/cutrace
kernels() { "$CT" dump --stats "$1" | sed -n 's/^kernels \([0-9]*\),.*/\1/p'; }
row() {  # name, v1 file, v2 file
  local k b1 b2
  k=$(kernels "$3"); b1=$(stat -c %s "$2"); b2=$(stat -c %s "$3")
  python3 -c "k,b1,b2=$k,$b1,$b2; print(f'{\"$1\":28s} kernels {k:9d}  1.1: {b1:10d} B {b1/k:6.2f} B/kernel   2.0: {b2:10d} B {b2/k:6.2f} B/kernel  (x{b1/b2:.1f})')"
}
record() {  # name, program and arguments
  local name=$1 d=$TMP/$1
  shift
  mkdir -p "$d"
  CUTRACE_OUTPUT=$d CUTRACE_SAMPLE_HZ=0 LD_PRELOAD=$B/lib/libcutrace.so LD_LIBRARY_PATH=$B/test/fake_cuda \
    "$@" >/dev/null 2>&1
  local f
  f=$(ls "$d"/*.cutrace | head -1)
  "$TMP/trace_rewrite" "$f" "$d/v1.cutrace.v1" v1
  row "$name (recorded 2.0)" "$d/v1.cutrace.v1" "$f"
}
record launch_loop "$B/test/e2e/launch_loop" 200000
record sample_app "$B/test/e2e/sample_app"
record stress_8x20000 "$B/test/e2e/stress" 8 20000
for mode in end exact; do
  "$TMP/jitter_trace_gen" "$TMP/j1.cutrace" 1000000 4 "$mode" v1 >/dev/null
  "$TMP/jitter_trace_gen" "$TMP/j2.cutrace" 1000000 4 "$mode" v2 >/dev/null
  row "jitter 1M, 4 streams, $mode" "$TMP/j1.cutrace" "$TMP/j2.cutrace"
done
