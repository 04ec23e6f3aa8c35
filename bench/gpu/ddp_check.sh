#!/usr/bin/env bash
# The 2-GPU DDP run (nvidia-h200-x2) under cutrace with the default timing: one file per rank,
# GPU times present (gpu_times_missing), `cutrace merge` alignment residual, per-rank summary.
#   CUTRACE=... WORKLOADS=... bash bench/gpu/ddp_check.sh OUT [STEPS]
set -u
OUT=${1:-/tmp/cutrace-ddp}; STEPS=${2:-50}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name --format=csv,noheader
CUTRACE_VERBOSE=1 $CT record -o "$OUT/ddp" -- torchrun --standalone --nproc_per_node=2 "$W/ddp_train.py" \
  --steps "$STEPS" 2> "$OUT/ddp.err"
grep -E "CUPTI:|without GPU times|trace file" "$OUT/ddp.err" | tail -6
for f in "$OUT"/ddp/*.cutrace; do
  echo "$(basename "$f"): $($CT dump "$f" --type Meta | grep -o -E '"(rank|gpu_timing|gpu_times_missing|cupti_[a-z_]*)" value=#[0-9]+ "[^"]*"' | tr '\n' ' ')"
done
$CT merge "$OUT/ddp" 2>&1 | tail -8
$CT summary "$OUT/ddp" | sed -n '/^Per-rank/,/^$/p' | head -20
$CT summary --json "$OUT/ddp" | python3 -c '
import json, sys
j = json.load(sys.stdin)
nccl = [k for k in j["kernels"] if "nccl" in k["name"].lower()]
print("NCCL kernel names:", len(nccl), "launches:", sum(k["count"] for k in nccl),
      "GPU time ms:", round(sum(k["total_ns"] for k in nccl) / 1e6, 2))'
