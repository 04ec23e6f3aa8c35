#!/usr/bin/env python3
"""Compares a cutrace trace of bench/workloads/jax_loop.py (--cutrace-window) with jax.profiler's CUPTI
view of the same loop in another run (--truth): kernels per name (count, GPU time), copies, sets.
  python3 bench/gpu/jax_compare.py TRACE_DIR TRUTH_DIR [--cutrace build/bin/cutrace]
  python3 bench/gpu/jax_compare.py TRACE_DIR --chrome TRUTH.json   (torch.profiler's Chrome trace:
      bench/workloads/torch_graphs.py --truth)
The JAX truth is the Perfetto JSON jax.profiler writes (TRUTH_DIR/plugins/profile/*/perfetto_trace.json.gz);
its GPU operations are the events on the GPU process's "Stream ..." threads. In a torch.profiler
trace they are the events of categories kernel, gpu_memcpy and gpu_memset."""
import argparse, collections, glob, gzip, json, os, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("truth", nargs="?")
ap.add_argument("--chrome", help="torch.profiler Chrome trace JSON instead of a jax.profiler directory")
ap.add_argument("--cutrace", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "cutrace"))
a = ap.parse_args()


def kind(name):
    n = name.lower()
    return "memcpy" if n.startswith("memcpy") else "memset" if n.startswith("memset") else "kernel"


def chrome_ops():
    with open(a.chrome) as f:
        events = json.load(f)["traceEvents"]
    ops = collections.defaultdict(lambda: [0, 0.0])
    cats = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in cats:
            o = ops[(cats[e["cat"]], e["name"])]
            o[0] += 1
            o[1] += float(e.get("dur", 0))
    return ops


def truth_ops():
    if a.chrome:
        return chrome_ops()
    files = glob.glob(os.path.join(a.truth, "plugins", "profile", "*", "perfetto_trace.json.gz"))
    if not files:
        sys.exit(f"no perfetto_trace.json.gz under {a.truth}/plugins/profile")
    with gzip.open(sorted(files)[-1], "rt") as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    procs, threads = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    gpu = {p for p, n in procs.items() if "GPU" in n}
    print("truth processes:", sorted(set(procs.values()))[:8])
    print("truth GPU threads:", sorted({n for (p, _), n in threads.items() if p in gpu})[:12])
    ops = collections.defaultdict(lambda: [0, 0.0])  # (kind, name) -> [count, total us]
    for e in events:
        if e.get("ph") != "X" or e.get("pid") not in gpu:
            continue
        if not threads.get((e["pid"], e.get("tid")), "").startswith("Stream"):
            continue
        o = ops[(kind(e["name"]), e["name"])]
        o[0] += 1
        o[1] += float(e.get("dur", 0))
    return ops


def cutrace_ops():
    j = json.loads(subprocess.run([a.cutrace, "summary", "--json", a.trace], check=True, capture_output=True,
                                  text=True).stdout)
    ops = {("kernel", k["name"]): [k["count"], k["total_ns"] / 1e3] for k in j["kernels"]}
    for kd, v in j.get("memcpy", {}).items():
        if v["count"]:
            ops[("memcpy", "memcpy " + kd)] = [v["count"], v["total_ns"] / 1e3]
    if j.get("memset", {}).get("count"):
        ops[("memset", "memset")] = [j["memset"]["count"], j["memset"]["total_ns"] / 1e3]
    return ops


t, c = truth_ops(), cutrace_ops()
for k in ("kernel", "memcpy", "memset"):
    tn = sum(v[0] for (kk, _), v in t.items() if kk == k)
    cn = sum(v[0] for (kk, _), v in c.items() if kk == k)
    tt = sum(v[1] for (kk, _), v in t.items() if kk == k)
    ct = sum(v[1] for (kk, _), v in c.items() if kk == k)
    print(f"{k:7s} truth {tn:6d} ops {tt / 1e3:10.3f} ms   cutrace {cn:6d} ops {ct / 1e3:10.3f} ms")
names_t = {n: v for (k, n), v in t.items() if k == "kernel"}
names_c = {n: v for (k, n), v in c.items() if k == "kernel"}
both = sorted(set(names_t) & set(names_c), key=lambda n: -names_t[n][1])
diff = [n for n in both if names_t[n][0] != names_c[n][0]]
print(f"kernel names: truth {len(names_t)}, cutrace {len(names_c)}, in both {len(both)}, "
      f"with a different count {len(diff)}")
print("  count truth/cutrace  time truth/cutrace (us)  error  name")
for n in both[:15]:
    (tc, tt), (cc, ct) = names_t[n], names_c[n]
    print(f"  {tc:5d} {cc:5d}  {tt:11.1f} {ct:11.1f}  {(ct - tt) / tt * 100 if tt else 0:+6.2f}%  {n[:70]}")
for label, only in (("only in the truth", set(names_t) - set(names_c)), ("only in cutrace", set(names_c) - set(names_t))):
    rows = sorted(only, key=lambda n: -(names_t if label.endswith("truth") else names_c)[n][0])
    print(f"{label}: {len(rows)} names")
    for n in rows[:8]:
        v = (names_t if label.endswith("truth") else names_c)[n]
        print(f"  {v[0]:5d} {v[1]:11.1f} us  {n[:90]}")
