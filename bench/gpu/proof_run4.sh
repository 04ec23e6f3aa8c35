#!/usr/bin/env bash
# One device call (2026-11-30, second session), after periodic CUPTI flushes stopped being forced:
# CUPTI GPU times on GPT large and small against torch.profiler, where the CPU cost per launch
# goes in CUPTI mode (tiny_kernels.py: no profiler, CUPTI with and without its driver callbacks,
# end events), and GPT small's launch-bound overhead by mode (paired ratios, ABBA, pinned CPUs).
#   CUTRACE=... WORKLOADS=... TRUTH_LARGE=truthA.json bash bench/gpu/proof_run4.sh OUT [REPS]
# CUTRACE_EXPERIMENT_NO_CUPTI_CALLBACKS is honoured only by an experiment build (it loses the
# GPU times: without callbacks no operation learns its CUPTI correlation id).
set -u
OUT=${1:-/tmp/cutrace-proof4}; REPS=${2:-5}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export PYTHONUNBUFFERED=1 CUTRACE=$CT WORKLOADS=$W
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }

step "GPT large under cutrace (default: auto)"
CUTRACE_VERBOSE=1 timeout 120 $CT record -o "$OUT/large" -- python3 "$W/train_gpt.py" --preset large --nvtx \
  2> "$OUT/large.err" | tail -1 | cut -c1-120
grep -i -E "cupti|without GPU times" "$OUT/large.err" | tail -3
$CT dump "$OUT"/large/*.cutrace --type Meta | grep -o -E '"(gpu_times_missing|cupti_[a-z_]*)" value=#[0-9]+ "[^"]*"'
[[ -n ${TRUTH_LARGE:-} ]] && python3 bench/compare_truth.py --cutrace "$CT" "$OUT/large" "$TRUTH_LARGE" --tol 0.02

step "accuracy on GPT small (default mode; truth A, cutrace, truth B)"
timeout 150 bash bench/gpu/accuracy.sh "$OUT/acc" auto 2>&1 | tail -22
$CT dump "$OUT"/acc/gpt_auto/*.cutrace --type Meta | grep -o -E '"(gpu_times_missing|cupti_[a-z_]*)" value=#[0-9]+ "[^"]*"'

step "tiny_kernels.py us per launch: 3 repetitions, ABBA, taskset -c 2-9"
tiny() { taskset -c 2-9 "$@" python3 "$W/tiny_kernels.py" 2>/dev/null | grep -o '"us_per_launch": [0-9.]*' | grep -o '[0-9.]*$'; }
cfgs=(base cupti cupti-nocb end)
for rep in 1 2 3; do
  order=("${cfgs[@]}"); ((rep % 2 == 0)) && order=(end cupti-nocb cupti base)
  for c in "${order[@]}"; do
    case $c in
      base) v=$(tiny) ;;
      cupti) v=$(tiny $CT record -o "$OUT/tk" --gpu-timing cupti --) ;;
      cupti-nocb) v=$(CUTRACE_EXPERIMENT_NO_CUPTI_CALLBACKS=1 tiny $CT record -o "$OUT/tk" --gpu-timing cupti --) ;;
      end) v=$(tiny $CT record -o "$OUT/tk" --gpu-timing end --) ;;
    esac
    rm -rf "$OUT/tk"; echo "tiny $c rep $rep: $v us/launch"
  done
done

step "launch-bound overhead by mode: GPT small, $REPS repetitions, ABBA, taskset -c 2-9"
timeout 260 python3 bench/suite.py run "$OUT/suite" --workloads small --configs base,cutrace,cutrace-end \
  --reps "$REPS" --cpus 2-9 > "$OUT/suite.log" 2>&1
python3 bench/suite.py table "$OUT/suite"
step done
