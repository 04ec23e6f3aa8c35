#!/usr/bin/env bash
# Eighth session, second device call: CUPTI detached outside capture windows (cuptiFinalize after
# the start-up check and after every window, attached again for the next). That build was not
# kept: with --gpu-sample 0.2 it lost 12,650 operations' GPU times, and after a window the launch
# loop still paid CUPTI's cost. What was kept (the detach after the start-up check and after the
# last window) is measured by proof_run10.sh.
#  1. The launch loop (bench/gpu/launch_ab.py): a preloaded cutrace in CUPTI mode before any
#     window against no cutrace (was +1.46 us per launch), after a window against before it, and
#     a window's cost against the unrecorded blocks beside it (now against a detached CUPTI).
#  2. GPT small with a window every other 5 steps (dozens of attach/detach cycles, two launching
#     threads): every kernel of every window has its GPU time; CUPTI's log of the switches.
#  3. The same with --gpu-sample 0.2 (collection on and off every 200 ms).
#  4. torch.compile CUDA graphs (reduce-overhead) against torch.profiler (bench/gpu/torch_graphs.sh):
#     graph replays after a detach and attach.
#   CUTRACE=... LAUNCH_AB=... WORKLOADS=... bash bench/gpu/proof_run9.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-proof9}; REPS=${2:-4}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }
stats() { python3 "$H/../suite.py" stats "$1" --cutrace "$CT"; }  # kernels, operations without GPU time

step "launch loop: $REPS reps"
python3 "$H/launch_ab.py" run "$OUT/ab" --reps "$REPS" --configs base,off-direct,none,cupti,raw-cupti --cutrace "$CT" \
  --bin "${LAUNCH_AB:-$PWD/build/bench/launch_ab}" --cpus 2-9 -- --pre 20 --cycles 40 --block 2000 --gpu | tail -22

step "GPT small, NVTX windows of steps 5-9, 15-19, ... (300 steps), CUPTI"
CUTRACE_VERBOSE=1 $CT record -o "$OUT/win" --gpu-timing cupti --capture-range 'nvtx:step_*' --capture-steps 5-9 \
  --capture-repeat 10 -- python3 "$W/train_gpt.py" --preset small --nvtx --steps 300 2> "$OUT/win.err" | tail -1 | cut -c1-120
grep -E "CUPTI: |without GPU time|error|Error" "$OUT/win.err" | sed 's/^cutrace\[[0-9]*\] //' | tail -6
stats "$OUT/win"
$CT summary --json "$OUT/win" | python3 -c 'import json,sys; j=json.load(sys.stdin); print("windows", len(j["ranks"][0]["windows"]))'

step "GPT small, --gpu-sample 0.2, 150 steps"
CUTRACE_VERBOSE=1 $CT record -o "$OUT/s20" --gpu-timing cupti --gpu-sample 0.2 -- \
  python3 "$W/train_gpt.py" --preset small --steps 150 2> "$OUT/s20.err" | tail -1 | cut -c1-120
grep -E "CUPTI: |error|Error" "$OUT/s20.err" | sed 's/^cutrace\[[0-9]*\] //' | tail -4
stats "$OUT/s20"

step "torch.compile CUDA graphs against torch.profiler"
CUTRACE="$CT" bash "$H/torch_graphs.sh" "$OUT/tg" 20 2>&1 | tail -25
