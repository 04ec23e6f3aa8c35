#!/usr/bin/env python3
"""cutrace's benchmark suite, for one call on the GPU machine: interleaved runs of the reference
workloads (../shared/workloads) with no profiler, under cutrace in each GPU-timing mode, outside a
capture window, and under torch.profiler (CUDA only; CPU+CUDA), then one table.

    python3 bench/suite.py run OUT [--workloads large,small,tiny] [--reps 3] [--configs ...] [--cpus 2-9]
    python3 bench/suite.py run OUT --scenario NAME [--reps N]   (a named set of the above: SCENARIOS)
    python3 bench/suite.py table OUT [--markdown]
    python3 bench/suite.py stats TRACE_DIR [--cutrace CUTRACE]   (one trace: kernels, GPU times missing)

`run` appends one JSON line per run to OUT/results.jsonl (so several calls add up) and prints the
table at the end. Each repetition runs every configuration once, in order, and the next one in reverse order
(base, cutrace, ..., ..., cutrace, base): the machine's drift hits them alike. Per run it keeps:
  metric      train_gpt.py's mean step_ms of the timed steps, or tiny_kernels.py's us_per_launch
  bytes       trace bytes on disk (cutrace: every .cutrace file; torch: the exported JSON)
  gpu_records kernels + copies + sets in the trace (cutrace: `cutrace summary --json`; torch:
              events of category kernel, gpu_memcpy, gpu_memset in the JSON)
  rss_kb      peak RSS of the process tree (wait4's ru_maxrss: the largest process)
  collector_s CPU time of cutrace's collector thread (trace meta collector_cpu_ns)
The table gives medians over repetitions, the spread (min..max), the overhead against the base
median, the added microseconds per GPU operation (overhead / operations per step), bytes per GPU
record and how many times smaller than torch.profiler's CUDA-only JSON, and the RSS added.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

WORKLOADS = {  # name -> (script, args, metric key, warm-up + timed steps, or None: per-launch metric)
    "large": ("train_gpt.py", ["--preset", "large", "--steps", "10"], "step_ms", 15),
    "small": ("train_gpt.py", ["--preset", "small", "--steps", "30"], "step_ms", 35),
    # longer runs of the launch-bound preset: less noise per run (not in the default set)
    "small100": ("train_gpt.py", ["--preset", "small", "--steps", "100"], "step_ms", 105),
    "tiny": ("tiny_kernels.py", [], "us_per_launch", None),
}
CONFIGS = ["base", "cutrace", "cutrace-end", "cutrace-events", "cutrace-off", "torch-cuda", "torch-cpu+cuda"]
CUTRACE_ARGS = {  # config -> extra `cutrace record` options
    "cutrace": [],
    "cutrace-end": ["--gpu-timing", "end"],
    "cutrace-events": ["--gpu-timing", "events"],  # start and end events
    "cutrace-off": ["--capture-range", "manual"],  # never started: the shim's cost outside windows
    # not in the default set (--configs names them):
    "cutrace-none": ["--gpu-timing", "none"],  # every call recorded, no GPU times: the shim alone
    "cutrace-sample20": ["--gpu-sample", "0.2"],  # GPU times in 20% of the time (default mode)
    "cutrace-sample10": ["--gpu-sample", "0.1"],
    "cutrace-exact": ["--gpu-timing", "exact"],  # CUPTI for every operation
    "cutrace-end-sample20": ["--gpu-timing", "end", "--gpu-sample", "0.2"],
    "cutrace-b": [],  # the default mode with another build's shim (--shim-b): A/B of two builds
}
# Named runs behind the tables of BENCHMARKS.md: workloads, configurations, repetitions, CPUs.
SCENARIOS = {
    "gpu-bound": ("large,tiny", "base,cutrace,torch-cuda", 3, "2-9"),  # GPU-bound overhead, trace size
    "lossless": ("large,small,tiny", "base,cutrace,torch-cuda", 3, "2-9"),  # 0 dropped, GPU records
    "modes": ("large,small,tiny", ",".join(CONFIGS), 3, None),  # every timing mode and torch.profiler
    "launch-bound": ("small100", "base,cutrace,cutrace-sample20", 7, "2-9"),  # GPT small, 100 steps
    "sample": ("small100", "base,cutrace,cutrace-none,cutrace-sample20,cutrace-sample10", 5, "2-5"),
    "off-window": ("tiny,small", "base,cutrace,cutrace-off", 3, None),  # preloaded, never recording
    "launch-cost": ("tiny", "base,cutrace-off,cutrace-none,cutrace-end,cutrace", 5, "2-9"),  # us/launch by mode
}
ALL_CONFIGS = CONFIGS[:5] + [c for c in CUTRACE_ARGS if c not in CONFIGS] + CONFIGS[5:]


def run_once(cmd, env):
    """Runs cmd; returns (stdout, exit status, stderr)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    return out.decode(errors="replace"), p.returncode, err.decode(errors="replace")


def measure(cmd, env):
    """Runs cmd from a forked child of this script, which then reports RUSAGE_CHILDREN's peak
    RSS: the largest process of that one run's tree (this script's own figure would be cumulative)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        import resource
        out, rc, err = run_once(cmd, env)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        os.write(w, json.dumps({"out": out, "rc": rc, "err": err[-4000:], "rss_kb": rss}).encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 20)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


def last_json(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def cutrace_stats(ct, trace_dir):
    files = glob.glob(os.path.join(trace_dir, "*.cutrace*"))
    size = sum(os.path.getsize(f) for f in files)
    s = json.loads(subprocess.run([ct, "summary", "--json", trace_dir], stdout=subprocess.PIPE,
                                  universal_newlines=True, check=True).stdout)
    kernels = sum(k["count"] for k in s["kernels"])
    ops = kernels + sum(v["count"] for v in s["memcpy"].values()) + s["memset"]["count"]
    cpu_ns = missing = 0
    for f in files:
        meta = subprocess.run([ct, "dump", f, "--type", "Meta"], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
        m = re.findall(r'"collector_cpu_ns" value=#\d+ "(\d+)"', meta)
        cpu_ns += int(m[-1]) if m else 0
        m = re.findall(r'"gpu_times_missing" value=#\d+ "(\d+)"', meta)
        missing += int(m[-1]) if m else 0
    return {"bytes": size, "gpu_records": ops, "kernels": kernels, "collector_s": cpu_ns / 1e9,
            "files": len(files), "dropped": s.get("dropped_records", 0), "gpu_times_missing": missing}


def torch_stats(path):
    data = open(path, "rb").read()
    n = len(re.findall(rb'"cat":\s*"(?:kernel|gpu_memcpy|gpu_memset)"', data))
    return {"bytes": len(data), "gpu_records": n}


def run(a):
    os.makedirs(a.out, exist_ok=True)
    ct = a.cutrace
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LD_PRELOAD", "CUTRACE_", "NVTX_INJECTION"))}
    env["PYTHONUNBUFFERED"] = "1"
    results = open(os.path.join(a.out, "results.jsonl"), "a")
    scratch = os.path.join(a.out, "scratch")
    for wl in a.workloads.split(","):
        script, args, key, _ = WORKLOADS[wl]
        app = [sys.executable, os.path.join(a.workloads_dir, script)] + args
        configs = a.configs.split(",")
        for rep in range(a.reps):
            # ABBA: odd repetitions run the configurations in reverse order, so that a drift
            # over the call does not favour the configurations that run last.
            for cfg in (configs if rep % 2 == 0 else configs[::-1]):
                shutil.rmtree(scratch, ignore_errors=True)
                os.makedirs(scratch)
                if cfg == "base":
                    cmd = app
                elif cfg in CUTRACE_ARGS:
                    cmd = [ct, "record", "-o", os.path.join(scratch, "t")] + CUTRACE_ARGS[cfg] + ["--"] + app
                else:
                    mode = cfg[len("torch-"):]
                    cmd = [sys.executable, os.path.join(HERE, "gpu", "under_torch_profiler.py"), mode,
                           os.path.join(scratch, "trace.json")] + app[1:]
                if a.cpus:  # every configuration pinned alike: less scheduler noise
                    cmd = ["taskset", "-c", a.cpus] + cmd
                t0 = time.time()
                run_env = dict(env, CUTRACE_SHIM=a.shim_b) if cfg == "cutrace-b" else env
                r = measure(cmd, run_env)
                res = last_json(r["out"])
                row = {"workload": wl, "config": cfg, "rep": rep, "rc": r["rc"], "rss_kb": r["rss_kb"],
                       "wall_s": round(time.time() - t0, 2), "metric": res.get(key) if res else None}
                if r["rc"] != 0 or row["metric"] is None:
                    row["error"] = r["err"][-600:]
                elif cfg in CUTRACE_ARGS and cfg != "cutrace-off":
                    row.update(cutrace_stats(ct, os.path.join(scratch, "t")))
                elif cfg.startswith("torch-"):
                    row.update(torch_stats(os.path.join(scratch, "trace.json")))
                results.write(json.dumps(row) + "\n")
                results.flush()
                if a.brief:
                    print(rep, cfg, row["metric"], row["wall_s"], "missing", row.get("gpu_times_missing"), "dropped", row.get("dropped"),
                          row.get("error", "")[:200], flush=True)
                else:
                    print(json.dumps(row), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    table(a)


def med(rows, k):
    v = [r[k] for r in rows if r.get(k) is not None]
    return statistics.median(v) if v else None


def table(a):
    rows = [json.loads(l) for l in open(os.path.join(a.out, "results.jsonl"))]
    md = getattr(a, "markdown", False)
    head = ["workload", "config", "metric (median)", "spread", "overhead", "paired", "added us/op", "bytes/GPU rec",
            "vs torch JSON", "GPU recs", "RSS added MB", "collector CPU s", "runs"]
    lines = [head]
    # Paired ratios: each run against the base run of its own repetition (run next to it), so that
    # the machine's drift over minutes cancels; the median and range of those ratios.
    blocks = []  # consecutive rows of one workload and repetition
    for r in rows:
        if not blocks or (blocks[-1][0]["workload"], blocks[-1][0]["rep"]) != (r["workload"], r["rep"]):
            blocks.append([])
        blocks[-1].append(r)
    paired = {}
    for b in blocks:
        base_runs = [r["metric"] for r in b if r["config"] == "base" and r.get("metric")]
        for r in b:
            if base_runs and r["config"] != "base" and r.get("metric") is not None:
                paired.setdefault((r["workload"], r["config"]), []).append(r["metric"] / base_runs[0])
    for wl in WORKLOADS:
        wrows = [r for r in rows if r["workload"] == wl and r.get("metric") is not None]
        if not wrows:
            continue
        base = med([r for r in wrows if r["config"] == "base"], "metric")
        base_rss = med([r for r in wrows if r["config"] == "base"], "rss_kb")
        ct_rows = [r for r in wrows if r["config"].startswith("cutrace") and r.get("gpu_records")]
        steps = WORKLOADS[wl][3]
        # GPU operations per metric unit (per step; tiny_kernels' metric is already per launch)
        ops_per_unit = (med(ct_rows, "gpu_records") / steps) if (ct_rows and steps) else (None if steps else 1.0)
        torch_bpr = None
        tc = [r for r in wrows if r["config"] == "torch-cuda" and r.get("gpu_records")]
        if tc:
            torch_bpr = statistics.median(r["bytes"] / r["gpu_records"] for r in tc)
        for cfg in ALL_CONFIGS:
            cr = [r for r in wrows if r["config"] == cfg]
            if not cr:
                continue
            m = med(cr, "metric")
            vals = sorted(r["metric"] for r in cr)
            over = (m / base - 1) * 100 if base else None
            unit_ms = 1000.0 if WORKLOADS[wl][2] == "step_ms" else 1.0
            added = (m - base) * unit_ms / ops_per_unit if (base and ops_per_unit) else None
            bpr = statistics.median(r["bytes"] / r["gpu_records"] for r in cr if r.get("gpu_records")) \
                if any(r.get("gpu_records") for r in cr) else None
            vs = (torch_bpr / bpr) if (torch_bpr and bpr and cfg.startswith("cutrace")) else None
            rss = (med(cr, "rss_kb") - base_rss) / 1024 if base_rss and cfg != "base" else None
            pr = sorted(paired.get((wl, cfg), []))
            lines.append([wl, cfg, "%.3f" % m, "%.3f..%.3f" % (vals[0], vals[-1]),
                          "%+.2f%%" % over if over is not None and cfg != "base" else "",
                          "%+.1f%% (%+.0f..%+.0f)" % ((statistics.median(pr) - 1) * 100, (pr[0] - 1) * 100,
                                                     (pr[-1] - 1) * 100) if pr else "",
                          "%+.2f" % added if added is not None and cfg != "base" else "",
                          "%.1f" % bpr if bpr else "", "%.0fx smaller" % vs if vs else "",
                          "%d" % med(cr, "gpu_records") if med(cr, "gpu_records") else "",
                          "%+.0f" % rss if rss is not None else "",
                          "%.2f" % med(cr, "collector_s") if med(cr, "collector_s") is not None else "",
                          str(len(cr))])
    if md:
        print("| " + " | ".join(lines[0]) + " |")
        print("|" + "---|" * len(lines[0]))
        for l in lines[1:]:
            print("| " + " | ".join(l) + " |")
    else:
        w = [max(len(l[i]) for l in lines) for i in range(len(head))]
        for l in lines:
            print("  ".join(c.ljust(w[i]) for i, c in enumerate(l)))
    print("metric: train_gpt.py step_ms (large/small), tiny_kernels.py us_per_launch (tiny); "
          "added us/op = overhead / (kernels+copies+sets per step, from the cutrace run); paired = median "
          "(min..max) of each run's ratio to the base run of the same repetition")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["run", "table", "stats"])
    ap.add_argument("out")
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), help="run: workloads, configs, reps and CPUs of a named run")
    ap.add_argument("--workloads")
    ap.add_argument("--shim-b", default="", help="libcutrace.so of another build, for the cutrace-b configuration")
    ap.add_argument("--configs")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--cutrace", default=os.environ.get("CUTRACE", os.path.join(REPO, "build", "bin", "cutrace")))
    ap.add_argument("--workloads-dir", default=os.environ.get("WORKLOADS", os.path.join(REPO, "..", "shared", "workloads")))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--brief", action="store_true",
                    help="run: print each run as REP CONFIG METRIC WALL_S missing GPU_TIMES_MISSING [ERROR], not JSON")
    ap.add_argument("--cpus", help="run every command under `taskset -c CPUS` (e.g. 2-9)")
    a = ap.parse_args()
    wl, cf, reps, cpus = SCENARIOS[a.scenario] if a.scenario else ("large,small,tiny", ",".join(CONFIGS), 3, None)
    a.workloads, a.configs = a.workloads or wl, a.configs or cf  # explicit options win over the scenario
    a.reps = a.reps or reps
    a.cpus = a.cpus or cpus
    if a.what == "stats":
        s = cutrace_stats(a.cutrace, a.out)
        print("kernels", s["kernels"], "without GPU time", s["gpu_times_missing"])
        return
    run(a) if a.what == "run" else table(a)


if __name__ == "__main__":
    main()
