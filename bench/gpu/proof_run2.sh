#!/usr/bin/env bash
# One device call (2026-11-30, second session): the results of a deterministic training loop with
# and without cutrace (issue 7), the Python annotation cost form by form next to torch.cuda.nvtx
# (issue 3), the launch-bound overhead with every run pinned to the same CPUs (issue 6), and the
# default mode's per-name accuracy on the GPU-bound preset (issue 6).
#   CUTRACE=... WORKLOADS=... bash bench/gpu/proof_run2.sh OUT
set -u
OUT=${1:-/tmp/cutrace-proof2}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export PYTHONUNBUFFERED=1 CUTRACE=$CT WORKLOADS=$W
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader

step "same results: det_train.py 3 runs without, 3 under cutrace (bench/gpu/same_loss.sh)"
GPT_RUNS=0 timeout 150 bash bench/gpu/same_loss.sh "$OUT/same" 2>&1 | tail -8

step "Python annotation cost, form by form"
timeout 130 python3 bench/annotate_cost.py --cutrace "$CT" --bursts 50 | tail -24

step "launch-bound overhead, pinned (taskset -c 2-9)"
timeout 170 python3 bench/suite.py run "$OUT/suite" --workloads small --configs base,cutrace,cutrace-off \
  --reps 5 --cpus 2-9 > "$OUT/suite.log" 2>&1
python3 bench/suite.py table "$OUT/suite"

step "accuracy on GPT large (default mode)"
PRESET=large timeout 140 bash bench/gpu/accuracy.sh "$OUT/acc" auto 2>&1 | tail -24
step done
