"""End-to-end tests of the Python annotations (python/cutrace, test/python): the unit tests with and
without the shim, and the ranges and marks of test/python/annotated_app.py in the trace."""
import os
import re
import sys

from harness import dump_fields, tail, test, traces


# ---- Python annotations (python/cutrace, test/python) ---------------------------------------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY_TESTS = os.path.join(REPO, "test", "python")
PY_STEPS, PY_STEP_GPU_NS = 5, (55_000, 80_000)  # 3 x 20 us back to back per step: ~60 us


def python_env(s):
    return {"PYTHONPATH": os.path.join(REPO, "python"), "PYTHONDONTWRITEBYTECODE": "1"}


def unittest_ran(c, what, p):
    """`python -m unittest` output: requires OK; returns (ran, skipped)."""
    m = re.search(r"^Ran (\d+) tests? in", p.stderr, re.M)
    ok = re.search(r"^OK(?: \(skipped=(\d+)\))?$", p.stderr, re.M)
    c.require(p.returncode == 0 and m and ok, f"{what} exited {p.returncode}: {tail(p.stderr, 1500)}")
    return int(m.group(1)), int(ok.group(1) or 0)


def check_step_projection(s, c, j, trace):
    """Each step range: GPU projection mean within PY_STEP_GPU_NS. A mean outside gets a second
    look, as check_means does: the test passes (with a note) when every step's projection is
    exactly the span of the kernels launched inside it (first GPU start to last GPU end), i.e.
    the range is right and the fake's kernels were spread out by a descheduled launching thread."""
    lo, hi = PY_STEP_GPU_NS
    steps = {r["name"]: r for r in j["ranges"] if r["name"].startswith("step_")}
    off = {n: r["gpu_mean_ns"] for n, r in steps.items() if not lo <= r["gpu_mean_ns"] <= hi}
    if not off:
        return
    ranges = [r for r in dump_fields(s, c, trace, "Range") if r.get("name", "").startswith("step_")]
    kernels = dump_fields(s, c, trace, "Kernel")
    wrong = []
    for r in ranges:
        (b, e), (gs, ge) = r["cpu"], r["gpu"]
        inside = [k["gpu"] for k in kernels if b <= k["cpu"][0] <= e]
        want = (min(k[0] for k in inside), max(k[1] for k in inside)) if inside else (0, 0)
        if (gs, ge) != want:
            wrong.append(f"{r['name']} gpu=[{gs}..{ge}], its kernels span [{want[0]}..{want[1]}]")
    why = (f"step GPU projection means {off} ns outside {lo}..{hi} ns; "
           + ("; ".join(wrong) if wrong else "but each equals the span of its kernels"))
    (c.errors if wrong or not ranges else c.notes).append(why)


@test
def python_api_unit(s, c):
    env = python_env(s)
    env["LD_LIBRARY_PATH"] = ""  # no driver needed: only tests that need no shim run
    p = s.run([sys.executable, "-m", "unittest", "discover", "-s", PY_TESTS], env, timeout=120, cwd=REPO)
    ran, skipped = unittest_ran(c, "python3 -m unittest discover -s test/python", p)
    c.expect(ran - skipped >= 9, f"only {ran - skipped} of {ran} Python tests ran ({skipped} skipped)")


@test
def python_annotations_recorded(s, c):
    d = s.tmpdir("pyannot")
    p = s.record(c, d, [sys.executable, os.path.join(PY_TESTS, "annotated_app.py")], extra_env=python_env(s))
    c.equal("stdout", p.stdout, "annotated_app: OK shim=1 active=1\n")
    c.expect("shim not loaded" not in p.stderr, f"the module did not find the shim: {tail(p.stderr)}")
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    trace = os.path.join(d, traces(d)[0])
    j = s.summary(c, d)
    c.require("ranges" in j and "marks" in j, f"no ranges/marks in the summary: keys {sorted(j)}")
    ranges = {r["name"]: r for r in j["ranges"]}
    want = {f"step_{i}": 1 for i in range(PY_STEPS)}
    want.update({"io": 1, "loss_fn": 2})
    c.equal("range names", sorted(ranges), sorted(want))
    for name, n in want.items():
        r = ranges.get(name)
        if not r:
            continue
        c.equal(f"{name} count", r["count"], n)
        c.equal(f"{name} domain", r["domain"], "")
        c.expect(r["cpu_min_ns"] > 0, f"{name} cpu_min_ns {r['cpu_min_ns']}")
        if name.startswith("step_"):
            c.equal(f"{name} gpu_ops", r["gpu_ops"], 3)
            c.equal(f"{name} gpu_count", r["gpu_count"], 1)
            c.expect(r["cpu_total_ns"] >= r["gpu_total_ns"] > 0,
                     f"{name} cpu {r['cpu_total_ns']} ns, gpu {r['gpu_total_ns']} ns: GPU work ends before the sync returns")
        else:
            c.equal(f"{name} gpu_ops", r["gpu_ops"], 0)
            c.equal(f"{name} gpu_count", r["gpu_count"], 0)
    check_step_projection(s, c, j, trace)
    c.equal("marks", j["marks"], {"checkpoint": 1})
    c.equal("kernels", [(k["name"], k["count"]) for k in j["kernels"]], [("k_step", 3 * PY_STEPS)])
    c.equal("dropped_records", j["dropped_records"], 0)
    # `cutrace dump` shows every field with names resolved.
    recs = {r.get("name"): r for r in dump_fields(s, c, trace, "Range")}
    io, step = recs.get("io", {}), recs.get("step_0", {})
    c.equal("io kind", io.get("kind"), "start_end")
    c.equal("io source", io.get("source"), "api")
    c.expect(io.get("tid") and io.get("end_tid") and io["tid"] != io["end_tid"],
             f"io was ended on another thread: tid {io.get('tid')}, end_tid {io.get('end_tid')}")
    c.equal("step_0 kind", step.get("kind"), "push_pop")
    c.equal("step_0 depth", step.get("depth"), "0")
    marks = dump_fields(s, c, trace, "Mark")
    c.equal("Mark records", [(m.get("name"), m.get("source")) for m in marks], [("checkpoint", "api")])

    # The unit tests under the shim: ShimTests run (8 threads nesting ranges, odd names, ...).
    d2 = s.tmpdir("pyunit")
    p = s.record(c, d2, [sys.executable, "-m", "unittest", "discover", "-s", PY_TESTS],
                 extra_env=python_env(s))
    ran, skipped = unittest_ran(c, "the Python tests under `cutrace record`", p)
    c.expect(ran - skipped >= 6, f"only {ran - skipped} of {ran} Python tests ran under the shim")
    if c.expect(len(traces(d2)) == 1, f"unit test trace files {traces(d2)}, expected 1"):
        j = s.summary(c, d2)
        r = {x["name"]: x for x in j["ranges"]}
        want_n = 8 * 500  # test_api.SHIM_THREADS * SHIM_RANGES_PER_THREAD
        got = {n: r.get(n, {}).get("count", 0) for n in ("shim_test_thread", "shim_test_inner")}
        c.equal("shim_test_start_end count", r.get("shim_test_start_end", {}).get("count"), 10)
        c.equal("shim_test_decorated count",
                r.get("ShimTests.test_decorator_with_shim.<locals>.shim_test_decorated", {}).get("count"), 1)
        if any(n != want_n for n in got.values()):
            # Bursts faster than the collector drains lose records; the losses must be counted.
            ok = all(n <= want_n for n in got.values()) and j["dropped_records"] > 0
            (c.notes if ok else c.errors).append(
                f"thread ranges {got}, expected {want_n} each; dropped_records {j['dropped_records']}")


@test
def smprof_start_stop_are_the_windows(s, c):
    """A script written for smprof (`import cutrace as smppy`), under plain `cutrace record`, is
    recorded between start_profiling and stop_profiling, each pair a window, as smprof recorded
    it; the whole process only when the user chose `--capture-range process`."""
    script = [sys.executable, os.path.join(PY_TESTS, "smprof_window_app.py")]
    d = s.tmpdir("smprof")
    p = s.record(c, d, script, extra_env=python_env(s))
    c.equal("stdout", p.stdout, "smprof_window_app: OK\n")
    j = s.summary(c, d)
    c.equal("kernels", sorted((k["name"], k["count"]) for k in j["kernels"]), [("k_again", 1), ("k_in", 3)])
    trace = os.path.join(d, traces(d)[0])
    wins = dump_fields(s, c, trace, "Window")
    c.equal("window edges", [(w.get("edge"), w.get("reason")) for w in wins],
            [("begin", "api"), ("end", "api"), ("begin", "api"), ("end", "api")])
    d = s.tmpdir("smprof-process")
    s.record(c, d, script, opts=["--capture-range", "process"], extra_env=python_env(s))
    j = s.summary(c, d)
    c.equal("kernels with --capture-range process", sorted((k["name"], k["count"]) for k in j["kernels"]),
            [("k_after", 4), ("k_again", 1), ("k_before", 2), ("k_end", 5), ("k_in", 3)])
