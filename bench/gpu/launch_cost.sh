#!/usr/bin/env bash
# Where the CPU cost per launch goes on the GPU machine: tiny_kernels.py (20,000 tiny kernels,
# launch-bound) without cutrace, preloaded outside any capture window, recording without GPU
# timing (the shim's bookkeeping only), with end events, with CUPTI. REPS repetitions in ABBA
# order, every run pinned to the same CPUs; prints each run and the median per configuration and
# the median of the paired differences to the base run of the same repetition (us per launch).
#   CUTRACE=... WORKLOADS=... bash bench/gpu/launch_cost.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-launch-cost}; REPS=${2:-5}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
mkdir -p "$OUT"
cfgs=(base off none end cupti)
run() {
  local c=$1 pre=()
  case $c in
    off) pre=($CT record -o "$OUT/t" --capture-range manual --) ;;
    none|end|cupti) pre=($CT record -o "$OUT/t" --gpu-timing "$c" --) ;;
  esac
  taskset -c 2-9 "${pre[@]}" python3 "$W/tiny_kernels.py" 2>/dev/null |
    grep -o '"us_per_launch": [0-9.]*' | grep -o '[0-9.]*$'
  rm -rf "$OUT/t"
}
: > "$OUT/runs.txt"
for ((rep = 1; rep <= REPS; rep++)); do
  order=("${cfgs[@]}")
  ((rep % 2 == 0)) && order=(cupti end none off base)
  for c in "${order[@]}"; do echo "$rep $c $(run "$c")" | tee -a "$OUT/runs.txt"; done
done
python3 "$(dirname "$0")/paired.py" "$OUT/runs.txt" base off none end cupti
