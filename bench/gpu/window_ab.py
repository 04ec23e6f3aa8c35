#!/usr/bin/env python3
"""Overhead of recording on a launch-bound job, measured inside one process: GPT small under cutrace
with capture windows that open and close every BLOCK steps (`--capture-range nvtx:step_*
--capture-steps B-(2B-1) --capture-repeat 2B`), so that recorded and unrecorded steps alternate in
the same process and the machine's drift between runs (larger than the effects looked for)
cancels out. train_gpt.py is run as it is; its `step_ms_each` gives every step's time.

    python3 bench/gpu/window_ab.py OUT [--reps 3] [--configs base,cupti,end,none,cupti-s20,cupti-once]
                                       [--block 10] [--steps 160] [--cpus 2-9]
    python3 bench/gpu/window_ab.py --from RUNS.jsonl... --block B [--ops-per-step N]   (the tables
        again, runs pooled; GPT small: 2,021 GPU operations a step, 1,901 kernels and 120 memsets)

Per run, each cycle of an `on` block (recorded) and the `off` block after it gives one ratio: the
median of the on block's middle steps over the off block's (the first two and the last step of a
block are left out: the window's edges, CUPTI's switch-off 5 ms after a close, fall there). The
same step indices are read from the `base` runs (no cutrace): their on/off ratio is the method's
own bias and noise, which should be 1.000. `off vs base` compares a run's off blocks with the base
run of the same repetition (across processes: noisy). `-once` configurations record one window
(steps 60-79, or --once A-B) only: `post/pre` is the median of steps 90.. over steps 10-59, in the
same process, which shows any cost left behind after a window, and `window/pre` the median of the
window's middle steps over steps 10-59: the cost of recording against the job before any window
(the base runs give the same ratios as a control; `paired` divides by the base run's).
Runs are interleaved, every other repetition in reverse order (ABBA), every one pinned to --cpus.
A second table pools every cycle of a configuration: the geometric mean of its on/off ratios with a
95% interval (1.96 standard errors of the mean log ratio), and that mean less the base runs' (the
cost of recording, with the method's own bias removed) with its 95% interval.
"""
import argparse, json, math, os, shutil, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from suite import cutrace_stats  # noqa: E402  (bench/suite.py)
WARMUP = 5
TIMING = {  # config -> `cutrace record` options besides the windows
    "cupti": ["--gpu-timing", "cupti"], "end": ["--gpu-timing", "end"], "none": ["--gpu-timing", "none"],
    "events": ["--gpu-timing", "events"], "exact": ["--gpu-timing", "exact"], "cupti-s20": ["--gpu-timing", "cupti", "--gpu-sample", "0.2"],
    "cupti-s10": ["--gpu-timing", "cupti", "--gpu-sample", "0.1"],
}
ONCE = (60, 79)  # the window of `-once` configurations (NVTX step indices, warm-up included)


def windows(cfg, block):
    if cfg.endswith("-once"):
        return ["--capture-range", "nvtx:step_*", "--capture-steps", "%d-%d" % ONCE]
    return ["--capture-range", "nvtx:step_*", "--capture-steps", "%d-%d" % (block, 2 * block - 1),
            "--capture-repeat", str(2 * block)]


def run(a, cfg, out):
    cmd = ["python3", os.path.join(a.workloads, "train_gpt.py"), "--preset", "small", "--nvtx",
           "--steps", str(a.steps), "--warmup", str(WARMUP)]
    if cfg != "base":
        timing = TIMING[cfg[:-5] if cfg.endswith("-once") else cfg]
        cmd = [a.cutrace, "record", "-o", out] + timing + windows(cfg, a.block) + ["--"] + cmd
    if a.cpus:
        cmd = ["taskset", "-c", a.cpus] + cmd
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = next((l for l in reversed(p.stdout.splitlines()) if l.startswith("{")), None)
    if p.returncode != 0 or not line:
        print("  %s failed (rc %d): %s" % (cfg, p.returncode, p.stderr[-500:]), file=sys.stderr)
        return None
    r = {"cfg": cfg, "each": json.loads(line)["step_ms_each"]}
    if cfg != "base":
        st = cutrace_stats(a.cutrace, out)
        r["kernels"], r["missing"] = st["kernels"], st["gpu_times_missing"]
        shutil.rmtree(out, ignore_errors=True)
    return r


def step_ms(each, k):  # NVTX step index k (warm-up included) -> its time, or None
    j = k - WARMUP
    return each[j] if 0 <= j < len(each) else None


def middle(each, lo, hi):
    v = [step_ms(each, k) for k in range(lo + 2, hi)]  # leaves out lo, lo+1 and hi
    return statistics.median(v) if v and None not in v else None


def cycle_pairs(each, block):  # (on, off) middle-step medians of each cycle, ms
    out, lo = [], block
    while True:
        on, off = middle(each, lo, lo + block - 1), middle(each, lo + block, lo + 2 * block - 1)
        if on is None or off is None:
            return out
        out.append((on, off))
        lo += 2 * block


def cycle_ratios(each, block):
    return [on / off for on, off in cycle_pairs(each, block)]


def off_median(each, block):
    v = []
    for lo in range(2 * block, WARMUP + len(each), 2 * block):
        v += [step_ms(each, k) for k in range(lo + 2, lo + block - 1)]
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def post_pre(each):
    pre = [step_ms(each, k) for k in range(10, ONCE[0])]
    post = [step_ms(each, k) for k in range(ONCE[1] + 11, WARMUP + len(each))]
    return statistics.median(post) / statistics.median(pre)


def on_pre(each):  # the window's middle steps against the steps before it (before any window)
    pre = [step_ms(each, k) for k in range(10, ONCE[0])]
    on = [step_ms(each, k) for k in range(ONCE[0] + 2, ONCE[1])]
    return statistics.median(on) / statistics.median(pre)


def spread(v):
    v = sorted(v)
    return "%.4f (%.4f..%.4f, n=%d)" % (statistics.median(v), v[0], v[-1], len(v)) if v else "-"


def less_base(v, b):  # mean of v less mean of b, and the half width of its 95% interval
    return statistics.mean(v) - statistics.mean(b), 1.96 * (statistics.variance(v) / len(v) + statistics.variance(b) / len(b)) ** .5


def pooled(runs, cfgs, block, ops):
    pairs = {c: [p for r in runs if r["cfg"] == c for p in cycle_pairs(r["each"], block)] for c in cfgs}
    pct = lambda x: 100 * (math.exp(x) - 1)
    print("\nconfig       cycles  on/off, geometric mean (95%%)   less the base runs' (95%%): cost of recording;"
          " on-off step ms less base's%s" % (", us per GPU operation (%d a step)" % ops if ops else ""))
    b = [math.log(on / off) for on, off in pairs.get("base", [])]
    bd = [on - off for on, off in pairs.get("base", [])]
    for c, ps in pairs.items():
        v = [math.log(on / off) for on, off in ps]
        if len(v) < 2:
            continue
        m, h = statistics.mean(v), 1.96 * (statistics.variance(v) / len(v)) ** .5
        line = "%-12s %6d  %+6.2f%% (%+.2f..%+.2f)" % (c, len(v), pct(m), pct(m - h), pct(m + h))
        if c != "base" and len(b) > 1:
            d, h = less_base(v, b)
            line += "      %+6.2f%% (%+.2f..%+.2f)" % (pct(d), pct(d - h), pct(d + h))
            d, h = less_base([on - off for on, off in ps], bd)
            line += "   %+.3f ms (%+.3f..%+.3f)" % (d, d - h, d + h)
            if ops:
                line += "   %+.2f us (%+.2f..%+.2f)" % tuple(1000 * x / ops for x in (d, d - h, d + h))
        print(line)


def table(runs, cfgs, block, ops=0):
    base = {r["rep"]: r for r in runs if r["cfg"] == "base"}
    print("\nconfig       on/off per cycle, median (min..max)   run medians of on/off     off vs base (same rep)    post/pre (-once)")
    once_rows = []
    for cfg in cfgs:
        rs = [r for r in runs if r["cfg"] == cfg]
        if not rs:
            continue
        if cfg.endswith("-once"):
            pp = [post_pre(r["each"]) for r in rs]
            ctl = [post_pre(base[r["rep"]]["each"]) for r in rs if r["rep"] in base]
            print("%-12s %-38s %-25s %-25s %s (base: %s)" % (cfg, "", "", "", spread(pp), spread(ctl)))
            op = [on_pre(r["each"]) for r in rs]
            octl = [on_pre(base[r["rep"]]["each"]) for r in rs if r["rep"] in base]
            paired = [on_pre(r["each"]) / on_pre(base[r["rep"]]["each"]) for r in rs if r["rep"] in base]
            once_rows.append("%-12s window/pre %s   base runs, same steps: %s   paired ratio of the two: %s" %
                             (cfg, spread(op), spread(octl), spread(paired)))
            continue
        cyc = [x for r in rs for x in cycle_ratios(r["each"], block)]
        per_run = [statistics.median(cycle_ratios(r["each"], block)) for r in rs]
        ob = [off_median(r["each"], block) / off_median(base[r["rep"]]["each"], block)
              for r in rs if r["rep"] in base and cfg != "base"]
        print("%-12s %-38s %-25s %s" % (cfg, spread(cyc), spread(per_run), spread(ob)))
    if once_rows:
        print("\n-once: the window's steps %d-%d (middle) against steps 10-%d, before any window, in one process" %
              (ONCE[0] + 2, ONCE[1] - 1, ONCE[0] - 1))
        print("\n".join(once_rows))
    pooled(runs, [c for c in cfgs if not c.endswith("-once")], block, ops)


def main():
    global ONCE
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--from", dest="files", nargs="+", help="analyse these runs.jsonl files (pooled) instead of running")
    ap.add_argument("--ops-per-step", type=int, default=0, help="GPU operations per step: print the cost per operation")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--configs", default="base,cupti,end,none,cupti-s20,cupti-once")
    ap.add_argument("--block", type=int, default=10)
    ap.add_argument("--steps", type=int, default=160)
    ap.add_argument("--cpus", default="2-9")
    ap.add_argument("--once", default="%d-%d" % ONCE, help="the -once configurations' window (NVTX step indices)")
    ap.add_argument("--cutrace", default=os.environ.get("CUTRACE", os.path.join(REPO, "build/bin/cutrace")))
    ap.add_argument("--workloads", default=os.environ.get("WORKLOADS", os.path.join(REPO, "../shared/workloads")))
    a = ap.parse_args()
    ONCE = tuple(int(x) for x in a.once.split("-"))
    cfgs = a.configs.split(",")
    if a.files:
        runs = []
        for n, f in enumerate(a.files):  # repetitions kept apart between files
            for line in open(f):
                r = json.loads(line)
                r["rep"] = (n, r["rep"])
                runs.append(r)
        seen = [r["cfg"] for r in runs]
        return table(runs, sorted(set(seen), key=seen.index), a.block, a.ops_per_step)
    if not a.out:
        ap.error("OUT is needed to run")
    os.makedirs(a.out, exist_ok=True)
    runs = []
    with open(os.path.join(a.out, "runs.jsonl"), "a") as log:
        for rep in range(a.reps):
            for cfg in (cfgs if rep % 2 == 0 else cfgs[::-1]):
                r = run(a, cfg, os.path.join(a.out, "t"))
                if not r:
                    continue
                r["rep"] = rep
                log.write(json.dumps(r) + "\n")
                log.flush()
                runs.append(r)
                extra = "" if cfg == "base" else "  kernels %d, without GPU time %d" % (r["kernels"], r["missing"])
                print("rep %d %-11s median step %.3f ms%s" % (rep, cfg, statistics.median(r["each"]), extra), flush=True)
    table(runs, cfgs, a.block, a.ops_per_step)


if __name__ == "__main__":
    main()
