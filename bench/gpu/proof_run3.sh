#!/usr/bin/env bash
# One device call (2026-11-30, second session): CUPTI GPU times on the GPU-bound preset (the first
# call of the day found half of them missing), the default mode's per-name accuracy on both presets,
# and the launch-bound overhead as paired ratios (ABBA order, pinned CPUs).
#   CUTRACE=... WORKLOADS=... TRUTH_LARGE=truthA.json bash bench/gpu/proof_run3.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-proof3}; REPS=${2:-10}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export PYTHONUNBUFFERED=1 CUTRACE=$CT WORKLOADS=$W
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }

step "GPT large under cutrace (default: auto), CUPTI diagnostics"
CUTRACE_VERBOSE=1 timeout 120 $CT record -o "$OUT/large" -- python3 "$W/train_gpt.py" --preset large --nvtx \
  2> "$OUT/large.err" | tail -1 | cut -c1-200
grep -i -E "cupti|without GPU times" "$OUT/large.err" | tail -4
F=$(ls "$OUT"/large/*.cutrace)
$CT dump "$F" --type Meta | grep -o -E '"(gpu_timing|gpu_times_missing|cupti_dropped_records)" value=#[0-9]+ "[^"]*"'
echo "records without GPU time, by API:"
$CT dump "$F" | grep no_gpu_time | grep -o 'api=#[0-9]* "[^"]*"' | sort | uniq -c | sort -rn | head
$CT dump "$F" | grep no_gpu_time | head -3 | cut -c1-260
[[ -n ${TRUTH_LARGE:-} ]] && python3 bench/compare_truth.py --cutrace "$CT" "$OUT/large" "$TRUTH_LARGE" --tol 0.02

step "accuracy on GPT small (default mode; truth A, cutrace, truth B)"
timeout 150 bash bench/gpu/accuracy.sh "$OUT/acc" auto 2>&1 | grep -v "^  " | tail -16

step "launch-bound overhead: GPT small, $REPS repetitions, ABBA, taskset -c 2-9"
timeout 330 python3 bench/suite.py run "$OUT/suite" --workloads small --configs base,cutrace \
  --reps "$REPS" --cpus 2-9 > "$OUT/suite.log" 2>&1
python3 bench/suite.py table "$OUT/suite"
step done
