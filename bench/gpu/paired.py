#!/usr/bin/env python3
"""Medians of interleaved runs: RUNS holds one line per run, "REP CONFIG VALUE" (a run without
VALUE failed and is left out). Prints each configuration's median and the median (min..max) of its
paired differences to the `base` run of the same repetition; with --ratio, of its paired ratios
(as percentages added).
  python3 bench/gpu/paired.py [--ratio] RUNS CONFIG...
  (used by launch_cost.sh, after_window_ab.sh, proof_run6.sh, idle_cost.sh)"""
import collections, statistics, sys

args = sys.argv[1:]
ratio = args[0] == "--ratio"
if ratio: args = args[1:]
runs = collections.defaultdict(dict)
for line in open(args[0]):
    rep, cfg, *v = line.split()
    if v: runs[int(rep)][cfg] = float(v[0])
print("config   value (median)  %s vs base, paired (median, min..max)" % ("% added" if ratio else "added"))
for cfg in args[1:]:
    vals = [r[cfg] for r in runs.values() if cfg in r]
    if ratio: d = sorted(100 * (r[cfg] / r["base"] - 1) for r in runs.values() if cfg in r and "base" in r)
    else: d = sorted(r[cfg] - r["base"] for r in runs.values() if cfg in r and "base" in r)
    if not vals: continue
    extra = "" if cfg == "base" else "%+.2f (%+.2f..%+.2f), n=%d" % (statistics.median(d), d[0], d[-1], len(d))
    print("%-14s %8.3f    %s" % (cfg, statistics.median(vals), extra))
