#!/usr/bin/env bash
# Overhead of cutrace on the reference workloads: interleaved runs (base, then each cutrace
# mode, repeated), medians of train_gpt.py's step_ms. Run on the GPU machine after `make`.
#   bash bench/overhead.sh [REPS] [PRESETS] [MODES]
#   e.g. bash bench/overhead.sh 3 "small large" "end events cupti"
set -u
REPS=${1:-3}; PRESETS=${2:-"small large"}; MODES=${3:-"end cupti"}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
TMP=$(mktemp -d)
export PYTHONUNBUFFERED=1
for preset in $PRESETS; do
  steps=30; [ "$preset" = large ] && steps=10
  for rep in $(seq "$REPS"); do
    python3 "$W/train_gpt.py" --preset "$preset" --steps $steps | tail -1 > "$TMP/$preset.base.$rep"
    for m in $MODES; do
      $CT record --gpu-timing "$m" -o "$TMP/trace.$preset.$m.$rep" -- \
        python3 "$W/train_gpt.py" --preset "$preset" --steps $steps 2>/dev/null | tail -1 > "$TMP/$preset.$m.$rep"
    done
  done
done
python3 - "$TMP" "$PRESETS" "$MODES" <<'PY'
import json, os, statistics, sys, glob
tmp, presets, modes = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
print(f"{'preset':8} {'config':8} {'step_ms median':>15} {'runs':>30} {'overhead':>9} {'trace bytes':>12}")
for p in presets:
    base = statistics.median(json.load(open(f))["step_ms"] for f in glob.glob(f"{tmp}/{p}.base.*"))
    for m in ["base"] + modes:
        runs = [json.load(open(f))["step_ms"] for f in sorted(glob.glob(f"{tmp}/{p}.{m}.*"))]
        med = statistics.median(runs)
        size = sum(os.path.getsize(os.path.join(d, f)) for d in glob.glob(f"{tmp}/trace.{p}.{m}.*") for f in os.listdir(d)) // max(1, len(runs)) if m != "base" else 0
        print(f"{p:8} {m:8} {med:15.2f} {' '.join(f'{r:.1f}' for r in runs):>30} {(med / base - 1) * 100:+8.2f}% {size:12d}")
PY
rm -rf "$TMP"
