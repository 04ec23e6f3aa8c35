#!/usr/bin/env bash
# What a GPT small step (launch-bound) pays under cutrace while nothing is recorded, and what each
# part of cutrace adds: the shim preloaded but disabled; `cutrace record` with a window never opened
# (collector and samplers running); the same without the samplers; after one window (on warm-up
# step 0) recorded without GPU timing and with CUPTI; recording everything without GPU timing.
# REPS repetitions, ABBA, pinned to CPUs 2-9; metric: the median of the timed steps' times (ms);
# paired ratios to the base run of the same repetition.
#   CUTRACE=... WORKLOADS=... bash bench/gpu/idle_cost.sh OUT [REPS] [STEPS]
set -u
OUT=${1:-/tmp/cutrace-idle}; REPS=${2:-4}; STEPS=${3:-60}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
SHIM=$(dirname "$(dirname "$CT")")/lib/libcutrace.so
mkdir -p "$OUT"
cfgs=(base disabled off off-nosample idle-none idle-cupti rec-none)
once=(--capture-range 'nvtx:step_*' --capture-steps 0-0)
run() {
  local c=$1 pre=()
  case $c in
    disabled) pre=(env LD_PRELOAD="$SHIM" CUTRACE_DISABLE=1) ;;
    off) pre=($CT record -o "$OUT/t" --capture-range manual --) ;;
    off-nosample) pre=($CT record -o "$OUT/t" --capture-range manual --sample-hz 0 --) ;;
    idle-none) pre=($CT record -o "$OUT/t" --gpu-timing none "${once[@]}" --) ;;
    idle-cupti) pre=($CT record -o "$OUT/t" --gpu-timing cupti "${once[@]}" --) ;;
    rec-none) pre=($CT record -o "$OUT/t" --gpu-timing none --) ;;
  esac
  taskset -c 2-9 "${pre[@]}" python3 "$W/train_gpt.py" --preset small --nvtx --steps "$STEPS" 2>/dev/null |
    python3 -c 'import json,sys,statistics; l=[x for x in sys.stdin if x.startswith("{")]; print("%.3f" % statistics.median(json.loads(l[-1])["step_ms_each"]) if l else "")'
  rm -rf "$OUT/t"
}
: > "$OUT/runs.txt"
for ((rep = 1; rep <= REPS; rep++)); do
  order=("${cfgs[@]}")
  ((rep % 2 == 0)) && order=($(printf '%s\n' "${cfgs[@]}" | tac))
  for c in "${order[@]}"; do echo "$rep $c $(run "$c")" | tee -a "$OUT/runs.txt"; done
done
python3 "$(dirname "$0")/paired.py" --ratio "$OUT/runs.txt" "${cfgs[@]}"
