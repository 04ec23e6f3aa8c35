#!/usr/bin/env bash
# The flight recorder's cost (--capture-range flight:SECONDS) against plain recording, on the fake
# driver: N launches of a 1 ns kernel (test/e2e/launch_loop), recorded in process mode and with
# CUTRACE_CAPTURE_RANGE=flight:10 (no trigger: nothing written but the definitions), interleaved,
# REPS runs each; medians of the launching thread's wall and CPU ns per launch, the collector
# thread's CPU time (the trace's collector_cpu_ns) and the trace file's size.
#   bash bench/flight_cost.sh [REPS] [N]        (after `make all build/test/e2e/launch_loop`)
set -u
REPS=${1:-5}; N=${2:-200000}; B=${BUILD:-build}
export LD_LIBRARY_PATH=$PWD/$B/test/fake_cuda
T=$(mktemp -d)
for r in $(seq "$REPS"); do
  for mode in process flight:10; do
    m=${mode%%:*}
    for clock in wall cpu; do
      d=$T/o_${m}_${clock}_$r
      env LD_PRELOAD="$PWD/$B/lib/libcutrace.so" CUTRACE_OUTPUT="$d" CUTRACE_SAMPLE_HZ=0 CUTRACE_BACKTRACE=none \
        CUTRACE_CAPTURE_RANGE=$mode LOOP_CLOCK=$clock "$B/test/e2e/launch_loop" "$N" launch 0 >> "$T/${clock}_$m"
      "$B/bin/cutrace" dump --type Meta "$d"/*.cutrace | sed -n 's/.*key=#[0-9]* "collector_cpu_ns" value=#[0-9]* "\([0-9]*\)".*/\1/p' \
        >> "$T/collector_$m"
      stat -c %s "$d"/*.cutrace >> "$T/size_$m"
      "$B/bin/cutrace" summary --json "$d" |
        python3 -c 'import json,sys; d=json.load(sys.stdin)["dropped_records"]; sys.exit(d != 0)' ||
        { echo "flight_cost.sh: a run dropped records: raise CUTRACE_BUFFER_MB" >&2; rm -rf "$T"; exit 1; }
    done
  done
done
python3 - "$T" "$REPS" "$N" <<'PY'
import statistics, sys
t, reps, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
med = lambda name: statistics.median(float(x) for x in open(f"{t}/{name}") if x.strip())
print(f"{reps} interleaved runs each of {n} launches, medians (0 records dropped)")
print(f"{'capture range':15} {'wall ns/launch':>15} {'CPU ns/launch':>14} {'collector CPU ms/run':>21} {'file KiB':>9}")
for m in ("process", "flight"):
    print(f"{m:15} {med(f'wall_{m}'):15.1f} {med(f'cpu_{m}'):14.1f} {med(f'collector_{m}') / 1e6:21.1f}"
          f" {med(f'size_{m}') / 1024:9.0f}")
print(f"difference (flight - process): {med('wall_flight') - med('wall_process'):+.1f} ns/launch wall, "
      f"{med('cpu_flight') - med('cpu_process'):+.1f} ns/launch CPU")
PY
rm -rf "$T"
