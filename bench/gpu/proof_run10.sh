#!/usr/bin/env bash
# Eighth session, last device call: CUPTI detached after cutrace's start-up check (cuptiFinalize),
# set up again by the first window.
#  1. The launch loop (bench/gpu/launch_ab.py), every configuration: a preloaded cutrace before
#     any window against no cutrace (was +1.46 us per launch in CUPTI mode), what a window leaves
#     after it, what a window costs.
#  2. GPT small, NVTX windows every other 5 steps, and --gpu-sample 0.2: no GPU time missing.
#  3. torch.compile CUDA graphs against torch.profiler (bench/gpu/torch_graphs.sh).
#  4. GPT small, one window (steps 100-199) against the steps before it, in one process (now a
#     process without CUPTI's cost): bench/gpu/window_ab.py --configs base,cupti-once.
#   CUTRACE=... LAUNCH_AB=... WORKLOADS=... bash bench/gpu/proof_run10.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-proof10}; REPS=${2:-4}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }
stats() { python3 "$H/../suite.py" stats "$1" --cutrace "$CT"; }  # kernels, operations without GPU time

step "launch loop: $REPS reps"
python3 "$H/launch_ab.py" run "$OUT/ab" --reps "$REPS" --configs base,off-direct,none,cupti,end,raw-cupti \
  --cutrace "$CT" --bin "${LAUNCH_AB:-$PWD/build/bench/launch_ab}" --cpus 2-9 -- --pre 20 --cycles 40 --block 2000 --gpu |
  grep -v "^rep "

step "GPT small, NVTX windows of steps 5-9, 15-19, ... (300 steps), CUPTI"
CUTRACE_VERBOSE=1 $CT record -o "$OUT/win" --gpu-timing cupti --capture-range 'nvtx:step_*' --capture-steps 5-9 \
  --capture-repeat 10 -- python3 "$W/train_gpt.py" --preset small --nvtx --steps 300 2> "$OUT/win.err" | tail -1 | cut -c1-100
grep -E "CUPTI: " "$OUT/win.err" | sed 's/^cutrace\[[0-9]*\] //' | tail -3
stats "$OUT/win"

step "GPT small, --gpu-sample 0.2, 150 steps"
CUTRACE_VERBOSE=1 $CT record -o "$OUT/s20" --gpu-timing cupti --gpu-sample 0.2 -- \
  python3 "$W/train_gpt.py" --preset small --steps 150 2> "$OUT/s20.err" | tail -1 | cut -c1-100
grep -E "CUPTI: " "$OUT/s20.err" | sed 's/^cutrace\[[0-9]*\] //' | tail -3
stats "$OUT/s20"

step "torch.compile CUDA graphs against torch.profiler"
CUTRACE="$CT" bash "$H/torch_graphs.sh" "$OUT/tg" 20 2>&1 | grep -E "median step|losses|names|^Kernels|replays"

step "GPT small: a window of steps 100-199 against steps 10-99, in one process"
python3 "$H/window_ab.py" "$OUT/once" --reps 3 --steps 260 --configs base,cupti-once --once 100-199 \
  --cutrace "$CT" --workloads "$W"
