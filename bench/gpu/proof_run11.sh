#!/usr/bin/env bash
# Ninth session, first device call:
#  1. The launch loop (bench/gpu/launch_ab.py): the direct entry points outside windows
#     (off-direct: through the shim less straight to the driver), bookkeeping (none), CUPTI.
#  2. GPT small, one window (steps 100-199) against the steps before it, in one process: full
#     capture and the GPU-timing sample (--gpu-sample 0.2) against the job before any window
#     (bench/gpu/window_ab.py --configs base,cupti-once,cupti-s20-once).
#  3. GPT small (100 steps) across processes: peak RSS added, trace bytes, overhead (bench/suite.py).
#   CUTRACE=... LAUNCH_AB=... WORKLOADS=... bash bench/gpu/proof_run11.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-proof11}; REPS=${2:-3}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }

step "launch loop: $REPS reps"
python3 "$H/launch_ab.py" run "$OUT/ab" --reps "$REPS" --configs base,off-direct,none,cupti \
  --cutrace "$CT" --bin "${LAUNCH_AB:-$PWD/build/bench/launch_ab}" --cpus 2-9 -- --pre 20 --cycles 40 --block 2000 |
  grep -v "^rep "

step "GPT small: a window of steps 100-199 against steps 10-99, in one process"
python3 "$H/window_ab.py" "$OUT/once" --reps "$REPS" --steps 260 --configs base,cupti-once,cupti-s20-once \
  --once 100-199 --cutrace "$CT" --workloads "$W"

step "GPT small, 100 steps, across processes: RSS, bytes, overhead"
python3 "$H/../suite.py" run "$OUT/suite" --workloads small100 --configs base,cutrace,cutrace-sample20 \
  --reps 2 --cpus 2-9 --cutrace "$CT" --workloads-dir "$W" --brief
