#!/usr/bin/env bash
# GPU-time accuracy against torch.profiler's CUPTI view (issue 2 / issue 6): GPT small with NVTX,
# runs interleaved: truth A, cutrace in each timing mode, truth B. Each cutrace trace is compared
# with truth A over the same timed steps (bench/compare_truth.py); truth B against truth A gives
# the run-to-run noise floor of per-name GPU time.
#   bash bench/gpu/accuracy.sh OUT [MODES]      (MODES default: "auto exact end events"; PRESET=small)
set -u
OUT=${1:-/tmp/cutrace-accuracy}; MODES=${2:-"auto exact end events"}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
P=${PRESET:-small}
gpt() { python3 "$W/train_gpt.py" --preset "$P" --nvtx "$@"; }
gpt --torch-profiler cuda --truth "$OUT/truthA.json" | tail -1
for m in $MODES; do
  $CT record --gpu-timing "$m" -o "$OUT/gpt_$m" -- python3 "$W/train_gpt.py" --preset "$P" --nvtx | tail -1
done
gpt --torch-profiler cuda --truth "$OUT/truthB.json" | tail -1
for m in $MODES; do
  timing=$($CT dump "$OUT"/gpt_$m/*.cutrace --type Meta | grep -o '"gpu_timing" value=#[0-9]* "[a-z]*"' | tail -1)
  echo; echo "=== cutrace --gpu-timing $m ($timing) vs truth A"
  python3 bench/compare_truth.py --cutrace "$CT" "$OUT/gpt_$m" "$OUT/truthA.json" --tol 0.02
done
echo; echo "=== truth B vs truth A (two torch.profiler runs: the noise floor)"
python3 bench/compare_truth.py "$OUT/truthB.json" "$OUT/truthA.json" --tol 0.02
