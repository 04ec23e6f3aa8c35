#!/usr/bin/env bash
# Timeline fluidity with 1M+ events: writes a synthetic one-rank job (test/report/trace_gen.cpp:
# STEPS steps of KERNELS launches, ~2 events a launch), reports it, and measures pan/zoom frame
# times in headless chromium (bench/report_fps.mjs). Needs `make test`'s build (the generator).
#   bash bench/report_fps.sh [STEPS (500)] [KERNELS (1000)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/${BUILD:-build}
steps=${1:-500}
kernels=${2:-1000}
work=$(mktemp -d /tmp/cutrace-report-fps.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/job"
make -C "$root" -s "$build/test/report_trace_gen" "$build/bin/cutrace" BUILD="${BUILD:-build}" >/dev/null
"$build/test/report_trace_gen" "$work/job" 1 "$steps" "$kernels" >/dev/null
ls -l "$work"/job/*.cutrace | awk '{print "trace: " $5 " bytes"}'
start=$(date +%s.%N)
"$build/bin/cutrace" report "$work/job" -o "$work/report.html"
echo "cutrace report: $(echo "$(date +%s.%N) - $start" | bc) s"
node "$root/bench/report_fps.mjs" "$work/report.html" "${FRAMES:-300}"
