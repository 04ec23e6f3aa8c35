#!/usr/bin/env bash
# One device call for what the sixth session could not measure on the H200 (its device time was
# spent): CUPTI's driver callbacks going off after the last capture window.
#  1. GPT small with NVTX steps 60-79 recorded (the last window) under CUPTI, CUTRACE_VERBOSE: the
#     collector says "driver callbacks off after the last capture window"; no operation without a
#     GPU time; the window's kernels.
#  2. In one process, the steps after that window against the steps before it, with base runs as
#     the control (bench/gpu/window_ab.py, configs base, cupti-once, none-once: post/pre).
#   CUTRACE=... WORKLOADS=... bash bench/gpu/proof_run7.sh OUT [REPS] [STEPS]
set -u
OUT=${1:-/tmp/cutrace-proof7}; REPS=${2:-3}; STEPS=${3:-300}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }

step "GPT small, NVTX steps 60-79 under CUPTI (the last window), then 100 more steps"
CUTRACE_VERBOSE=1 $CT record -o "$OUT/last" --gpu-timing cupti --capture-range 'nvtx:step_*' --capture-steps 60-79 -- \
  python3 "$W/train_gpt.py" --preset small --nvtx --steps 175 2> "$OUT/last.err" | tail -1 | cut -c1-100
grep -E "CUPTI: (driver callbacks|[0-9]+ GPU records)|without GPU times|opened after the last" "$OUT/last.err" |
  sed 's/^cutrace\[[0-9]*\] //'
$CT summary "$OUT/last" | sed -n '/^Capture windows/,/^$/p'
$CT summary --json "$OUT/last" | python3 -c 'import json,sys; j=json.load(sys.stdin); r=j["ranks"][0]; print("kernels", r["kernels"], "windows", len(r["windows"]), "untimed", sum(k["untimed"] for k in j["kernels"]))'

step "after the window against before it, in one process: window_ab.py, $REPS reps, $STEPS steps"
python3 "$(dirname "$0")/window_ab.py" "$OUT/wab" --reps "$REPS" --steps "$STEPS" --configs base,cupti-once,none-once \
  --cutrace "$CT" --workloads "$W"
