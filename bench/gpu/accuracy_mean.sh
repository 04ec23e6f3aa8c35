#!/usr/bin/env bash
# Per-name GPU time of cutrace's default mode against torch.profiler, with the noise of
# torch.profiler itself taken out: GPT small (30 timed steps) alternately under torch.profiler
# (truths A, B, C) and cutrace (runs 1, 2), in one call; each cutrace run is compared with the
# truths' mean per name (bench/compare_truth.py --also), and each truth with that mean too.
#   CUTRACE=... WORKLOADS=... bash bench/gpu/accuracy_mean.sh OUT
set -u
OUT=${1:-/tmp/cutrace-accuracy}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
gpt() { python3 "$W/train_gpt.py" --preset small --nvtx "$@" | tail -1 | cut -c1-80; }
gpt --torch-profiler cuda --truth "$OUT/A.json"
$CT record -o "$OUT/c1" -- python3 "$W/train_gpt.py" --preset small --nvtx | tail -1 | cut -c1-80
gpt --torch-profiler cuda --truth "$OUT/B.json"
$CT record -o "$OUT/c2" -- python3 "$W/train_gpt.py" --preset small --nvtx | tail -1 | cut -c1-80
gpt --torch-profiler cuda --truth "$OUT/C.json"
for c in c1 c2; do
  echo "=== cutrace run $c against the mean of truths A, B, C"
  python3 "$H/../compare_truth.py" "$OUT/$c" "$OUT/A.json" --also "$OUT/B.json" "$OUT/C.json" --cutrace "$CT" --tol 0.02
done
