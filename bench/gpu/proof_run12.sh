#!/usr/bin/env bash
# Ninth session, second device call: GPT small (launch-bound, 100 steps) across processes, more
# repetitions than bench/gpu/proof_run11.sh's step 3: full capture (default timing, CUPTI) and the
# GPU-timing sample against no profiler, ABBA, pinned; then the table again.
#   CUTRACE=... WORKLOADS=... bash bench/gpu/proof_run12.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-proof12}; REPS=${2:-6}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
echo "=== $(date +%T) GPT small, 100 steps, $REPS reps"
python3 "$H/../suite.py" run "$OUT/suite" --workloads small100 --configs base,cutrace,cutrace-sample20 \
  --reps "$REPS" --cpus 2-9 --cutrace "$CT" --workloads-dir "$W" --brief
