#!/usr/bin/env bash
# What the CPU counter sampling costs the app's threads: launch rate of launch_loop (N launches of
# a 1 ns fake kernel) recording with the samplers off (--sample-hz 0), sampling at 10 Hz without
# counters (CUTRACE_CPU_COUNTERS=off) and at 10 Hz with the default counters (software ones, plus
# the hardware ones where the PMU allows). Runs interleaved, REPS of each, medians; both the
# launching thread's CPU time per launch (LOOP_CLOCK=cpu) and wall-clock time per launch.
#   bash bench/counter_cost.sh [REPS] [N]        (after `make all build/test/e2e/launch_loop`)
set -u
REPS=${1:-5}; N=${2:-3000000}; B=${BUILD:-build}
export LD_LIBRARY_PATH=$PWD/$B/test/fake_cuda
T=$(mktemp -d)
SHIM=(LD_PRELOAD=$PWD/$B/lib/libcutrace.so CUTRACE_OUTPUT=$T/o CUTRACE_BACKTRACE=none CUTRACE_GPU_TIMING=none)
run() {  # label, env...
  local label=$1; shift
  env "$@" LOOP_CLOCK=cpu "$B/test/e2e/launch_loop" "$N" launch 0 >> "$T/cpu_$label" 2>/dev/null
  env "$@" "$B/test/e2e/launch_loop" "$N" launch 0 >> "$T/wall_$label" 2>/dev/null
}
for r in $(seq "$REPS"); do
  run off "${SHIM[@]}" CUTRACE_SAMPLE_HZ=0
  run nocounters "${SHIM[@]}" CUTRACE_SAMPLE_HZ=10 CUTRACE_CPU_COUNTERS=off
  run counters "${SHIM[@]}" CUTRACE_SAMPLE_HZ=10
done
summary=$("$B/bin/cutrace" summary --json "$T/o")
python3 - "$T" "$REPS" "$N" "$summary" <<'PY'
import json, os, statistics, sys
t, reps, n, j = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
print(f"{reps} interleaved runs of {n} launches each; medians")
if j["dropped_records"]:
    print(f"WARNING: the recorded runs dropped {j['dropped_records']} records")
recorded = [r for r in j["ranks"] if r["cpu_counters"]["counters"]]
if recorded:
    c = recorded[0]["cpu_counters"]
    names = sorted({x["name"] for x in c["counters"] if x["scope"] == "process"})
    print(f"counters read (one 10 Hz run): {', '.join(names)}; {c['samples']} samples")
    if c["missing"]:
        print("missing: " + "; ".join(f"{m['name']}{' per CPU' if m['scope'] == 'cpu' else ''}: {m['reason']}" for m in c["missing"]))
labels = {"off": "--sample-hz 0", "nocounters": "10 Hz, CUTRACE_CPU_COUNTERS=off", "counters": "10 Hz, default counters"}
med = {k: statistics.median(float(x) for x in open(f"{t}/{k}")) for k in os.listdir(t) if k != "o"}
print(f"{'configuration':34} {'CPU ns/launch':>14} {'wall ns/launch':>15} {'launches/s (wall)':>18}")
for k, label in labels.items():
    print(f"{label:34} {med['cpu_' + k]:14.1f} {med['wall_' + k]:15.1f} {1e9 / med['wall_' + k]:18,.0f}")
for k in ("cpu", "wall"):
    runs = {x: sorted(float(v) for v in open(f"{t}/{k}_{x}")) for x in labels}
    print(f"{k} runs: " + "; ".join(f"{x} {', '.join(f'{v:.1f}' for v in vs)}" for x, vs in runs.items()))
PY
rm -rf "$T"
