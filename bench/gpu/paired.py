#!/usr/bin/env python3
"""Medians of interleaved per-launch runs: RUNS holds one line per run, "REP CONFIG VALUE" (us per
launch; a run without VALUE failed and is left out). Prints each configuration's median and the
median (min..max) of its paired differences to the `base` run of the same repetition.
  python3 bench/gpu/paired.py RUNS CONFIG...   (used by launch_cost.sh, after_window_ab.sh, proof_run6.sh)"""
import collections, statistics, sys

runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    rep, cfg, *v = line.split()
    if v: runs[int(rep)][cfg] = float(v[0])
print("config   us/launch (median)  added vs base, paired (median, min..max)")
for cfg in sys.argv[2:]:
    vals = [r[cfg] for r in runs.values() if cfg in r]
    d = sorted(r[cfg] - r["base"] for r in runs.values() if cfg in r and "base" in r)
    if not vals: continue
    extra = "" if cfg == "base" else "%+.2f (%+.2f..%+.2f)" % (statistics.median(d), d[0], d[-1])
    print("%-8s %8.2f            %s" % (cfg, statistics.median(vals), extra))
