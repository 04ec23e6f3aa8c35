#!/usr/bin/env bash
# cutrace on PyTorch CUDA graphs (torch.compile mode="reduce-overhead"), one device call:
# bench/workloads/torch_graphs.py without cutrace, under torch.profiler (the truth: CUPTI's kernels of the
# timed steps), and under cutrace (a manual window around the same steps); compares per kernel name.
#   CUTRACE=... bash bench/gpu/torch_graphs.sh OUT [STEPS]
set -u
OUT=${1:-/tmp/cutrace-torch-graphs}; STEPS=${2:-20}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$H/../../python${PYTHONPATH:+:$PYTHONPATH}
python3 "$H/../workloads/torch_graphs.py" --steps "$STEPS" > "$OUT/base.json" 2> "$OUT/base.err"
python3 "$H/../workloads/torch_graphs.py" --steps "$STEPS" --truth "$OUT/truth.json" > "$OUT/truth_run.json" 2> "$OUT/truth.err"
$CT record -o "$OUT/trace" --capture-range manual -- python3 "$H/../workloads/torch_graphs.py" --steps "$STEPS" --cutrace-window \
  > "$OUT/cutrace.json" 2> "$OUT/cutrace.err"
tail -1 "$OUT/cutrace.err"
python3 - "$OUT/base.json" "$OUT/truth_run.json" "$OUT/cutrace.json" <<'PY'
import json, sys
runs = [json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:4]]
print("median step ms (base, torch.profiler, cutrace):", ", ".join("%.3f" % r["step_ms"] for r in runs))
print("losses identical (base = torch.profiler = cutrace):", runs[0]["losses"] == runs[1]["losses"] == runs[2]["losses"],
      f"({len(runs[0]['losses'])} steps)")
PY
python3 "$H/jax_compare.py" --cutrace "$CT" "$OUT/trace" --chrome "$OUT/truth.json"
$CT summary "$OUT/trace" --top 5 | sed -n '/^Kernels:/,/^$/p'
$CT summary "$OUT/trace" | tail -2
