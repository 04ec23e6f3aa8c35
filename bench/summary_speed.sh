#!/usr/bin/env bash
# Throughput of `cutrace summary --json` on one core, on a synthetic training trace of 10M records
# (bench/summary_trace_gen.cpp: steps of ~1,500 kernels, NCCL kernels overlapping them, copies,
# sets, events, syncs, allocations, NVTX ranges, samples; ~28 bytes a record on disk).
#   bash bench/summary_speed.sh [RECORDS] [REPS] [v2|v1]     (v1: the trace in format 1.1)
# Builds the CLI and the generator (skipped when CUTRACE / GEN name prebuilt ones), writes the
# trace under $TMPDIR, reads it once to warm the page cache, then times REPS runs (best kept) of
#   reader:  `cutrace dump TRACE --type End`: decodes and checks every block, prints one record
#   summary: `cutrace summary --json TRACE`
# each pinned to one CPU (taskset), and prints records/s. The difference is what the summary's
# aggregation costs on top of the one reader library.
set -euo pipefail
RECORDS=${1:-10000000}
REPS=${2:-3}
FORMAT=${3:-v2}
cd "$(dirname "$0")/.."
CT=${CUTRACE:-build/bin/cutrace}
GEN=${GEN:-}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/summary_speed.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
if [[ -z ${CUTRACE:-} ]]; then make -j"$(nproc)" build/bin/cutrace >/dev/null; fi
if [[ -z $GEN ]]; then
  make -j"$(nproc)" build/lib/libcutrace_format.a >/dev/null
  GEN=$TMP/summary_trace_gen
  LZ4_A=$( (ls /usr/lib/x86_64-linux-gnu/liblz4.a /usr/lib/liblz4.a 2>/dev/null || true) | head -1)
  ${CXX:-g++} -O2 -std=c++17 -I. bench/summary_trace_gen.cpp build/lib/libcutrace_format.a "$LZ4_A" -o "$GEN"
fi
TRACE=$TMP/speed.cutrace
"$GEN" "$TRACE" "$RECORDS" "$FORMAT"
cat "$TRACE" >/dev/null
CPU=$( (taskset -cp $$ 2>/dev/null || true) | awk '{print $NF}' | cut -d, -f1 | cut -d- -f1)
CPU=${CPU:-0}

best() {  # best wall seconds of REPS runs of "$@"
  local b=""
  for _ in $(seq "$REPS"); do
    local s e
    s=$(date +%s.%N)
    taskset -c "$CPU" "$@" >/dev/null || { echo "failed: $*" >&2; exit 1; }
    e=$(date +%s.%N)
    b=$(python3 -c "import sys; t=$e-$s; b='$b'; print(t if not b or t < float(b) else b)")
  done
  echo "$b"
}

R=$(best "$CT" dump "$TRACE" --type End) || exit 1
S=$(best "$CT" summary --json "$TRACE") || exit 1
N=$("$CT" summary --json "$TRACE" | python3 -c "import json,sys; print(json.load(sys.stdin)['records'])")
python3 - "$N" "$R" "$S" <<'EOF'
import sys
n, r, s = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"records            {n:,}")
print(f"reader only        {r:.3f} s  {n / r / 1e6:.1f} M records/s")
print(f"cutrace summary    {s:.3f} s  {n / s / 1e6:.1f} M records/s  "
      f"(aggregation {1e9 * (s - r) / n:.1f} ns a record on top of the reader)")
EOF
