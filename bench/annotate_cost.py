#!/usr/bin/env python3
"""Per-call cost (ns) of the Python annotation API, without and with the cutrace shim, next to
torch.cuda.nvtx's calls form by form when torch is importable, and of the shim's C API alone
(bench/annotate_cost.c, when a C compiler is present).

    python3 bench/annotate_cost.py [--build build] [--fake-driver] [--bursts 200] [--json]

Runs itself twice: once plainly (the module finds no shim: every call is a no-op), once under
`cutrace record` (the shim records; NVTX calls reach its bridge). Each run initialises CUDA
through ctypes (libcuda.so.1; --fake-driver puts build/test/fake_cuda first on LD_LIBRARY_PATH,
for a machine without a GPU) so that the shim is recording, then times each operation in bursts
of --burst calls with a pause between bursts, so that the collector drains the per-thread rings
and no record is dropped (a dropped record is cheaper than a recorded one). The shim run then
reports the records dropped while measuring; it should be 0. Numbers are the median burst, in
ns per call, timeit-style (loop overhead included: see the "empty loop" row).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# (label, statement, setup). Setup runs once per burst; `cutrace` and `nvtx` (torch.cuda.nvtx)
# are globals.
OPS = [
    ("empty loop (timeit overhead)", "pass", "pass"),
    ("with a: (annotate object reused)", "with a: pass", "a = cutrace.annotate('step')"),
    ("with cutrace.annotate('step'):", "with cutrace.annotate('step'): pass", "pass"),
    ("@annotate function call", "f()", "f = cutrace.annotate('fn')(lambda: None)"),
    ("plain function call (baseline)", "f()", "f = lambda: None"),
    ("annotation_begin + annotation_end", "cutrace.annotation_end(cutrace.annotation_begin('io'))", "pass"),
    ("range_push + range_pop", "cutrace.range_push('p'); cutrace.range_pop()", "pass"),
    ("mark", "cutrace.mark('m')", "pass"),
    # torch.cuda.nvtx, form by form (under the shim its calls reach cutrace's NVTX bridge)
    ("torch: with nvtx.range('t'):", "with nvtx.range('t'): pass", "pass"),
    ("torch: @nvtx.range function call", "f()", "f = nvtx.range('fn')(lambda: None)"),
    ("torch: range_start + range_end", "nvtx.range_end(nvtx.range_start('io'))", "pass"),
    ("torch: range_push + range_pop", "nvtx.range_push('t'); nvtx.range_pop()", "pass"),
    ("torch: mark", "nvtx.mark('m')", "pass"),
]

# Each cutrace form next to torch.cuda.nvtx's form that does the same (the comparison).
SAME_FORM = [
    ("with a: (annotate object reused)", "torch: with nvtx.range('t'):"),
    ("with cutrace.annotate('step'):", "torch: with nvtx.range('t'):"),
    ("@annotate function call", "torch: @nvtx.range function call"),
    ("annotation_begin + annotation_end", "torch: range_start + range_end"),
    ("range_push + range_pop", "torch: range_push + range_pop"),
    ("mark", "torch: mark"),
]


def init_cuda():
    import ctypes
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return "no driver (%s)" % e
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    for call in (lambda: cu.cuInit(0), lambda: cu.cuDeviceGet(ctypes.byref(dev), 0),
                 lambda: cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                 lambda: cu.cuCtxSetCurrent(ctx)):
        r = call()
        if r != 0:
            return "CUDA init failed: CUresult %d" % r
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    return name.value.decode("utf-8", "replace")


def child(a):
    sys.path.insert(0, os.path.join(REPO, "python"))
    import warnings
    warnings.simplefilter("ignore", RuntimeWarning)
    import cutrace
    device = init_cuda()
    g = {"cutrace": cutrace}
    try:
        import torch.cuda.nvtx as nvtx
        g["nvtx"] = nvtx
    except Exception:
        pass
    out = {"shim": cutrace.shim_loaded(), "active": cutrace.is_active(), "device": device,
           "python": sys.version.split()[0], "ns": {}}
    for label, stmt, setup in OPS:
        if label.startswith("torch") and "nvtx" not in g:
            continue
        timer = timeit.Timer(stmt, setup, globals=g)
        timer.timeit(number=a.burst)  # warm up: caches, first-use paths
        per_call = []
        for _ in range(a.bursts):
            per_call.append(timer.timeit(number=a.burst) / a.burst * 1e9)
            time.sleep(a.pause_ms / 1000.0)  # the collector drains every 1 ms
        out["ns"][label] = statistics.median(per_call)
    print(json.dumps(out))


def run_child(argv, env):
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.exit("annotate_cost: %s exited %d:\n%s" % (" ".join(argv[:3]), p.returncode, p.stderr))
    return json.loads(lines[-1])


def c_api_cost(cutrace_bin, tmp, env):
    """The shim's cost without Python: bench/annotate_cost.c under `cutrace record`."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return "C API: no C compiler"
    exe = os.path.join(tmp, "annotate_cost_c")
    inc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")  # nvtx3/
    b = subprocess.run([cc, "-O2", "-I", inc, "-o", exe, os.path.join(HERE, "annotate_cost.c"), "-ldl"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if b.returncode != 0:
        return "C API: build failed: " + b.stdout.strip()
    p = subprocess.run([cutrace_bin, "record", "-o", os.path.join(tmp, "c"), "--sample-hz", "0", "--", exe],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    return p.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="cutrace build directory")
    ap.add_argument("--cutrace", help="the cutrace binary (default: BUILD/bin/cutrace, else PATH)")
    ap.add_argument("--fake-driver", action="store_true", help="use BUILD/test/fake_cuda's libcuda")
    ap.add_argument("--burst", type=int, default=200, help="calls per timed burst")
    ap.add_argument("--bursts", type=int, default=100, help="bursts per operation")
    ap.add_argument("--pause-ms", type=float, default=3.0, help="pause after each burst")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)

    cutrace_bin = a.cutrace or os.path.join(a.build, "bin", "cutrace")
    if not os.path.exists(cutrace_bin):
        cutrace_bin = shutil.which("cutrace") or sys.exit("annotate_cost: no cutrace binary; use --cutrace")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LD_PRELOAD", "CUTRACE_", "NVTX_INJECTION"))}
    if a.fake_driver:
        fake = os.path.join(a.build, "test", "fake_cuda")
        env["LD_LIBRARY_PATH"] = fake + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    me = [sys.executable, os.path.abspath(__file__), "--child", "--burst", str(a.burst),
          "--bursts", str(a.bursts), "--pause-ms", str(a.pause_ms)]
    plain = run_child(me, env)
    out_dir = tempfile.mkdtemp(prefix="annotate-cost-")
    try:
        shim = run_child([cutrace_bin, "record", "-o", out_dir, "--sample-hz", "0", "--"] + me, env)
        p = subprocess.run([cutrace_bin, "summary", "--json", out_dir], env=env,
                           stdout=subprocess.PIPE, universal_newlines=True)
        summary = json.loads(p.stdout) if p.returncode == 0 else {}
        c_line = c_api_cost(cutrace_bin, out_dir, env)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    dropped = summary.get("dropped_records")
    result = {"no_shim": plain, "shim": shim, "dropped_records": dropped,
              "ranges_recorded": sum(r["count"] for r in summary.get("ranges", []))}
    result["c_api"] = c_line
    if a.json:
        print(json.dumps(result, indent=2))
        return
    print("Python %s; device: %s" % (plain["python"], shim["device"]))
    print("shim run: module bound to the shim: %s, capturing: %s, ranges recorded %s, records "
          "dropped while measuring: %s" % (shim["shim"], shim["active"], result["ranges_recorded"], dropped))
    w = max(len(label) for label, _, _ in OPS)
    print("%-*s  %12s  %12s" % (w, "operation (ns per call)", "no shim", "cutrace shim"))
    print("%s  %s  %s" % ("-" * w, "-" * 12, "-" * 12))
    for label, _, _ in OPS:
        if label not in plain["ns"] and label not in shim["ns"]:
            continue
        cell = lambda r: "%12.0f" % r["ns"][label] if label in r["ns"] else "%12s" % "-"
        print("%-*s  %s  %s" % (w, label, cell(plain), cell(shim)))
    print(c_line)
    if "torch: mark" not in plain["ns"]:
        print("(torch not importable: no torch.cuda.nvtx rows)")
        return
    print()
    print("Under the shim, each form next to torch.cuda.nvtx's (ns per call):")
    for mine, theirs in SAME_FORM:
        m, t = shim["ns"][mine], shim["ns"][theirs]
        print("  %-36s %6.0f   %-34s %6.0f   %+5.0f%%" % (mine, m, theirs[len("torch: "):], t, (m / t - 1) * 100))

if __name__ == "__main__":
    main()
