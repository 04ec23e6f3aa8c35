#!/usr/bin/env bash
# The application's results under cutrace (issue 7): train_gpt.py with a fixed seed and
# deterministic algorithms, twice without cutrace and twice under `cutrace record` (interleaved):
# the final losses must be bit-identical (printed with repr: every digit of the float).
#   CUTRACE=... WORKLOADS=... bash bench/gpu/same_loss.sh OUT [STEPS]
set -u
OUT=${1:-/tmp/cutrace-same-loss}; STEPS=${2:-10}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1
mkdir -p "$OUT"
run=(python3 bench/gpu/deterministic.py "$W/train_gpt.py" --preset small --steps "$STEPS" --seed 1)
loss() { grep -o '"loss": [-0-9.e]*' | tail -1; }
for i in 1 2; do
  echo "without cutrace, run $i: $("${run[@]}" 2>/dev/null | loss)"
  echo "under cutrace,   run $i: $($CT record -o "$OUT/t$i" -- "${run[@]}" 2>/dev/null | loss)"
done
