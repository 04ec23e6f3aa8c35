#!/usr/bin/env bash
# cutrace on PyTorch CUDA graphs (torch.compile mode="reduce-overhead"), one device call:
# bench/gpu/torch_graphs.py without cutrace, under torch.profiler (the truth: CUPTI's kernels of the
# timed steps), and under cutrace (a manual window around the same steps); compares per kernel name.
#   CUTRACE=... bash bench/gpu/torch_graphs.sh OUT [STEPS]
set -u
OUT=${1:-/tmp/cutrace-torch-graphs}; STEPS=${2:-20}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$H/../../python${PYTHONPATH:+:$PYTHONPATH}
python3 "$H/torch_graphs.py" --steps "$STEPS" 2> "$OUT/base.err" | cut -c1-200
python3 "$H/torch_graphs.py" --steps "$STEPS" --truth "$OUT/truth.json" 2> "$OUT/truth.err" | cut -c1-200
$CT record -o "$OUT/trace" --capture-range manual -- python3 "$H/torch_graphs.py" --steps "$STEPS" --cutrace-window \
  2> "$OUT/cutrace.err" | cut -c1-200
tail -2 "$OUT/cutrace.err"
python3 "$H/jax_compare.py" --cutrace "$CT" "$OUT/trace" --chrome "$OUT/truth.json"
$CT summary "$OUT/trace" --top 5 | sed -n '/^Kernels:/,/^$/p'
$CT summary "$OUT/trace" | tail -2
