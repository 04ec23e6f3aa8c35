#!/usr/bin/env bash
# Quick CUPTI-mode check on the GPU: GPT small with --gpu-timing cupti against the truth.
set -u
OUT=${1:-/tmp/cupti-check}; W=${WORKLOADS:-../shared/workloads}; CT=${CUTRACE:-$PWD/build/bin/cutrace}
mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
python3 "$W/train_gpt.py" --preset small --torch-profiler cuda --truth "$OUT/truth.json" | cut -c1-80
CUTRACE_VERBOSE=1 $CT record --gpu-timing cupti -o "$OUT/cupti" -- python3 "$W/train_gpt.py" --preset small 2>&1 | grep -v "passed through" | cut -c1-200
python3 bench/compare_truth.py --cutrace "$CT" "$OUT/cupti" "$OUT/truth.json" --tol 0.02
bash bench/overhead.sh 3 "small large" "end cupti" 2>&1 | tail -7
