#!/usr/bin/env bash
# The GPU-timing sample (--gpu-sample) on the GPU machine, one call:
#  1. accuracy on GPT small against torch.profiler (truth A; then cutrace sampled 20% in default
#     mode, in 200 ms periods, and with end events; truth B for the noise floor), with the
#     collector's count of windows and time spent switching CUPTI on and off (CUTRACE_VERBOSE);
#  2. tiny_kernels.py us per launch: no profiler, outside a window, no GPU timing, CUPTI, CUPTI
#     sampled 20%, end events (REPS repetitions, ABBA, pinned CPUs), paired to the base run.
#   CUTRACE=... WORKLOADS=... bash bench/gpu/sample_check.sh OUT [REPS]
set -u
OUT=${1:-/tmp/cutrace-sample}; REPS=${2:-3}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
step() { echo; echo "=== $(date +%T) $*"; }
gpt() { python3 "$W/train_gpt.py" --preset small --nvtx "$@" | tail -1 | cut -c1-150; }

step "GPT small: truth A, cutrace sampled (auto 0.2, auto 0.2/200, end 0.2), truth B"
gpt --torch-profiler cuda --truth "$OUT/truthA.json"
for cfg in "auto 0.2" "auto 0.2/200" "end 0.2"; do
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

step "tiny_kernels.py us per launch: $REPS repetitions, ABBA, taskset -c 2-9"
tiny() { taskset -c 2-9 "$@" python3 "$W/tiny_kernels.py" 2>/dev/null | grep -o '"us_per_launch": [0-9.]*' | grep -o '[0-9.]*$'; }
cfgs=(base off none cupti cupti-s20 end)
: > "$OUT/tiny.txt"
for ((rep = 1; rep <= REPS; rep++)); do
  order=("${cfgs[@]}"); ((rep % 2 == 0)) && order=(end cupti-s20 cupti none off base)
  for c in "${order[@]}"; do
    case $c in
      base) v=$(tiny) ;;
      off) v=$(tiny $CT record -o "$OUT/tk" --capture-range manual --) ;;
      none|cupti|end) v=$(tiny $CT record -o "$OUT/tk" --gpu-timing $c --) ;;
      cupti-s20) v=$(tiny $CT record -o "$OUT/tk" --gpu-timing cupti --gpu-sample 0.2 --) ;;
    esac
    rm -rf "$OUT/tk"; echo "$rep $c $v" | tee -a "$OUT/tiny.txt"
  done
done
python3 - "$OUT/tiny.txt" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    rep, cfg, *v = line.split()
    if v: runs[int(rep)][cfg] = float(v[0])
print("config     us/launch (median)  added vs base, paired (median, min..max)")
for cfg in ["base", "off", "none", "cupti", "cupti-s20", "end"]:
    vals = [r[cfg] for r in runs.values() if cfg in r]
    d = sorted(r[cfg] - r["base"] for r in runs.values() if cfg in r and "base" in r)
    if not vals: continue
    extra = "" if cfg == "base" else "%+.2f (%+.2f..%+.2f)" % (statistics.median(d), d[0], d[-1])
    print("%-10s %8.2f            %s" % (cfg, statistics.median(vals), extra))
PY
