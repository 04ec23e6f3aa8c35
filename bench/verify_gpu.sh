#!/usr/bin/env bash
# Capture-core proof on a GPU machine (issue 2): every launch route counted, and the GPT
# workload's kernels compared with torch.profiler's CUPTI view. Run from the repo root after
# `make`; the reference workloads are read from $WORKLOADS (default ../shared/workloads).
#   bash bench/verify_gpu.sh OUTDIR
# Then, anywhere with the traces:  python3 bench/compare_truth.py OUTDIR
set -u
OUT=${1:-/tmp/cutrace-verify}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
mkdir -p "$OUT/t"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
step() { echo; echo "=== $*"; }

step environment
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
grep -o -w -m2 'constant_tsc\|nonstop_tsc' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"

step "tiny_kernels.py: base, then under cutrace"
python3 "$W/tiny_kernels.py"
$CT record -o "$OUT/t/tiny" -- python3 "$W/tiny_kernels.py"
$CT summary "$OUT/t/tiny" --top 5

step "Triton kernel loop (dlsym route)"
$CT record -o "$OUT/t/triton" -- python3 bench/workloads/triton_loop.py --n 1000
$CT summary "$OUT/t/triton" --top 5

step "CUDA graph replay loop"
$CT record -o "$OUT/t/graph" -- python3 bench/workloads/graph_loop.py --n 200 --k 10
$CT summary "$OUT/t/graph" --top 5

step "CUDA C++ with nvcc's default static runtime"
nvcc -O2 -o /tmp/static_app bench/workloads/static_app.cu && \
  $CT record -o "$OUT/t/static" -- /tmp/static_app && $CT summary "$OUT/t/static" --top 5

step "GPT small: torch.profiler truth A, cutrace default (auto), exact, events, truth B"
gpt() { python3 "$W/train_gpt.py" --preset small --nvtx "$@"; }
gpt --torch-profiler cuda --truth "$OUT/truth_small.json" | tail -1
$CT record -o "$OUT/t/gpt_default" -- python3 "$W/train_gpt.py" --preset small --nvtx | tail -1
$CT record --gpu-timing exact -o "$OUT/t/gpt_exact" -- python3 "$W/train_gpt.py" --preset small --nvtx | tail -1
$CT record --gpu-timing events -o "$OUT/t/gpt_events" -- python3 "$W/train_gpt.py" --preset small --nvtx | tail -1
gpt --torch-profiler cuda --truth "$OUT/truth_small_B.json" | tail -1
$CT summary "$OUT/t/gpt_default" --top 8
ls -la "$OUT"/t/*/

step "GPT small vs torch.profiler truth A (same timed steps): default within 10%, exact within 5%"
for m in default exact events; do
  timing=$($CT dump "$OUT"/t/gpt_$m/*.cutrace --type Meta | grep -o '"gpu_timing" value=#[0-9]* "[a-z]*"' | tail -1)
  tol=0.10; [ $m = exact ] && tol=0.05
  echo; echo "--- $m ($timing), --tol $tol"
  python3 bench/compare_truth.py --cutrace "$CT" "$OUT/t/gpt_$m" "$OUT/truth_small.json" --tol $tol
done
echo; echo "--- truth B vs truth A (two torch.profiler runs: the noise floor)"
python3 bench/compare_truth.py "$OUT/truth_small_B.json" "$OUT/truth_small.json" --tol 0.05
