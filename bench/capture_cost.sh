#!/usr/bin/env bash
# What lossless capture costs, on the fake driver (no GPU needed). Medians of REPS interleaved runs;
# every recorded run is checked to have dropped nothing (a run that dropped records would time
# the cheap drop path, not recording).
#  1. The app thread's cost: ns per launch (N launches, one thread) without the shim and recorded
#     with GPU timing none and end; ns per NVTX push/pop pair without the shim (NVTX calls are
#     then no-ops) and recorded. LOOP_CLOCK=cpu: the launching thread's CPU time.
#  2. The collector's rate on one core: records it took in, per second of its own CPU time
#     (meta records_captured / collector_cpu_ns), for launches (none, end) and NVTX pairs.
#  3. Peak RSS (VmHWM) of T threads that launch little (100 launches each), without and with the
#     shim, for T = 1, 8, 32, 128.
#   bash bench/capture_cost.sh [REPS] [N]     (after `make all build/test/e2e/launch_loop build/test/e2e/stress`)
set -u
REPS=${1:-3}; N=${2:-200000}; B=${BUILD:-build}
export LD_LIBRARY_PATH=$PWD/$B/test/fake_cuda
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
CLI=$PWD/$B/bin/cutrace
SHIM=$PWD/$B/lib/libcutrace.so
rec() {  # label, timing, probe: one recorded run into its own directory; the probe's ns to $T/label
  local label=$1 timing=$2 probe=$3 d
  d=$(mktemp -d -p "$T")
  env LOOP_CLOCK=cpu LD_PRELOAD="$SHIM" NVTX_INJECTION64_PATH="$SHIM" CUTRACE_OUTPUT="$d" CUTRACE_SAMPLE_HZ=0 \
    CUTRACE_BACKTRACE=none CUTRACE_GPU_TIMING="$timing" "$B/test/e2e/launch_loop" "$N" "$probe" 0 >> "$T/$label" 2>/dev/null
  "$CLI" summary --json "$d" | python3 -c '
import json, sys
n = json.load(sys.stdin)["dropped_records"]
if n:
    sys.exit(sys.argv[1] + ": %d records dropped: this run timed dropping, not recording" % n)' "$label" || exit 1
  "$CLI" dump "$d"/*.cutrace 2>/dev/null | grep -E 'Meta .*"(records_captured|collector_cpu_ns)"' |
    sed -E 's/.*"(records_captured|collector_cpu_ns)" value=#[0-9]+ "([0-9]+)".*/\1 \2/' | tr '\n' ' ' >> "$T/$label.collector"
  echo >> "$T/$label.collector"
}
for r in $(seq "$REPS"); do
  env LOOP_CLOCK=cpu "$B/test/e2e/launch_loop" "$N" launch 0 >> "$T/base_launch"
  rec none_launch none launch
  rec end_launch end launch
  env LOOP_CLOCK=cpu "$B/test/e2e/launch_loop" "$N" nvtx 0 >> "$T/base_nvtx"
  rec none_nvtx none nvtx
done
rss() {  # threads, with|without: VmHWM in KiB of stress THREADS 100
  local d
  d=$(mktemp -d -p "$T")
  if [[ $2 == with ]]; then
    env LD_PRELOAD="$SHIM" CUTRACE_OUTPUT="$d" CUTRACE_SAMPLE_HZ=0 /usr/bin/time -f %M "$B/test/e2e/stress" "$1" 100 2>&1 >/dev/null | tail -1
  else
    /usr/bin/time -f %M "$B/test/e2e/stress" "$1" 100 2>&1 >/dev/null | tail -1
  fi
}
for t in 1 8 32 128; do
  for r in $(seq "$REPS"); do
    rss "$t" without >> "$T/rss_without_$t"
    rss "$t" with >> "$T/rss_with_$t"
  done
done
python3 - "$T" "$N" <<'PY'
import os, statistics, sys
t, n = sys.argv[1], int(sys.argv[2])
def med(name):
    with open(os.path.join(t, name)) as f:
        return statistics.median(float(x) for x in f.read().split())
print(f"App thread, ns per call (median of runs, {n:,} calls each, thread CPU time; 0 records dropped in every recorded run):")
base = med("base_launch")
print(f"  launch without the shim        {base:8.1f}")
for m in ("none", "end"):
    v = med(f"{m}_launch")
    print(f"  launch recorded, timing {m:5}  {v:8.1f}   (+{v - base:.1f})")
nb = med("base_nvtx")
nv = med("none_nvtx")
print(f"  NVTX push/pop pair, no shim    {nb:8.1f}")
print(f"  NVTX push/pop pair, recorded   {nv:8.1f}   (+{nv - nb:.1f})")
print("Collector, records per second of its CPU time (median):")
for label, what in (("none_launch", "launches, timing none"), ("end_launch", "launches, timing end"),
                    ("none_nvtx", "NVTX push/pop records")):
    rates = []
    with open(os.path.join(t, label + ".collector")) as f:
        for line in f:
            kv = line.split()
            d = dict(zip(kv[::2], kv[1::2]))
            if "records_captured" in d and "collector_cpu_ns" in d:
                rates.append(int(d["records_captured"]) / (int(d["collector_cpu_ns"]) / 1e9))
    print(f"  {what:24} {statistics.median(rates) / 1e6:6.2f} M/s")
print("Peak RSS of THREADS threads x 100 launches (median KiB):")
for th in (1, 8, 32, 128):
    a, b = med(f"rss_without_{th}"), med(f"rss_with_{th}")
    print(f"  {th:3} threads: without {a:8.0f}   with {b:8.0f}   (+{(b - a) / 1024:.1f} MiB)")
PY
