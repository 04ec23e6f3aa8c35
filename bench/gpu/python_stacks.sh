#!/usr/bin/env bash
# Python call stacks on the GPU machine, one call (issue: Python stacks on a real PyTorch job):
#  1. GPT small with the default (Python frames with the stacks of syncs and blocking copies):
#     the summary's sync call sites, which should name train_gpt.py's own lines;
#  2. GPT small with --python-stacks launch: the table "GPU time by Python call site";
#  3. tiny_kernels.py (20,000 launches), REPS interleaved repetitions of no profiler,
#     --python-stacks none, the default and launch: us per launch (medians: read them off).
#   CUTRACE=... WORKLOADS=... bash bench/gpu/python_stacks.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-pystacks}; REPS=${2:-3}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__)"
$CT record -q -o "$OUT/sync" -- python3 "$W/train_gpt.py" --preset small --steps 20 --warmup 3 | tail -1
$CT summary "$OUT/sync" > "$OUT/sync.txt" 2>&1
sed -n '/^Sync call sites/,+24p' "$OUT/sync.txt"
$CT record -q --python-stacks launch -o "$OUT/launch" -- python3 "$W/train_gpt.py" --preset small --steps 20 \
  --warmup 3 | tail -1
$CT summary "$OUT/launch" > "$OUT/launch.txt" 2>&1
sed -n '/^GPU time by Python call site/,+14p' "$OUT/launch.txt"
for rep in $(seq "$REPS"); do
  echo "rep $rep base $(python3 "$W/tiny_kernels.py")"
  for mode in none sync launch; do
    rm -rf "$OUT/tiny_$mode"
    echo "rep $rep $mode $($CT record -q --python-stacks $mode -o "$OUT/tiny_$mode" -- python3 "$W/tiny_kernels.py")"
  done
done
$CT summary --json "$OUT/tiny_launch" | python3 -c "
import json, sys
j = json.load(sys.stdin)
s = j['python_call_sites']['sites']
print('tiny_kernels --python-stacks launch: dropped', j['dropped_records'], 'kernels', j['kernel_totals']['count'],
      'Python call sites', [(x['site'], x['kernels']) for x in s[:3]])"
