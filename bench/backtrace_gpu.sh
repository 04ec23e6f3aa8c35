#!/usr/bin/env bash
# Call stacks on the GPU machine (run after `make`): step time of train_gpt.py without cutrace and
# recorded with --backtrace none|sync|all (interleaved runs, medians; the small preset is
# launch-bound, so `all`'s per-launch unwind shows there), then the sync call sites that the
# summary of the last `sync` run attributes (torch.cuda.synchronize() in the training loop:
# libcudart -> libtorch -> the Python interpreter's native frames).
#   bash bench/backtrace_gpu.sh [REPS] [PRESET]
set -u
REPS=${1:-3}; PRESET=${2:-small}
W=${WORKLOADS:-../shared/workloads}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
TMP=$(mktemp -d)
export PYTHONUNBUFFERED=1
steps=30; [ "$PRESET" = large ] && steps=10
for rep in $(seq "$REPS"); do
  python3 "$W/train_gpt.py" --preset "$PRESET" --steps $steps | tail -1 > "$TMP/base.$rep"
  for bt in none sync all; do
    rm -rf "$TMP/trace.$bt"
    $CT record --backtrace "$bt" -o "$TMP/trace.$bt" -- \
      python3 "$W/train_gpt.py" --preset "$PRESET" --steps $steps 2>/dev/null | tail -1 > "$TMP/$bt.$rep"
  done
done
python3 - "$TMP" <<'PY'
import glob, json, os, statistics, sys
tmp = sys.argv[1]
base = statistics.median(json.load(open(f))["step_ms"] for f in glob.glob(f"{tmp}/base.*"))
print(f"{'config':16} {'step_ms median':>15} {'runs':>30} {'vs base':>9} {'trace bytes':>12}")
for m in ["base", "none", "sync", "all"]:
    runs = [json.load(open(f))["step_ms"] for f in sorted(glob.glob(f"{tmp}/{m}.*"))]
    med = statistics.median(runs)
    d = f"{tmp}/trace.{m}"
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) if os.path.isdir(d) else 0
    print(f"{('--backtrace ' + m) if m != 'base' else 'no cutrace':16} {med:15.2f} "
          f"{' '.join(f'{r:.1f}' for r in runs):>30} {(med / base - 1) * 100:+8.2f}% {size:12d}")
PY
echo
$CT summary "$TMP/trace.sync" | sed -n '/^Sync call sites/,/^$/p' | head -40
$CT summary --json "$TMP/trace.all" | python3 -c '
import json, sys
j = json.load(sys.stdin)["sync_call_sites"]
print("--backtrace all: distinct sync stacks", j["distinct"], "with stack", j["with_stack"],
      "without", j["without_stack"])'
rm -rf "$TMP"
