#!/usr/bin/env bash
# The application's results under cutrace (issue 7), on the GPU machine:
#  1. train_gpt.py with a fixed seed and deterministic algorithms requested, twice without cutrace
#     and twice under `cutrace record` (interleaved), final loss printed with every digit. It is
#     not fully deterministic even without cutrace (BENCHMARKS.md): informative only.
#  2. bench/workloads/det_train.py, deterministic by construction: three runs each way, interleaved;
#     every step's loss and the parameter checksum must equal the first run's byte for byte.
#   CUTRACE=... WORKLOADS=... bash bench/gpu/same_loss.sh OUT [STEPS]     (DET_STEPS=50;
#   GPT_RUNS=0 skips part 1)
set -u
OUT=${1:-/tmp/cutrace-same-loss}; STEPS=${2:-10}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1
mkdir -p "$OUT"
run=(python3 bench/workloads/deterministic.py "$W/train_gpt.py" --preset small --steps "$STEPS" --seed 1)
loss() { grep -o '"loss": [-0-9.e]*' | tail -1; }
for ((i = 1; i <= ${GPT_RUNS:-2}; i++)); do
  echo "without cutrace, run $i: $("${run[@]}" 2>/dev/null | loss)"
  echo "under cutrace,   run $i: $($CT record -o "$OUT/t$i" -- "${run[@]}" 2>/dev/null | loss)"
done

# The deterministic loop (bench/workloads/det_train.py): every step's loss and a parameter checksum,
# three runs each way, interleaved; every output must equal the first one byte for byte.
det=(python3 bench/workloads/det_train.py --steps "${DET_STEPS:-50}" --seed 1)
"${det[@]}" > "$OUT/det-base0.txt" 2> "$OUT/det-base0.err" || { echo "det_train failed:"; tail -5 "$OUT/det-base0.err"; exit 1; }
same=0 differ=0
for i in 1 2 3; do
  "${det[@]}" > "$OUT/det-base$i.txt" 2>/dev/null
  $CT record -o "$OUT/det$i" -- "${det[@]}" > "$OUT/det-cutrace$i.txt" 2>/dev/null
  for f in "$OUT/det-base$i.txt" "$OUT/det-cutrace$i.txt"; do
    if cmp -s "$OUT/det-base0.txt" "$f"; then same=$((same + 1)); else differ=$((differ + 1)); echo "differs: $f"; diff "$OUT/det-base0.txt" "$f" | head -4; fi
  done
done
echo "det_train: $(grep -c loss "$OUT/det-base0.txt") steps; last: $(grep loss "$OUT/det-base0.txt" | tail -1); $(tail -1 "$OUT/det-base0.txt")"
echo "det_train: outputs equal to the first run: $same of $((same + differ)) (3 without cutrace, 3 under cutrace record)"
echo "det_train traces: $(ls "$OUT"/det1/*.cutrace "$OUT"/det2/*.cutrace "$OUT"/det3/*.cutrace 2>/dev/null | wc -l) files; kernels in the first: $($CT summary --json "$OUT/det1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernel_totals"]["count"])')"
