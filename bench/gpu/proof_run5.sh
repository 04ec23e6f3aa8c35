#!/usr/bin/env bash
# One device call (2026-11-30, fourth session): the GPU-timing sample against full CUPTI timing.
#  1. GPT small accuracy against torch.profiler: truth A, cutrace default (full CUPTI), cutrace
#     --gpu-sample 0.2 (with the collector's CUPTI counts: records made and used, switches, windows,
#     operations without GPU times), truth B (noise floor); each compared with truth A
#     (bench/compare_truth.py).
#  2. GPT small overhead with 100 timed steps per run (less noise per run than 30): no profiler,
#     cutrace default, --gpu-sample 0.2, --gpu-sample 0.1, --gpu-timing none; REPS repetitions,
#     ABBA, pinned to 4 CPUs; every run printed (bench/suite.py).
#   CUTRACE=... WORKLOADS=... [CONFIGS=base,...] bash bench/gpu/proof_run5.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-proof5}; REPS=${2:-5}
CONFIGS=${CONFIGS:-base,cutrace,cutrace-sample20,cutrace-sample10,cutrace-none}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }
gpt() { python3 "$W/train_gpt.py" --preset small --nvtx "$@" 2>/dev/null | tail -1 | cut -c1-120; }

step "GPT small: truth A, cutrace (full CUPTI), cutrace --gpu-sample 0.2, truth B"
gpt --torch-profiler cuda --truth "$OUT/truthA.json"
$CT record -o "$OUT/full" -- python3 "$W/train_gpt.py" --preset small --nvtx 2>/dev/null | tail -1 | cut -c1-120
CUTRACE_VERBOSE=1 $CT record -o "$OUT/s20" --gpu-sample 0.2 -- python3 "$W/train_gpt.py" --preset small --nvtx \
  2> "$OUT/s20.err" | tail -1 | cut -c1-120
grep -E "CUPTI:|GPU-timing sample|without GPU times" "$OUT/s20.err" | sed 's/^cutrace\[[0-9]*\] //'
$CT dump "$OUT"/s20/*.cutrace --type Meta | grep -o -E '"(gpu_sample[a-z_]*|gpu_times_missing|cupti_[a-z_]*)" value=#[0-9]+ "[^"]*"' | tr '\n' ' '; echo
gpt --torch-profiler cuda --truth "$OUT/truthB.json"
for d in full s20 truthB.json; do
  step "$d vs truth A"
  python3 bench/compare_truth.py --cutrace "$CT" "$OUT/$d" "$OUT/truthA.json" --tol 0.02 | grep -v "^  count\|^  only"
done

step "GPT small (100 timed steps) overhead: bench/suite.py, $REPS repetitions (ABBA), taskset -c 2-5"
python3 bench/suite.py run "$OUT/suite" --workloads small100 --reps "$REPS" --cpus 2-5 --cutrace "$CT" \
  --workloads-dir "$W" --configs "$CONFIGS" --brief
