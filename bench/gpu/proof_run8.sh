#!/usr/bin/env bash
# Eighth session, first device call: the CPU cost per launch on the real driver from a C++ launch
# loop (bench/gpu/launch_ab.py with bench/gpu/launch_ab.cpp), every configuration, REPS
# repetitions: what recording adds inside a window (cutrace's modes, CUPTI alone, CUPTI with a
# driver callback, CUPTI with other buffer settings), what a closed window leaves behind, and what
# a preloaded shim costs that never records (through it against straight to the driver, in one
# process), and the GPU time per kernel back to back in each case.
#   CUTRACE=... LAUNCH_AB=... bash bench/gpu/proof_run8.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-proof8}; REPS=${2:-5}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
python3 "$(dirname "$0")/launch_ab.py" run "$OUT/ab" --reps "$REPS" --cutrace "$CT" \
  --bin "${LAUNCH_AB:-$PWD/build/bench/launch_ab}" --cpus 2-9 -- --pre 20 --cycles 40 --block 2000 --gpu
