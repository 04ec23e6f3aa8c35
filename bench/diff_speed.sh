#!/usr/bin/env bash
# `cutrace diff` against `cutrace summary` on two synthetic training traces of RECORDS records
# each (bench/summary_trace_gen.cpp; B has 5% more records than A, so the runs differ in length):
#   bash bench/diff_speed.sh [RECORDS] [REPS]        (default 1,000,000 records, 3 runs)
# Builds the CLI and the generator (skipped when CUTRACE / GEN name prebuilt ones), reads both
# traces once to warm the page cache, then times REPS runs each of
#   summaries: `cutrace summary --json A` then `cutrace summary --json B`
#   diff:      `cutrace diff --json A B`
# pinned to one CPU (taskset), and prints the best wall and CPU seconds (user + sys) of each. The
# diff reads each trace once into a summary model, so it should take no longer than the two
# summaries; the ratio diff / summaries is printed.
set -euo pipefail
RECORDS=${1:-1000000}
REPS=${2:-3}
cd "$(dirname "$0")/.."
CT=${CUTRACE:-build/bin/cutrace}
GEN=${GEN:-}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/diff_speed.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
if [[ -z ${CUTRACE:-} ]]; then make -j2 build/bin/cutrace >/dev/null; fi
if [[ -z $GEN ]]; then
  make -j2 build/lib/libcutrace_format.a >/dev/null
  GEN=$TMP/summary_trace_gen
  LZ4_A=$( (ls /usr/lib/x86_64-linux-gnu/liblz4.a /usr/lib/liblz4.a 2>/dev/null || true) | head -1)
  ${CXX:-g++} -O2 -std=c++17 -I. bench/summary_trace_gen.cpp build/lib/libcutrace_format.a "$LZ4_A" -o "$GEN"
fi
A=$TMP/a.cutrace
B=$TMP/b.cutrace
"$GEN" "$A" "$RECORDS" v2 >/dev/null
"$GEN" "$B" "$((RECORDS + RECORDS / 20))" v2 >/dev/null
cat "$A" "$B" >/dev/null
CPU=$( (taskset -cp $$ 2>/dev/null || true) | awk '{print $NF}' | cut -d, -f1 | cut -d- -f1)
CPU=${CPU:-0}

python3 - "$REPS" "$CPU" "$CT" "$A" "$B" <<'PY'
import resource, subprocess, sys, time
reps, cpu, ct, a, b = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]

def timed(cmds):
    """Best wall and best CPU seconds over reps of running cmds one after the other."""
    walls, cpus = [], []
    for _ in range(reps):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.monotonic()
        for cmd in cmds:
            if subprocess.run(["taskset", "-c", cpu] + cmd, stdout=subprocess.DEVNULL).returncode != 0:
                sys.exit("failed: " + " ".join(cmd))
        walls.append(time.monotonic() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)

sw, sc = timed([[ct, "summary", "--json", a], [ct, "summary", "--json", b]])
dw, dc = timed([[ct, "diff", "--json", a, b]])
import json
n = sum(json.loads(subprocess.run([ct, "summary", "--json", p], capture_output=True, text=True).stdout)["records"]
        for p in (a, b))
print(f"records (A + B)    {n:,}")
print(f"two summaries      wall {sw:.3f} s   CPU {sc:.3f} s")
print(f"cutrace diff       wall {dw:.3f} s   CPU {dc:.3f} s")
print(f"diff / summaries   wall {dw / sw:.2f}   CPU {dc / sc:.2f}")
PY
