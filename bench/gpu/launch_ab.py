#!/usr/bin/env python3
"""CPU cost per kernel launch on the real driver, from bench/gpu/launch_ab.cpp (a C++ launch loop,
no Python in the timed part): each process runs blocks before any capture window (`pre`), then
alternates blocks inside (`on`) and outside (`off`) a window. Configurations, interleaved per
repetition (every other one in reverse order), every run pinned to --cpus:

  base        no cutrace (the windows do nothing: on/off is the method's own bias)
  base-direct no cutrace; `on` blocks call cuLaunchKernel through the linked symbol, `off` blocks
              the driver's own function (the same function here: the bias of the next one)
  off-direct  cutrace preloaded, recording never started (--capture-range manual): `on` blocks
              through the shim, `off` blocks straight to the driver: what the idle shim costs
  none        cutrace, --gpu-timing none: the shim's bookkeeping only
  cupti       cutrace, --gpu-timing cupti (what the default `auto` picks where CUPTI loads)
  end         cutrace, --gpu-timing end (one completion event per launch)
  raw-cupti   no cutrace: CUPTI's kernel activity switched on in `on` blocks by the harness itself
  raw-cupti+cb, +ts, +kinds, +cb+ts+kinds   the same with what cutrace's use of CUPTI adds: a
              driver callback on every launch, a timestamp callback, copies' and memsets' kinds
  raw-cupti+finalize  raw-cupti, CUPTI detached (cuptiFinalize) after each window
  raw-cupti+ctx       raw-cupti, the kind switched for the context only (cuptiActivityEnableContext)
  raw-cupti+freshfn, +freshstream   raw-cupti; the blocks outside windows launch another kernel
              function (another module), or on other streams, than the windows did

Per process: `on` = median over cycles of (on block - mean of the off blocks beside it), ns per
launch; `after` = median(off) - median(pre) (what a closed window leaves behind); `pre` = median of
pre blocks; with the harness's --tail, `tail` = median(tail) - median(pre) (blocks after a
second or more without a window). Across processes: the median (min..max) of those, and for `pre` the paired difference
to the base run of the same repetition (a preloaded shim that never records, against none).
The `on` and `after` figures have the base runs' same figures (the method's bias) beside them.

    python3 bench/gpu/launch_ab.py run OUT [--reps 5] [--configs ...] [--bin LAUNCH_AB]
                                           [--cutrace CUTRACE] [--cpus 2-9] [-- HARNESS ARGS]
    python3 bench/gpu/launch_ab.py table OUT/runs.jsonl...
"""
import argparse, json, os, shutil, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from suite import cutrace_stats  # noqa: E402  (bench/suite.py)

CONFIGS = ["base", "base-direct", "off-direct", "none", "cupti", "end", "raw-cupti", "raw-cupti+cb",
           "raw-cupti+ts", "raw-cupti+kinds", "raw-cupti+cb+ts+kinds", "raw-cupti+finalize", "raw-cupti+ctx",
           "raw-cupti+freshfn", "raw-cupti+freshstream", "raw-cupti+freshfn+freshstream"]
RECORD = {"off-direct": [], "none": ["--gpu-timing", "none"], "cupti": ["--gpu-timing", "cupti"],
          "end": ["--gpu-timing", "end"]}


def run_one(a, cfg, out, extra):
    windows = "direct" if cfg.endswith("-direct") else "raw-cupti" if cfg.startswith("raw-cupti") else "api"
    cmd = [a.bin, "--windows", windows] + extra
    if cfg.startswith("raw-cupti+"):
        cmd += ["--cupti-attrs", cfg[len("raw-cupti+"):].replace("+", ",")]
    if cfg in RECORD:
        cmd = [a.cutrace, "record", "-o", out, "--capture-range", "manual"] + RECORD[cfg] + ["--"] + cmd
    if a.cpus:
        cmd = ["taskset", "-c", a.cpus] + cmd
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if a.logs:  # each run's stderr (CUTRACE_VERBOSE=1 makes cutrace log its CUPTI switches there)
        os.makedirs(a.logs, exist_ok=True)
        with open(os.path.join(a.logs, "%s-%d.err" % (cfg, a.rep_now)), "w") as f:
            f.write(p.stderr)
    blocks = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not blocks:
        print("  %s failed (rc %d): %s" % (cfg, p.returncode, p.stderr[-800:]), file=sys.stderr)
        return None
    r = {"cfg": cfg, "blocks": blocks}
    if cfg in RECORD:
        st = cutrace_stats(a.cutrace, out)
        r["kernels"], r["missing"] = st["kernels"], st["gpu_times_missing"]
        shutil.rmtree(out, ignore_errors=True)
    return r


def per_process(r, key):
    b = [x for x in r["blocks"] if x["phase"] != "warmup" and key in x]
    if not b:
        return {"pre": None, "on": None, "after": None, "tail": None}
    pre = [x[key] for x in b if x["phase"] == "pre"]
    seq = [x for x in b if x["phase"] in ("on", "off")]
    on = []
    for i, x in enumerate(seq):
        if x["phase"] != "on":
            continue
        nb = [seq[j][key] for j in (i - 1, i + 1) if 0 <= j < len(seq) and seq[j]["phase"] == "off"]
        if nb:
            on.append(x[key] - sum(nb) / len(nb))
    off = [x[key] for x in seq if x["phase"] == "off"]
    tail = [x[key] for x in b if x["phase"] == "tail"]
    return {"pre": statistics.median(pre) if pre else None,
            "on": statistics.median(on) if on else None,
            "after": statistics.median(off) - statistics.median(pre) if off and pre else None,
            "tail": statistics.median(tail) - statistics.median(pre) if tail and pre else None}


def fmt(v):
    if not v:
        return "-"
    return "%+.1f (%+.1f..%+.1f)" % (statistics.median(v), min(v), max(v))


def table(runs, key):
    by = {}
    for r in runs:
        by.setdefault(r["cfg"], []).append(r)
    base = {r["rep"]: per_process(r, key)["pre"] for r in by.get("base", [])}
    base = {k: v for k, v in base.items() if v is not None}
    ref = statistics.median(base.values()) if base else None
    if ref is None:
        return
    print("\n%s (ns); medians over processes (min..max)%s" %
          ({"ns": "wall-clock per launch", "cpu_ns": "thread CPU time per launch",
            "gpu_ns": "GPU time per kernel, back to back"}[key],
           "; no cutrace: %.1f ns per launch" % ref if ref else ""))
    print("%-22s %5s  %-26s %-26s %-26s %s" % ("config", "runs", "on - off (in-process)", "after - pre (in-process)",
                                             "pre - base pre (paired)", "tail - pre (in-process)"))
    for cfg in CONFIGS:
        rs = by.get(cfg)
        if not rs:
            continue
        pp = [per_process(r, key) for r in rs]
        paired = [p["pre"] - base[r["rep"]] for p, r in zip(pp, rs) if r["rep"] in base and cfg != "base"]
        print("%-22s %5d  %-26s %-26s %-26s %s" % (cfg, len(rs), fmt([p["on"] for p in pp if p["on"] is not None]),
                                                  fmt([p["after"] for p in pp if p["after"] is not None]), fmt(paired),
                                                  fmt([p["tail"] for p in pp if p["tail"] is not None])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["run", "table"])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--bin", default=os.environ.get("LAUNCH_AB", "build/bench/launch_ab"))
    ap.add_argument("--cutrace", default=os.environ.get("CUTRACE", "build/bin/cutrace"))
    ap.add_argument("--cpus", default="2-9")
    ap.add_argument("--logs", help="keep each run's stderr in this directory")
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    a = ap.parse_args(argv)
    if a.mode == "table":
        runs = []
        for i, p in enumerate(a.paths):  # repetitions are paired within their own file
            for l in open(p):
                if l.strip():
                    r = json.loads(l)
                    r["rep"] = "%d:%s" % (i, r["rep"])
                    runs.append(r)
    else:
        out = a.paths[0]
        os.makedirs(out, exist_ok=True)
        cfgs = a.configs.split(",")
        runs = []
        with open(os.path.join(out, "runs.jsonl"), "a") as f:
            for rep in range(a.reps):
                for cfg in (cfgs if rep % 2 == 0 else cfgs[::-1]):
                    a.rep_now = rep
                    r = run_one(a, cfg, os.path.join(out, "t"), extra)
                    if r is None:
                        continue
                    r["rep"] = rep
                    f.write(json.dumps(r) + "\n")
                    f.flush()
                    runs.append(r)
                    pp = per_process(r, "ns")
                    print("rep %d %-22s pre %.1f  on-off %s  after-pre %s  kernels %s (no GPU time: %s)" % (
                        rep, cfg, pp["pre"], "%+.1f" % pp["on"] if pp["on"] is not None else "-",
                        "%+.1f" % pp["after"] if pp["after"] is not None else "-", r.get("kernels", "-"),
                        r.get("missing", "-")),
                        flush=True)
    for key in ("ns", "cpu_ns", "gpu_ns"):
        table(runs, key)


if __name__ == "__main__":
    main()
