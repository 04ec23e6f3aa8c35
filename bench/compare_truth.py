#!/usr/bin/env python3
"""Compares a cutrace trace of train_gpt.py with torch.profiler's truth (--truth JSON) for the
same timed steps: per-kernel-name counts and GPU time, memcpy/memset counts.
  python3 bench/compare_truth.py TRACE_DIR_OR_FILE TRUTH.json [--min-mean-us 10] [--tol 0.10]
  python3 bench/compare_truth.py TRUTH2.json TRUTH.json    (two torch.profiler runs: the noise floor)
  python3 bench/compare_truth.py TRACE TRUTH.json --also TRUTH2.json ...   (against the truths' mean
      per name: one torch.profiler run is itself 1-2% off another on some names; the worst of each
      truth against that mean is printed as the noise floor)
The timed steps are found from the trace itself: train_gpt.py synchronises the device once after
its warm-up and once after each timed step, so the window is (sync[-steps-1], sync[-1]]."""
import argparse, collections, json, os, re, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("trace"); ap.add_argument("truth")
ap.add_argument("--min-mean-us", type=float, default=10.0)
ap.add_argument("--tol", type=float, default=0.10)
ap.add_argument("--cutrace", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "cutrace"))
ap.add_argument("--also", nargs="+", default=[], help="more torch.profiler truths of the same steps: compare with the mean")
a = ap.parse_args()
truth = json.load(open(a.truth))
if a.also:  # the reference per name: the mean GPU time of every truth run (counts: the first's)
    runs = [json.load(open(f)) for f in [a.truth] + a.also]  # unchanged copies (truth is averaged)
    for n, t in truth["kernels"].items():
        totals = [r["kernels"][n]["total_ns"] for r in runs if n in r["kernels"]]
        t["total_ns"] = sum(totals) / len(totals)
    for r, f in zip(runs, [a.truth] + a.also):
        errs = [abs(r["kernels"][n]["total_ns"] / t["total_ns"] - 1) for n, t in truth["kernels"].items()
                if n in r["kernels"] and t["count"] and t["total_ns"] / t["count"] >= a.min_mean_us * 1000]
        print(f"truth {os.path.basename(f)} against the mean of {len(runs)}: worst per-name {max(errs) * 100:.2f}% "
              f"({len(errs)} names)")
steps = truth["steps"]
path = a.trace
if path.endswith(".json"):  # another torch.profiler run of the same steps: run-to-run noise
    other = json.load(open(path))
    got = {n: [v["count"], v["total_ns"], v["count"]] for n, v in other["kernels"].items()}
    om = other["memops"]
    mem = {"Memcpy": sum(v for k, v in om.items() if k.startswith("Memcpy")),
           "Memset": sum(v for k, v in om.items() if k.startswith("Memset"))}
elif os.path.isdir(path):
    path = os.path.join(path, sorted(f for f in os.listdir(path) if f.endswith(".cutrace"))[0])

def dump(kind):
    out = subprocess.run([a.cutrace, "dump", path, "--type", kind], capture_output=True, text=True, check=True).stdout
    return [l for l in out.splitlines() if f" {kind} " in l]

span = re.compile(r"(cpu|gpu)=\[(\d+)\.\.(\d+)\]")
def spans(line):
    return {m.group(1): (int(m.group(2)), int(m.group(3))) for m in span.finditer(line)}

# name -> launch configuration (grid, block) -> [count, GPU time of the timed ones, timed]
by_config = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0, 0]))

def from_trace():
    syncs = sorted(spans(l)["cpu"][1] for l in dump("Sync") if "kind=context" in l)
    if len(syncs) < steps + 1:
        sys.exit(f"only {len(syncs)} context synchronisations in the trace; need {steps + 1}")
    lo, hi = syncs[-steps - 1], float("inf")  # the loss read-back follows the last sync
    got = collections.defaultdict(lambda: [0, 0, 0])  # count, GPU time of the timed ones, timed
    by_config.clear()
    name_re = re.compile(r'name=#\d+ "(.*)" (grid=\S+ block=\S+)')
    for l in dump("Kernel"):
        s = spans(l)
        if not lo < s["cpu"][0] <= hi: continue
        m = name_re.search(l)
        for k in (got[m.group(1)], by_config[m.group(1)][m.group(2)]):
            k[0] += 1
            if s["gpu"][1]: k[1] += s["gpu"][1] - s["gpu"][0]; k[2] += 1
    mem = collections.Counter()
    for kind in ("Memcpy", "Memset"):
        for l in dump(kind):
            if lo < spans(l)["cpu"][0] <= hi: mem[kind] += 1
    return got, mem

if not path.endswith(".json"):
    got, mem = from_trace()

tk = truth["kernels"]
count_bad = [(n, tk[n]["count"], got.get(n, [0])[0]) for n in tk if got.get(n, [0])[0] != tk[n]["count"]]
extra = [(n, got[n][0]) for n in got if n not in tk]
print(f"window: the last {steps} steps; kernel names: truth {len(tk)}, cutrace {len(got)}")
print(f"kernel launches: truth {sum(v['count'] for v in tk.values())}, cutrace {sum(v[0] for v in got.values())}")
print(f"names with a different count: {len(count_bad)}; names only in cutrace: {len(extra)}")
for n, t, g in count_bad[:10]: print(f"  count truth {t} cutrace {g}: {n[:110]}")
for n, g in extra[:10]: print(f"  only cutrace ({g}): {n[:110]}")
tm = collections.Counter(truth["memops"])
print(f"memcpy: truth {sum(v for k, v in tm.items() if k.startswith('Memcpy'))}, cutrace {mem['Memcpy']}; "
      f"memset: truth {sum(v for k, v in tm.items() if k.startswith('Memset'))}, cutrace {mem['Memset']}")
# A sampled trace (--gpu-sample) times some of the launches: a name's GPU time is estimated per
# launch configuration (grid, block), as the mean of its timed launches x its count, and the name's
# mean over all its timed launches stands in for a configuration never timed (without sampling:
# the plain total). One name launched with several sizes (fills, copies) takes different times.
timed, launches = sum(v[2] for v in got.values()), sum(v[0] for v in got.values())
def estimate(n, v):
    mean = v[1] / v[2]
    return sum(c[1] * c[0] / c[2] if c[2] else mean * c[0] for c in by_config[n].values()) if n in by_config else v[1] * v[0] / v[2]
est = {n: estimate(n, v) for n, v in got.items() if v[2]}
if timed < launches:
    print(f"sampled: {timed} of {launches} launches timed ({timed / launches:.1%}); {len(got) - len(est)} names "
          f"never timed; per-name GPU time = per launch configuration, mean of its timed launches x its count")
rows, worst = [], 0.0
for n, t in tk.items():
    if n not in got or t["count"] == 0 or t["total_ns"] / t["count"] < a.min_mean_us * 1000: continue
    if n not in est:
        worst = float("inf"); rows.append((worst, -1.0, t["total_ns"] / t["count"] / 1000, n)); continue
    err = est[n] / t["total_ns"] - 1
    worst = max(worst, abs(err)); rows.append((abs(err), err, t["total_ns"] / t["count"] / 1000, n))
tt, gt = sum(v["total_ns"] for v in tk.values()), sum(est.values())
print(f"GPU time: truth {tt / 1e6:.2f} ms, cutrace {gt / 1e6:.2f} ms ({(gt / tt - 1) * 100:+.2f}%)")
print(f"names with mean >= {a.min_mean_us} us: {len(rows)}; worst per-name time error {worst * 100:.2f}% (tolerance {a.tol * 100:.0f}%)")
for _, err, mean, n in sorted(rows, reverse=True)[:5]: print(f"  {err * 100:+6.2f}%  mean {mean:8.1f} us  {n[:90]}")
ok = not count_bad and not extra and worst <= a.tol
print("RESULT:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
