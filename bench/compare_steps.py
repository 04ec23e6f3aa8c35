#!/usr/bin/env python3
"""NVTX step ranges recorded by cutrace vs the step wall times train_gpt.py printed.
  python3 bench/compare_steps.py SUMMARY.json WORKLOAD_OUTPUT.json [--warmup 5]
For each timed step i (ranges step_<i>), compares the range's GPU projection (first GPU start to
last GPU end of the work launched inside it) and its CPU duration with the measured wall time."""
import argparse, json, statistics
ap = argparse.ArgumentParser(); ap.add_argument("summary"); ap.add_argument("output")
ap.add_argument("--warmup", type=int, default=5); a = ap.parse_args()
s = json.load(open(a.summary))
out = json.loads([l for l in open(a.output) if l.startswith("{")][-1])
ranges = {r["name"]: r for r in s.get("ranges", [])}
rows = []
for j, wall in enumerate(out["step_ms_each"]):
    r = ranges.get(f"step_{a.warmup + j}")
    if not r: continue
    gpu = r["gpu_total_ns"] / 1e6 if r.get("gpu_count") else float("nan")
    rows.append((a.warmup + j, wall, r["cpu_total_ns"] / 1e6, gpu))
print(f"{'step':>5} {'wall ms':>9} {'range CPU ms':>13} {'range GPU ms':>13} {'GPU/wall':>9}")
for row in (rows[:5] + rows[-3:] if len(rows) > 8 else rows):
    i, wall, cpu, gpu = row
    print(f"{i:5d} {wall:9.2f} {cpu:13.2f} {gpu:13.2f} {gpu / wall:9.3f}")
ratios = [g / w for _, w, _, g in rows if g == g]
print(f"steps matched: {len(rows)} of {len(out['step_ms_each'])}; GPU projection / wall time: "
      f"median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}")
