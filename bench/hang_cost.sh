#!/usr/bin/env bash
# The hang watchdog's cost (--hang-timeout, collector/hang.cpp) on the fake driver: N launches of a
# 1 ns kernel (test/e2e/launch_loop) recorded with CUTRACE_HANG_TIMEOUT=300 and =0, interleaved,
# REPS runs each; medians of the launching thread's wall and CPU ns per launch, the launch rate,
# and the collector thread's CPU time (the trace's collector_cpu_ns), where the watchdog runs.
#   bash bench/hang_cost.sh [REPS] [N]        (after `make all build/test/e2e/launch_loop`)
set -u
REPS=${1:-5}; N=${2:-200000}; B=${BUILD:-build}
export LD_LIBRARY_PATH=$PWD/$B/test/fake_cuda
T=$(mktemp -d)
for r in $(seq "$REPS"); do
  for h in 300 0; do
    for clock in wall cpu; do
      d=$T/o_${h}_${clock}_$r
      env LD_PRELOAD="$PWD/$B/lib/libcutrace.so" CUTRACE_OUTPUT="$d" CUTRACE_SAMPLE_HZ=0 CUTRACE_BACKTRACE=none \
        CUTRACE_HANG_TIMEOUT=$h LOOP_CLOCK=$clock "$B/test/e2e/launch_loop" "$N" launch 0 >> "$T/${clock}_$h"
      "$B/bin/cutrace" dump --type Meta "$d"/*.cutrace | sed -n 's/.*key=#[0-9]* "collector_cpu_ns" value=#[0-9]* "\([0-9]*\)".*/\1/p' \
        >> "$T/collector_$h"
      "$B/bin/cutrace" summary --json "$d" |
        python3 -c 'import json,sys; d=json.load(sys.stdin)["dropped_records"]; sys.exit(d != 0)' ||
        { echo "hang_cost.sh: a run dropped records: raise CUTRACE_BUFFER_MB" >&2; rm -rf "$T"; exit 1; }
    done
  done
done
python3 - "$T" "$REPS" "$N" <<'PY'
import statistics, sys
t, reps, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
med = lambda name: statistics.median(float(x) for x in open(f"{t}/{name}") if x.strip())
print(f"{reps} interleaved runs each of {n} launches, medians (0 records dropped)")
print(f"{'--hang-timeout':15} {'wall ns/launch':>15} {'launches/s':>12} {'CPU ns/launch':>14} {'collector CPU ms/run':>21}")
for h in ("300", "0"):
    w = med(f"wall_{h}")
    print(f"{h:15} {w:15.1f} {1e9 / w:12.0f} {med(f'cpu_{h}'):14.1f} {med(f'collector_{h}') / 1e6:21.1f}")
d = med("wall_300") - med("wall_0")
print(f"difference (300 - 0): {d:+.1f} ns/launch wall, {med('cpu_300') - med('cpu_0'):+.1f} ns/launch CPU")
PY
rm -rf "$T"
