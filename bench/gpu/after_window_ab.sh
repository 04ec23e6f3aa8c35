#!/usr/bin/env bash
# Per-launch cost after a closed capture window, two cutrace builds side by side (the device call
# of 2026-11-30, fifth session: the build that keeps CUPTI's driver callbacks on after the first
# window against the one that switched them off with the activity kinds). bench/gpu/after_window.py
# with 50,000 timed launches, no profiler / NEW / OLD under --capture-range manual, REPS repetitions
# in ABBA order pinned to 8 CPUs; prints each run and the paired medians (us per launch).
#   bash bench/gpu/after_window_ab.sh NEW_CUTRACE OLD_CUTRACE OUT [REPS]
set -u
NEW=$1; OLD=$2; OUT=${3:-/tmp/cutrace-after-window}; REPS=${4:-4}
mkdir -p "$OUT"
us() { grep -o '"us_per_launch": [0-9.]*' | grep -o '[0-9.]*$'; }
run() {
  case $1 in
    base) taskset -c 2-9 python3 bench/gpu/after_window.py --n 50000 2>/dev/null | us ;;
    *) local ct=$NEW; [ "$1" = old ] && ct=$OLD
       taskset -c 2-9 "$ct" record -o "$OUT/t" --capture-range manual -- \
         python3 bench/gpu/after_window.py --n 50000 2>/dev/null | us
       rm -rf "$OUT/t" ;;
  esac
}
: > "$OUT/ab.txt"
for ((rep = 1; rep <= REPS; rep++)); do
  order=(base new old); ((rep % 2 == 0)) && order=(old new base)
  for c in "${order[@]}"; do echo "$rep $c $(run "$c")" | tee -a "$OUT/ab.txt"; done
done
python3 "$(dirname "$0")/paired.py" "$OUT/ab.txt" base new old
