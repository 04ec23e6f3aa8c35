#!/usr/bin/env bash
# The shim's own CPU cost per intercepted launch, on the fake driver (no GPU needed): host ns per
# cuLaunchKernel call without the shim, with the shim outside a capture window, and recording
# with each GPU timing mode; medians of REPS interleaved runs of N launches.
#   bash bench/shim_cost.sh [REPS] [N]        (after `make all build/test/e2e/launch_loop`)
set -u
REPS=${1:-5}; N=${2:-200000}; B=${BUILD:-build}
export LD_LIBRARY_PATH=$PWD/$B/test/fake_cuda
T=$(mktemp -d)
run() {  # label, env...
  local label=$1; shift
  env "$@" "$B/test/e2e/launch_loop" "$N" >> "$T/$label"
}
for r in $(seq "$REPS"); do
  run base
  run off LD_PRELOAD=$PWD/$B/lib/libcutrace.so CUTRACE_OUTPUT=$T/o CUTRACE_CAPTURE_RANGE=manual CUTRACE_SAMPLE_HZ=0
  run none LD_PRELOAD=$PWD/$B/lib/libcutrace.so CUTRACE_OUTPUT=$T/o CUTRACE_GPU_TIMING=none CUTRACE_SAMPLE_HZ=0
  run end LD_PRELOAD=$PWD/$B/lib/libcutrace.so CUTRACE_OUTPUT=$T/o CUTRACE_GPU_TIMING=end CUTRACE_SAMPLE_HZ=0
  run exact LD_PRELOAD=$PWD/$B/lib/libcutrace.so CUTRACE_OUTPUT=$T/o CUTRACE_GPU_TIMING=exact CUTRACE_SAMPLE_HZ=0
done
python3 - "$T" <<'PY'
import statistics, sys
t = sys.argv[1]
med = {k: statistics.median(float(x) for x in open(f"{t}/{k}")) for k in ("base", "off", "none", "end", "exact")}
print(f"{'configuration':34} {'ns/launch':>10} {'added ns':>9}")
labels = {"base": "no shim", "off": "shim, outside a capture window", "none": "recording, --gpu-timing none",
          "end": "recording, end event (default)", "exact": "recording, start+end events"}
for k, label in labels.items():
    print(f"{label:34} {med[k]:10.1f} {med[k] - med['base']:+9.1f}")
PY
rm -rf "$T"
