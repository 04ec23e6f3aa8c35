#!/usr/bin/env bash
# Throughput of `cutrace summary --json` on one core, on a synthetic training trace of 10M records
# (bench/summary_trace_gen.cpp: steps of ~1,500 kernels, NCCL kernels overlapping them, copies,
# sets, events, syncs, allocations, NVTX ranges, samples; ~28 bytes a record on disk).
#   bash bench/summary_speed.sh [RECORDS] [REPS] [v2|v1]     (v1: the trace in format 1.1)
# Builds the CLI and the generator (skipped when CUTRACE / GEN name prebuilt ones), writes the
# trace under $TMPDIR, reads it once to warm the page cache, then times REPS runs of
#   reader:  `cutrace dump TRACE --type End`: decodes and checks every block, prints one record
#   summary: `cutrace summary --json TRACE`
# each pinned to one CPU (taskset), and prints records/s by wall time and by CPU time (user + sys
# from getrusage), the best of REPS runs each. On a shared, loaded machine only the CPU figure
# means much. The difference is what the summary's aggregation costs on top of the reader.
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

best() {  # "wall cpu": the best wall seconds and the best CPU seconds (user + sys) of REPS runs
  python3 - "$REPS" "$CPU" "$@" <<'PY'
import resource, subprocess, sys, time
reps, cpu, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
walls, cpus = [], []
for _ in range(reps):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    if subprocess.run(["taskset", "-c", cpu] + cmd, stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit("failed: " + " ".join(cmd))
    walls.append(time.monotonic() - t)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
print(min(walls), min(cpus))
PY
}

R=$(best "$CT" dump "$TRACE" --type End) || exit 1
S=$(best "$CT" summary --json "$TRACE") || exit 1
N=$("$CT" summary --json "$TRACE" | python3 -c "import json,sys; print(json.load(sys.stdin)['records'])")
python3 - "$N" $R $S <<'EOF'
import sys
n = int(sys.argv[1])
rw, rc, sw, sc = map(float, sys.argv[2:6])
print(f"records            {n:,}")
print(f"reader only        wall {rw:.3f} s  {n / rw / 1e6:.1f} M records/s   "
      f"CPU {rc:.3f} s  {n / rc / 1e6:.1f} M records/s")
print(f"cutrace summary    wall {sw:.3f} s  {n / sw / 1e6:.1f} M records/s   "
      f"CPU {sc:.3f} s  {n / sc / 1e6:.1f} M records/s")
print(f"aggregation        {1e9 * (sc - rc) / n:.1f} ns of CPU a record on top of the reader")
EOF
