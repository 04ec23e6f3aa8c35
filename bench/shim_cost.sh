#!/usr/bin/env bash
# The shim's own CPU cost per intercepted call, on the fake driver (no GPU needed); medians of
# REPS interleaved runs of N calls; fails if any recorded run dropped a record.
#  1. Per cuLaunchKernel: without the shim, with the shim outside a capture window, and recording
#     with each GPU timing mode (call stacks off).
#  2. Call stacks (CUTRACE_BACKTRACE none|sync|all, default GPU timing) per launch, in the
#     launching thread's CPU time (LOOP_CLOCK=cpu: robust on a loaded machine), called from
#     main (a shallow stack: about 6 frames with the shim's own) and from 20 frames deeper (the
#     unwind costs per frame; at most 28 frames are unwound). `sync` unwinds no launch: its row
#     shows that launches pay nothing for it. `all` unwinds every launch: its added cost is the
#     cost of one captured stack, which is what each synchronisation and blocking copy pays in
#     `sync` mode (same code path; the fake driver's cuStreamSynchronize sleeps in
#     clock_nanosleep, too noisy to measure a few microseconds on). A sync pays it before it
#     starts waiting, while the GPU is still busy.
#   bash bench/shim_cost.sh [REPS] [N]        (after `make all build/test/e2e/launch_loop`)
set -u
REPS=${1:-5}; N=${2:-200000}; B=${BUILD:-build}
export LD_LIBRARY_PATH=$PWD/$B/test/fake_cuda
T=$(mktemp -d)
SHIM=(LD_PRELOAD=$PWD/$B/lib/libcutrace.so CUTRACE_OUTPUT=$T/o CUTRACE_SAMPLE_HZ=0)
run() {  # label, probe args (kind depth), env...
  local label=$1 kind=$2 depth=$3; shift 3
  env "$@" "$B/test/e2e/launch_loop" "$N" "$kind" "$depth" >> "$T/$label"
}
for r in $(seq "$REPS"); do
  run base launch 0
  run off launch 0 "${SHIM[@]}" CUTRACE_CAPTURE_RANGE=manual CUTRACE_BACKTRACE=none
  for t in none end events; do run "$t" launch 0 "${SHIM[@]}" CUTRACE_GPU_TIMING=$t CUTRACE_BACKTRACE=none; done
  for kind in launch; do
    for depth in 0 20; do
      run "bt_base_${kind}_$depth" "$kind" "$depth" LOOP_CLOCK=cpu
      for bt in none sync all; do
        run "bt_${bt}_${kind}_$depth" "$kind" "$depth" LOOP_CLOCK=cpu "${SHIM[@]}" CUTRACE_BACKTRACE=$bt
      done
    done
  done
done
# Every recorded run must have dropped nothing: a run that dropped would time the drop path.
dropped=$("$B/bin/cutrace" summary --json "$T/o" | python3 -c 'import json, sys; print(json.load(sys.stdin)["dropped_records"])')
if [[ $dropped != 0 ]]; then
  echo "shim_cost.sh: the recorded runs dropped $dropped records: raise CUTRACE_BUFFER_MB" >&2
  rm -rf "$T"
  exit 1
fi
echo "recorded runs: 0 records dropped"
python3 - "$T" <<'PY'
import os, statistics, sys
t = sys.argv[1]
med = {k: statistics.median(float(x) for x in open(f"{t}/{k}")) for k in os.listdir(t) if k != "o"}
print(f"{'configuration':36} {'ns/launch':>10} {'added ns':>9}")
labels = {"base": "no shim", "off": "shim, outside a capture window", "none": "recording, --gpu-timing none",
          "end": "recording, end event", "events": "recording, start+end events"}
for k, label in labels.items():
    print(f"{label:36} {med[k]:10.1f} {med[k] - med['base']:+9.1f}")
print()
print("call stacks, default GPU timing: thread CPU ns per launch (added to the same launch without the shim)")
cols = [("launch", 0), ("launch", 20)]
print(f"{'--backtrace':14}" + "".join(f"{f'{k} +{d} frames':>24}" for k, d in cols))
for bt in ("base", "none", "sync", "all"):
    cells = []
    for k, d in cols:
        v, b = med[f"bt_{bt}_{k}_{d}"], med[f"bt_base_{k}_{d}"]
        cells.append(f"{v:10.1f}" + (f" ({v - b:+9.1f})" if bt != "base" else " " * 12))
    print(f"{'no shim' if bt == 'base' else bt:14}" + "".join(f"{c:>24}" for c in cells))
PY
rm -rf "$T"
