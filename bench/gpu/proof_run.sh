#!/usr/bin/env bash
# One device call that proves a build on the GPU machine: GPT small recorded with the defaults
# (trace size per kernel, sync call sites symbolised there, the HTML report written there, where
# the modules of the stacks exist), accuracy against torch.profiler, the suite's launch-bound
# rows, the Python annotation cost and the cost of each --backtrace mode.
#   CUTRACE=... WORKLOADS=... bash bench/gpu/proof_run.sh OUT
set -u
OUT=${1:-/tmp/cutrace-proof}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
step() { echo; echo "=== $*"; }

step "GPT small --nvtx under cutrace (defaults)"
$CT record -o "$OUT/gpt" -- python3 "$W/train_gpt.py" --preset small --nvtx | tail -1
$CT dump --stats "$OUT"/gpt/*.cutrace | head -12
$CT summary "$OUT/gpt" | sed -n '/^Sync call sites/,/^$/p' | head -24
$CT report "$OUT/gpt" -o "$OUT/gpt-report.html" && ls -la "$OUT/gpt-report.html"

step "accuracy: the same run against torch.profiler's truth"
python3 "$W/train_gpt.py" --preset small --nvtx --torch-profiler cuda --truth "$OUT/truth.json" | tail -1
python3 bench/compare_truth.py --cutrace "$CT" "$OUT/gpt" "$OUT/truth.json" --tol 0.02

step "suite: launch-bound rows"
timeout 200 python3 bench/suite.py run "$OUT/suite" --workloads tiny,small --configs base,cutrace,cutrace-off \
  --reps 3 > "$OUT/suite.log" 2>&1
python3 bench/suite.py table "$OUT/suite"

step "Python annotation cost"
timeout 60 python3 bench/annotate_cost.py --cutrace "$CT" --bursts 50 | tail -12

step "--backtrace none|sync|all on GPT small"
WORKLOADS=$W CUTRACE=$CT timeout 150 bash bench/backtrace_gpu.sh 2 small
