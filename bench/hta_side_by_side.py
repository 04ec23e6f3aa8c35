#!/usr/bin/env python3
"""HTA's analyses on cutrace's Chrome export, next to `cutrace summary --json`.

    bench/hta_side_by_side.py TRACE_DIR [--hta-src DIR] [--cutrace build/bin/cutrace]

TRACE_DIR holds the .cutrace files of one job. The script exports them (`cutrace export -f
chrome`), applies the two renames docs/EXPORT.md gives for what HTA cannot follow (`step_N` ->
`ProfilerStep#N`, `ncclDevKernel_` -> `ncclKernel_`), loads the files with HTA
(facebookresearch/HolisticTraceAnalysis, from --hta-src or $HTA_SRC, with
HTA_DISABLE_NS_ROUNDING=1) and prints, per analysis, HTA's figure beside cutrace's. Every
analysis runs on its own: one that fails prints its error and the others go on. Needs pandas,
plotly, networkx, pydot and psutil (Debian: python3-pandas python3-plotly python3-networkx
python3-pydot python3-psutil); run it with the Python that has them (/usr/bin/python3).
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback


def us(ns):
    return ns / 1000.0


def export(cutrace, trace_dir, out):
    subprocess.run([cutrace, "export", trace_dir, "-f", "chrome", "-o", out], check=True, stdout=subprocess.DEVNULL)
    files = sorted(glob.glob(os.path.join(out, "*.json")))
    for f in files:
        text = open(f).read()
        text = re.sub(r'"step_(\d+)"', r'"ProfilerStep#\1"', text)
        text = text.replace('"ncclDevKernel_', '"ncclKernel_')
        open(f, "w").write(text)
    return files


def row(label, hta, ours, unit="us"):
    def fmt(v):
        return f"{v:,.3f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)
    same = ""
    if isinstance(hta, (int, float)) and isinstance(ours, (int, float)):
        same = "  equal" if abs(hta - ours) <= 0.001 + 1e-9 * abs(ours) else f"  differ by {hta - ours:+,.3f}"
    print(f"  {label:<44} HTA {fmt(hta):>16}  cutrace {fmt(ours):>16} {unit}{same}")


def section(name, fn):
    print(f"\n## {name}")
    try:
        fn()
    except Exception as e:  # one analysis failing must not hide the others
        print(f"  HTA failed: {type(e).__name__}: {e}")
        traceback.print_exc(limit=3, file=sys.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace_dir")
    ap.add_argument("--hta-src", default=os.environ.get("HTA_SRC", ""))
    ap.add_argument("--cutrace", default="build/bin/cutrace")
    ap.add_argument("--operator", default="ProfilerStep", help="range whose kernel sequences HTA searches")
    a = ap.parse_args()
    if a.hta_src:
        sys.path.insert(0, a.hta_src)
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    import pandas as pd
    from hta.trace_analysis import TraceAnalysis

    summary = json.loads(subprocess.run([a.cutrace, "summary", "--json", a.trace_dir], check=True,
                                        capture_output=True, text=True).stdout)
    by_rank = {r["rank"]: r for r in summary["ranks"]}
    per_rank = {}

    def rank_summary(rk):
        if rk not in per_rank:
            per_rank[rk] = json.loads(subprocess.run([a.cutrace, "summary", "--json", "--rank", str(rk), a.trace_dir],
                                                     check=True, capture_output=True, text=True).stdout)
        return per_rank[rk]
    out = tempfile.mkdtemp(prefix="hta-")
    files = export(a.cutrace, a.trace_dir, out)
    print(f"# {len(files)} Chrome files in {out}; ranks {sorted(by_rank)}")
    # HTA leaves out the last step by default; kept, its figures cover what cutrace summary does.
    ta = TraceAnalysis(trace_dir=out, include_last_profiler_step=True)
    pd.set_option("display.width", 200)

    def temporal():
        df = ta.get_temporal_breakdown(visualize=False)
        for _, r in df.iterrows():
            b = by_rank[int(r["rank"])]["breakdown"]
            elapsed = b["compute_ns"] + b["communication_ns"] + b["memory_ns"] + b["idle_ns"]
            print(f" rank {int(r['rank'])}")
            row("idle time", float(r["idle_time(us)"]), us(b["idle_ns"]))
            row("compute time", float(r["compute_time(us)"]), us(b["compute_ns"]))
            row("non-compute time (communication + memory)", float(r["non_compute_time(us)"]),
                us(b["communication_ns"] + b["memory_ns"]))
            row("kernel time (elapsed)", float(r["kernel_time(us)"]), us(elapsed))

    def idle():
        ranks = sorted(by_rank)
        df = ta.get_idle_time_breakdown(ranks=ranks, visualize=False)[0]
        print("  HTA's idle time is per stream, cutrace's per device (idle: no stream busy): shown, not compared")
        for rk in ranks:
            b = by_rank[rk]["breakdown"]
            sub = df[df["rank"] == rk]
            for st in sorted(set(sub["stream"])):
                s = sub[sub["stream"] == st]
                print(f"  rank {rk} stream {st}: " + ", ".join(f"{c} {float(v):,.3f} us" for c, v in
                                                              zip(s["idle_category"], s["idle_time"])))
            print(f"  rank {rk} device (cutrace): host wait {us(b['host_wait_ns']):,.3f} us, kernel wait "
                  f"{us(b['kernel_wait_ns']):,.3f} us")

    def kernels():
        _, kdf = ta.get_gpu_kernel_breakdown(visualize=False)
        ours = {k["name"]: k for k in summary["kernels"]}
        names = kdf.groupby("name")["sum (us)"].sum()
        for name, v in names.sort_values(ascending=False).head(8).items():
            mine = ours.get(name) or ours.get(name.replace("ncclKernel_", "ncclDevKernel_"))
            row(name[:44], float(v), us(mine["total_ns"]) if mine else "missing")

    def overlap():
        df = ta.get_comm_comp_overlap(visualize=False)
        for _, r in df.iterrows():
            b = by_rank[int(r["rank"])]["breakdown"]
            row(f"rank {int(r['rank'])} comm/comp overlap %", float(r["comp_comm_overlap_pctg"]),
                round(100.0 * b["overlap_share"], 2), "%")

    def launch_stats():
        for rk, df in ta.get_cuda_kernel_launch_stats(ranks=sorted(by_rank), visualize=False).items():
            row(f"rank {rk} launches with a GPU event", len(df), by_rank[rk]["kernels"], "")
            lat = rank_summary(rk)["launch_latency"]
            # HTA clips a negative delay (GPU start before the call returned) to 0.
            row(f"rank {rk} median launch delay, clipped at 0", float(df["launch_delay"].median()),
                max(0.0, us(lat["median_ns"])) if lat["count"] else "none measured")
            row(f"rank {rk} launch delays measured / negative", len(df), f"{lat['count']} / {lat['negative']}", "")

    def queue():
        df = ta.get_queue_length_summary(ranks=sorted(by_rank))
        print(df.to_string() if df is not None else "  no result")

    def sequences():
        # Per operator name (a step's name is unique per step, so its pattern occurs once).
        seq_dir = tempfile.mkdtemp(prefix="hta-seq-")
        df = ta.get_frequent_cuda_kernel_sequences(operator_name=a.operator, output_dir=seq_dir, min_pattern_len=1)
        if df is None or not len(df):
            print("  no sequence")
            return
        print("  " + df.head(3).to_string().replace("\n", "\n  "))
        r0 = rank_summary(0)
        found = int(df["count"].sum())
        row(f"rank 0 {a.operator} instances with a kernel sequence", found, r0["steps"]["count"], "steps")

    def critical():
        steps = ta.get_profiler_steps()
        cp, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=int(steps[len(steps) // 2]))
        summ = cp.summary()
        print(f"  step {steps[len(steps) // 2]}: critical path found={ok}")
        print("  " + summ.to_string().replace("\n", "\n  "))

    def annotations():
        try:
            df = ta.get_gpu_kernels_with_user_annotations(rank=0)
        except Exception as e:  # HTA 0.6 fails here when it keeps the last step (duplicate index)
            print(f"  with the last step kept HTA fails ({type(e).__name__}); without it (HTA's default):")
            df = TraceAnalysis(trace_dir=out).get_gpu_kernels_with_user_annotations(rank=0)
        kernels = df[df["s_cat"] == "kernel"] if "s_cat" in df else df
        attributed = kernels[kernels["user_annotation"] >= 0]
        by_name = attributed.groupby("s_user_annotation").size().to_dict()
        gpu_ops = {g["name"]: g["gpu_ops"] for g in rank_summary(0)["ranges"] if not g["domain"]}
        for name, n in sorted(by_name.items()):
            row(f"rank 0 kernels attributed to {name}", int(n), gpu_ops.get(name, 0), "GPU ops")
        row("rank 0 kernels attributed to none", len(kernels) - len(attributed), "-", "")

    def diff():
        from hta.trace_diff import TraceDiff
        ranks = sorted(by_rank)
        if len(ranks) < 2:
            print("  one rank: nothing to compare")
            return
        steps = [int(x) for x in ta.get_profiler_steps()]  # HTA's default is the first one only
        df = TraceDiff.compare_traces(ta.t, ta.t, control_rank=ranks[0], test_rank=ranks[1], control_iteration=steps,
                                      test_iteration=steps)
        d = json.loads(subprocess.run([a.cutrace, "diff", a.trace_dir, a.trace_dir, "--rank-a", str(ranks[0]),
                                       "--rank-b", str(ranks[1]), "--json"], check=True, capture_output=True,
                                      text=True).stdout)
        ours = {}
        for r in d["kernels"]["rows"]:
            ours[r["name"].replace("ncclDevKernel_", "ncclKernel_")] = r
        print(f"  rank {ranks[1]} against rank {ranks[0]}: HTA's diff_duration, cutrace diff's b - a total_ns")
        for name, r in df.iterrows():
            mine = ours.get(name)
            if mine is None:
                continue
            row(f"{name[:36]} count", int(r["diff_counts"]), mine["b"]["count"] - mine["a"]["count"], "")
            row(f"{name[:36]} GPU time", float(r["diff_duration"]), us(mine["b"]["total_ns"] - mine["a"]["total_ns"]))

    section("Temporal breakdown (per rank)", temporal)
    section("Idle time breakdown", idle)
    section("Kernel breakdown: top names by GPU time", kernels)
    section("Communication/computation overlap", overlap)
    section("Kernel launch statistics", launch_stats)
    section("Queue length summary", queue)
    section(f"Frequent CUDA kernel sequences ({a.operator})", sequences)
    section("Critical path (rank 0, middle step)", critical)
    section("User-annotation attribution", annotations)
    section("Trace diff", diff)


if __name__ == "__main__":
    main()
