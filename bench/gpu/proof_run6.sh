#!/usr/bin/env bash
# One device call (2026-11-30, fifth session), after the CUPTI driver callbacks stopped being
# switched off between windows (they broke a thread that was inside a driver call):
#  1. Per-launch cost after a closed capture window (bench/gpu/after_window.py): no profiler;
#     preloaded with a manual window never opened; preloaded after a window that CUPTI timed.
#     REPS repetitions, ABBA, pinned to 8 CPUs; paired differences to the base run.
#  2. GPT small accuracy of --gpu-sample 0.1 against torch.profiler (bench/compare_truth.py).
#  3. GPT small (100 timed steps) overhead: base, --gpu-sample 0.1, 0.2, --gpu-timing none,
#     bench/suite.py, REPS repetitions (ABBA), pinned to 4 CPUs; every run printed with its count
#     of operations written without GPU times.
#   CUTRACE=... WORKLOADS=... bash bench/gpu/proof_run6.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-proof6}; REPS=${2:-5}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }

step "after_window.py: us per launch, $REPS repetitions (ABBA), taskset -c 2-9"
aw() {
  local c=$1 pre=() args=()
  case $c in
    idle) pre=($CT record -o "$OUT/t" --capture-range manual --); args=(--no-window) ;;
    after) pre=($CT record -o "$OUT/t" --capture-range manual --) ;;
  esac
  taskset -c 2-9 "${pre[@]}" python3 bench/gpu/after_window.py "${args[@]}" 2>/dev/null |
    grep -o '"us_per_launch": [0-9.]*' | grep -o '[0-9.]*$'
  rm -rf "$OUT/t"
}
: > "$OUT/aw.txt"
for ((rep = 1; rep <= REPS; rep++)); do
  order=(base idle after); ((rep % 2 == 0)) && order=(after idle base)
  for c in "${order[@]}"; do echo "$rep $c $(aw "$c")" | tee -a "$OUT/aw.txt"; done
done
python3 "$(dirname "$0")/paired.py" "$OUT/aw.txt" base idle after

step "GPT small: truth, cutrace --gpu-sample 0.1"
python3 "$W/train_gpt.py" --preset small --nvtx --torch-profiler cuda --truth "$OUT/truth.json" 2>/dev/null | tail -1 | cut -c1-100
CUTRACE_VERBOSE=1 $CT record -o "$OUT/s10" --gpu-sample 0.1 -- python3 "$W/train_gpt.py" --preset small --nvtx \
  2> "$OUT/s10.err" | tail -1 | cut -c1-100
grep -E "CUPTI:|GPU-timing sample|without GPU times" "$OUT/s10.err" | sed 's/^cutrace\[[0-9]*\] //'
python3 bench/compare_truth.py --cutrace "$CT" "$OUT/s10" "$OUT/truth.json" --tol 0.02 | grep -v "^  count\|^  only"

step "GPT small (100 timed steps) overhead: bench/suite.py, $REPS repetitions (ABBA), taskset -c 2-5"
python3 bench/suite.py run "$OUT/suite" --workloads small100 --reps "$REPS" --cpus 2-5 --cutrace "$CT" \
  --workloads-dir "$W" --configs base,cutrace-sample10,cutrace-sample20,cutrace-none --brief
