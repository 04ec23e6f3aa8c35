#!/usr/bin/env bash
# The GPU-timing sample (--gpu-sample) on the GPU machine, one call:
#  1. accuracy on GPT small against torch.profiler (truth A; then cutrace sampled 20% in default
#     mode with its 200 ms periods and with 1 s periods, and with end events; truth B for the noise
#     floor), with the collector's count of windows and CUPTI's switches (CUTRACE_VERBOSE);
#  2. GPT small's (launch-bound) overhead by configuration: full CUPTI timing (the default), sampled
#     20% and 10%, no GPU timing (the shim alone), end events sampled 20% (bench/suite.py, REPS
#     repetitions, ABBA, pinned CPUs, paired ratios to the base run of each repetition).
#   CUTRACE=... WORKLOADS=... bash bench/gpu/sample_check.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-sample}; REPS=${2:-3}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }
gpt() { python3 "$W/train_gpt.py" --preset small --nvtx "$@" | tail -1 | cut -c1-150; }

step "GPT small: truth A, cutrace sampled (auto 0.2, auto 0.2/1000, end 0.2), truth B"
gpt --torch-profiler cuda --truth "$OUT/truthA.json"
for cfg in "auto 0.2" "auto 0.2/1000" "end 0.2"; do
  set -- $cfg
  d="$OUT/gpt_${1}_${2//\//_}"
  CUTRACE_VERBOSE=1 $CT record -o "$d" --gpu-timing "$1" --gpu-sample "$2" -- \
    python3 "$W/train_gpt.py" --preset small --nvtx 2> "$d.err" | tail -1 | cut -c1-150
done
gpt --torch-profiler cuda --truth "$OUT/truthB.json"
for d in "$OUT"/gpt_*/; do
  d=${d%/}
  step "$(basename "$d") vs truth A"
  grep -E "GPU-timing sample|CUPTI:" "$d.err" | sed 's/^cutrace\[[0-9]*\] //'
  $CT dump "$d"/*.cutrace --type Meta | grep -o -E '"(gpu_timing|gpu_sample[a-z_]*|gpu_times_missing|cupti_[a-z_]*)" value=#[0-9]+ "[^"]*"' | tr '\n' ' '; echo
  python3 bench/compare_truth.py --cutrace "$CT" "$d" "$OUT/truthA.json" --tol 0.02 | grep -v "^  count\|^  only"
done
step "truth B vs truth A (noise floor)"
python3 bench/compare_truth.py "$OUT/truthB.json" "$OUT/truthA.json" --tol 0.02 | tail -4
$CT summary "$OUT/gpt_auto_0.2" | sed -n '1,12p' | grep -E "sampled|status"

step "GPT small overhead: bench/suite.py, $REPS repetitions (ABBA), taskset -c 2-9"
python3 bench/suite.py run "$OUT/suite" --workloads small --reps "$REPS" --cpus 2-9 --cutrace "$CT" \
  --workloads-dir "$W" --configs base,cutrace,cutrace-sample20,cutrace-sample10,cutrace-none,cutrace-end-sample20 \
  | grep -v '^{'
