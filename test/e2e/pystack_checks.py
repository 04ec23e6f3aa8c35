"""End-to-end tests of the Python call stacks (shim/py_stack.cpp, collector/py_code.cpp): the
frames of test/python/stack_app.py's syncs against the stacks Python reports itself at each call,
and the GPU time by Python call site of its launches, under this python3 and every interpreter
listed in CUTRACE_TEST_PYTHONS (space-separated paths, e.g. other CPython versions)."""
import json
import os
import shutil
import sys

from harness import STRESS_SCALE, test, trace_meta, traces

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY_TESTS = os.path.join(REPO, "test", "python")
APP = os.path.join(PY_TESTS, "stack_app.py")
SCENARIOS = ["nested", "nested, GIL held", "method", "generator", "coroutine", "thread", "lambda", "exec"]


def interpreters():
    out = [sys.executable]
    for p in os.environ.get("CUTRACE_TEST_PYTHONS", "").split():
        if shutil.which(p) and p not in out:
            out.append(p)
    return out


def py_frames(site):
    return [[f["file"], f["line"], f["function"]] for f in site["frames"] if f.get("python")]


def source_line(marker):
    with open(APP) as f:
        for i, line in enumerate(f, 1):
            if marker in line:
                return i
    raise AssertionError(marker)


def run_app(s, c, python, opts=()):
    d = s.tmpdir("pystack")
    out = os.path.join(d, "expected.json")
    p = s.record(c, d, [python, APP, out], opts=opts, extra_env={"PYTHONDONTWRITEBYTECODE": "1"})
    c.require(p.stdout == "stack_app: OK\n", f"{python}: stack_app printed {p.stdout!r}: {p.stderr[-600:]}")
    c.expect("not supported" not in p.stderr, f"{python}: {p.stderr[-600:]}")
    with open(out) as f:
        want = json.load(f)
    return d, want


@test
def python_stacks_of_syncs_match_python(s, c):
    """Each sync's Python frames (file, line, qualified name) are exactly those Python reports at
    the call: nested functions, a method, a generator, a coroutine, a threading thread, a lambda,
    exec'd code, with the GIL released (CDLL) and held (PyDLL); and the call site's label is the
    innermost of them."""
    for python in interpreters():
        d, want = run_app(s, c, python)
        ver = ".".join(map(str, want["version"]))
        c.equal(f"{ver} scenarios", [w[0] for w in want["stacks"]], SCENARIOS)
        meta = trace_meta(s, c, os.path.join(d, traces(d)[0]))
        c.equal(f"{ver} python_stacks meta", meta.get("python_stacks"), f"sync {ver}")
        j = s.summary(c, d)
        sites = j["sync_call_sites"]["sites"]
        got = [py_frames(x) for x in sites]
        for name, stack in want["stacks"]:
            c.expect(stack in got, f"{ver} {name}: no sync site with Python frames {stack}; sites: {got}")
            for x in sites:
                if py_frames(x) == stack:
                    label = f"{os.path.basename(stack[0][0])}:{stack[0][1]} in {stack[0][2]}"
                    c.equal(f"{ver} {name} site label", x["site"], label)
        # The Python frames come first, then the native ones.
        for x in sites:
            kinds = [bool(f.get("python")) for f in x["frames"]]
            c.expect(kinds == sorted(kinds, reverse=True), f"{ver}: native frames before Python ones in {x['site']}")
        c.equal(f"{ver} python_call_sites without --python-stacks launch", j["python_call_sites"]["sites"], [])


@test
def python_call_sites_of_launches(s, c):
    """--python-stacks launch: kernels by the innermost Python frame outside the skipped packages
    (the fake framework's launch helper by default is not skipped; --python-skip fakefw names
    the application's lines)."""
    a, b = source_line("# launch site A"), source_line("# launch site B")
    helper = os.path.join(PY_TESTS, "fakefw", "__init__.py")
    for python in interpreters():
        d, want = run_app(s, c, python, opts=["--python-stacks", "launch"])
        ver = ".".join(map(str, want["version"]))
        j = s.summary(c, d)
        sites = [(x["file"], x["line"], x["function"], x["kernels"]) for x in j["python_call_sites"]["sites"]]
        c.equal(f"{ver} call sites (default skip)", sites, [(helper, 6, "launch", 5)])
        c.equal(f"{ver} skip", j["python_call_sites"]["skip"], "torch,triton,jax,stdlib")
        p = s.run([s.cutrace, "summary", "--json", "--python-skip", "fakefw,stdlib", d])
        c.require(p.returncode == 0, f"summary --python-skip exited {p.returncode}: {p.stderr[-300:]}")
        j2 = json.loads(p.stdout)
        sites = sorted((x["site"], x["kernels"], x["timed"]) for x in j2["python_call_sites"]["sites"])
        c.equal(f"{ver} call sites (--python-skip fakefw,stdlib)", sites,
                sorted([(f"stack_app.py:{b} in main", 2, 2), (f"stack_app.py:{a} in main", 3, 3)]))
        gpu = {x["line"]: x["gpu_ns"] for x in j2["python_call_sites"]["sites"]}
        # The fake driver's kernels take about their nominal time (events: within a few %).
        c.timing(gpu.get(a, 0) >= 0.8 * 3 * 2000 and gpu.get(b, 0) >= 0.8 * 2 * 5000, f"{ver} GPU ns by line {gpu}")
        p = s.run([s.cutrace, "summary", d])
        c.expect("GPU time by Python call site" in p.stdout, f"{ver}: no Python call-site table: {p.stdout[-800:]}")
        # The Chrome export's backtrace argument begins with the Python frames.
        out = os.path.join(d, "trace.json")
        p = s.run([s.cutrace, "export", os.path.join(d, traces(d)[0]), "--format", "chrome", "-o", out])
        c.require(p.returncode == 0, f"export chrome exited {p.returncode}: {p.stderr[-300:]}")
        with open(out) as f:
            text = f.read()
        c.expect('"__init__.py:6 in launch"' in text,
                 f"{ver}: the Chrome export has no Python frame in a backtrace")


@test
def chrome_export_writes_python_function_events(s, c):
    """The Chrome export writes Kineto's python_function events for each sync's Python frames: for
    every scenario of stack_app.py, one event per frame named "file(line): qualname", outermost
    first, on the sync's thread at the sync's own ts and dur, each with a "Python id" and, below
    the outermost, the "Python parent id" of the frame above it; none that is not at a call."""
    python = sys.executable
    d, want = run_app(s, c, python)
    ver = ".".join(map(str, want["version"]))
    out = os.path.join(d, "trace.json")
    p = s.run([s.cutrace, "export", os.path.join(d, traces(d)[0]), "--format", "chrome", "-o", out])
    c.require(p.returncode == 0, f"export chrome exited {p.returncode}: {p.stderr[-300:]}")
    with open(out) as f:
        ev = json.load(f)["traceEvents"]
    at = {}
    for e in ev:
        if e.get("cat") == "python_function":
            at.setdefault((e["pid"], e["tid"], e["ts"], e["dur"]), []).append(e)
    chains, matched = [], 0
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "backtrace" in e.get("args", {}):
            chain = at.get((e["pid"], e["tid"], e["ts"], e["dur"]), [])
            matched += len(chain)
            chains.append([x["name"] for x in chain])
            for k, x in enumerate(chain):
                c.expect(x["ph"] == "X" and isinstance(x["args"].get("Python id"), int), f"{ver}: event {x}")
                parent = chain[k - 1]["args"].get("Python id") if k else None
                c.equal(f"{ver} {x['name']} parent", x["args"].get("Python parent id"), parent)
    for name, stack in want["stacks"]:
        names = [f"{file}({line}): {fn}" for file, line, fn in reversed(stack)]
        c.expect(names in chains, f"{ver} {name}: no call with python_function events {names}; calls: {chains}")
    c.equal(f"{ver} python_function events not at a call", sum(map(len, at.values())) - matched, 0)
    ids = [x["args"]["Python id"] for v in at.values() for x in v]
    c.equal(f"{ver} distinct Python ids", len(set(ids)), len(ids))


@test
def python_stacks_under_thread_load(s, c):
    """8 threads launch (GIL released) while the main thread syncs (GIL held), 100k stacks with
    --python-stacks launch: every launch attributed to the worker's line, the syncs to theirs."""
    threads, launches = 8, int(12500 * STRESS_SCALE)
    app = os.path.join(PY_TESTS, "stack_stress.py")
    with open(app) as f:
        src = f.read().splitlines()
    launch_line = next(i for i, x in enumerate(src, 1) if "# stress launch site" in x)
    sync_lines = {i for i, x in enumerate(src, 1) if "# stress sync site" in x}
    d = s.tmpdir("pystack-stress")
    p = s.record(c, d, [sys.executable, app, str(threads), str(launches)], opts=["--python-stacks", "launch"])
    c.require(p.stdout == "stack_stress: OK\n", f"stack_stress printed {p.stdout!r}: {p.stderr[-600:]}")
    j = s.summary(c, d)
    c.equal("dropped_records", j["dropped_records"], 0)
    sites = [(x["site"], x["kernels"]) for x in j["python_call_sites"]["sites"]]
    # A thread whose stack ring is full records its call without a stack, counted in stacks_lost.
    lost = int(trace_meta(s, c, os.path.join(d, traces(d)[0])).get("stacks_lost", 0))
    c.equal("kernels", [(k["name"], k["count"]) for k in j["kernels"]], [("k_stress", threads * launches)])
    c.require(len(sites) == 1, f"launch call sites {sites}")
    c.equal("launch call site", sites[0][0], f"stack_stress.py:{launch_line} in main.<locals>.worker")
    # stacks_lost counts the main thread's syncs too: those are the syncs without a stack.
    lost_launches = lost - j["sync_call_sites"]["without_stack"]["count"]
    c.equal("launches with a stack + launch stacks lost", sites[0][1] + lost_launches, threads * launches)
    if lost:
        c.notes.append(f"stacks not recorded (stack rings full): {lost_launches} of {threads * launches} launches', "
                       f"{lost - lost_launches} syncs'")
    for x in j["sync_call_sites"]["sites"]:
        py = [f for f in x["frames"] if f.get("python")]
        c.expect(py and py[0]["line"] in sync_lines and py[0]["function"] == "main",
                 f"a sync site not at a sync line {sorted(sync_lines)}: {x['site']}")


@test
def unsupported_python_warns_once_native_stacks_only(s, c):
    """An interpreter older than 3.10 (those listed in CUTRACE_TEST_OLD_PYTHONS): one warning once
    CUDA is used, native stacks only, the program's output unchanged."""
    old = [p for p in os.environ.get("CUTRACE_TEST_OLD_PYTHONS", "").split() if shutil.which(p)]
    if not old:
        c.notes.append("no interpreter in CUTRACE_TEST_OLD_PYTHONS: nothing run")
    for python in old:
        d = s.tmpdir("pystack-old")
        out = os.path.join(d, "expected.json")
        p = s.record(c, d, [python, APP, out])
        c.equal(f"{python} stdout", p.stdout, "stack_app: OK\n")
        c.equal(f"{python} warnings", p.stderr.count("Python call stacks not supported"), 1)
        j = s.summary(c, d)
        sites = j["sync_call_sites"]["sites"]
        c.expect(sites and not any(f.get("python") for x in sites for f in x["frames"]),
                 f"{python}: Python frames or no stacks: {[x['site'] for x in sites]}")
