#!/usr/bin/env bash
# Annotations and capture windows on a GPU machine (issue 3). Run from the repo root after `make`.
#   bash bench/verify_annotations.sh OUTDIR
set -u
OUT=${1:-/tmp/cutrace-annot}; W=${WORKLOADS:-../shared/workloads}; CT=${CUTRACE:-$PWD/build/bin/cutrace}
mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
step() { echo; echo "=== $*"; }
# SKIP_STEPS=1 skips the first two sections (step ranges and the 10-step window).
if [ "${SKIP_STEPS:-0}" != 1 ]; then

step "GPT small --nvtx: step ranges vs measured step wall time"
$CT record -o "$OUT/steps" -- python3 "$W/train_gpt.py" --preset small --nvtx > "$OUT/steps.out"
$CT summary --json "$OUT/steps" > "$OUT/steps.json"
python3 bench/compare_steps.py "$OUT/steps.json" "$OUT/steps.out"

step "Window over exactly 10 steps: --capture-range=nvtx:step_* --capture-steps 10-19"
$CT record -o "$OUT/window" --capture-range 'nvtx:step_*' --capture-steps 10-19 -- \
  python3 "$W/train_gpt.py" --preset small --nvtx > /dev/null
$CT summary --json "$OUT/window" | python3 -c "
import json, sys; s = json.load(sys.stdin)
steps = sorted((r['name'] for r in s['ranges'] if r['name'].startswith('step_')), key=lambda n: int(n[5:]))
print('step ranges in the trace:', steps)
print('kernels in the trace:', sum(k['count'] for k in s['kernels']))"
$CT dump "$OUT"/window/*.cutrace --type Window | grep Window

fi

step "Overhead outside a window (--capture-range=manual, never started) vs no cutrace, interleaved"
for rep in 1 2 3; do
  python3 "$W/train_gpt.py" --preset small | tail -1 > "$OUT/base.$rep"
  $CT record -o "$OUT/idle_trace.$rep" --capture-range manual -- python3 "$W/train_gpt.py" --preset small | tail -1 > "$OUT/idle.$rep"
done
python3 - "$OUT" <<'PY'
import json, statistics, sys
o = sys.argv[1]
b = [json.load(open(f"{o}/base.{i}"))["step_ms"] for i in (1, 2, 3)]
t = [json.load(open(f"{o}/idle.{i}"))["step_ms"] for i in (1, 2, 3)]
print("base step_ms", [round(x, 2) for x in b], "outside-window step_ms", [round(x, 2) for x in t])
print(f"median overhead outside a window: {(statistics.median(t) / statistics.median(b) - 1) * 100:+.2f}%")
PY

step "PyTorch emit_nvtx operator ranges"
$CT record -o "$OUT/emit" -- python3 bench/workloads/emit_nvtx.py
$CT summary "$OUT/emit" --top 8 | sed -n '/NVTX/,/^$/p' | head -14

step "cutrace Python module: annotate cost vs torch.cuda.nvtx"
PYTHONPATH=$PWD/python python3 bench/annotate_cost.py --cutrace "$CT"
