#!/usr/bin/env bash
# Ninth session, third device call: the GPU-bound target with the current build (GPT large: no
# profiler, cutrace's default, torch.profiler CUDA-only), and tiny_kernels, interleaved (ABBA).
#   CUTRACE=... WORKLOADS=... bash bench/gpu/proof_run13.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-proof13}; REPS=${2:-3}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
echo "=== $(date +%T) GPT large and tiny_kernels, $REPS reps"
python3 "$H/../suite.py" run "$OUT/suite" --workloads large,tiny --configs base,cutrace,torch-cuda \
  --reps "$REPS" --cpus 2-9 --cutrace "$CT" --workloads-dir "$W" --brief
