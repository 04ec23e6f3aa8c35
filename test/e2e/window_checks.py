"""End-to-end tests of capture windows: NVTX steps (--capture-range nvtx, --capture-steps,
--capture-repeat), cudaProfilerApi, manual windows opened by `cutrace start`/`stop`, and what a
process without a window writes (nothing)."""
import os
import re
import subprocess
import time

from harness import (TIME_SCALE, dump_fields, dump_ops, preload_env, ranges_by_name, tail, test, trace_meta,
                     traces)


@test
def nvtx_window_captures_exactly_the_chosen_steps(s, c):
    """--capture-range=nvtx:step_* --capture-steps 1-2: only steps 1 and 2 and their kernels."""
    d = s.tmpdir("nvtxwin")
    s.record(c, d, [s.prog("nvtx_app")], opts=["--capture-range", "nvtx:step_*", "--capture-steps", "1-2"])
    j = s.summary(c, d)
    steps = sorted(n for n in ranges_by_name(j) if n.startswith("step_"))
    c.equal("step ranges in the window", steps, ["step_1", "step_2"])
    c.equal("kernels in the window", sum(k["count"] for k in j["kernels"]), 6)
    wins = dump_fields(s, c, os.path.join(d, traces(d)[0]), "Window")
    c.equal("window edges", [(w.get("edge"), w.get("reason")) for w in wins], [("begin", "nvtx"), ("end", "nvtx")])


@test
def nvtx_window_pattern_is_the_summary_dialect(s, c):
    """The capture trigger takes the same name patterns as `summary --step-pattern`: '|'
    alternatives (fnmatch has none: 'nomatch|step_*' matched no range at all) and a backslash
    that quotes (step_\\* is the literal name "step_*", which nvtx_app does not use)."""
    d = s.tmpdir("nvtxalt")
    s.record(c, d, [s.prog("nvtx_app")], opts=["--capture-range", "nvtx:nomatch|step_*", "--capture-steps", "1-2"])
    j = s.summary(c, d)
    steps = sorted(n for n in ranges_by_name(j) if n.startswith("step_"))
    c.equal("step ranges in the window", steps, ["step_1", "step_2"])
    d = s.tmpdir("nvtxquote")
    p = s.record(c, d, [s.prog("nvtx_app")], opts=["--capture-range", "nvtx:step_\\*"])
    c.equal("trace files when the quoted pattern matches nothing", traces(d), [])
    c.expect("no capture window opened" in p.stderr, f"record's message: {tail(p.stderr)!r}")


@test
def launcher_without_a_window_writes_no_trace(s, c):
    """A process in which no capture window opened writes no file (torchrun's parent, under
    `cutrace record --capture-range nvtx:step_* -- torchrun ...`, touches CUDA but runs no step: it
    must not add a third trace, with no window and "rank 0 of 1", beside the two ranks'); when no
    process opened one, `cutrace record` says so."""
    d = s.tmpdir("nowin-launcher")
    prog = s.prog("launch_loop") + " 50 && " + s.prog("nvtx_app")
    s.record(c, d, ["sh", "-c", prog], opts=["--capture-range", "nvtx:step_*", "--capture-steps", "1-2"])
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}: expected nvtx_app's only")
    meta = trace_meta(s, c, os.path.join(d, traces(d)[0]))
    c.expect("nvtx_app" in meta.get("cmdline", ""), f"the trace is not nvtx_app's: {meta.get('cmdline')!r}")
    c.equal("kernels in the window", sum(k["count"] for k in s.summary(c, d)["kernels"]), 6)
    d = s.tmpdir("nowin-none")
    p = s.record(c, d, [s.prog("launch_loop"), "50"], opts=["--capture-range", "nvtx:step_*"])
    c.equal("trace files without a window", traces(d), [])
    c.expect("0 trace files written" in p.stderr and "no capture window opened in any process "
             "(--capture-range nvtx:step_*)" in p.stderr, f"record's message: {tail(p.stderr)!r}")
    # Process mode is not deferred: a process that launched writes its file as before.
    d = s.tmpdir("nowin-process")
    s.record(c, d, [s.prog("launch_loop"), "50"])
    c.equal("trace files in process mode", len(traces(d)), 1)


@test
def nvtx_window_repeats_every_n_steps(s, c):
    """--capture-steps 0-0 --capture-repeat 2: steps 0, 2 and 4 of nvtx_app, each its own window
    (a block that does not close would hold step_1 and step_3 too)."""
    d = s.tmpdir("nvtxrep")
    s.record(c, d, [s.prog("nvtx_app")],
             opts=["--capture-range", "nvtx:step_*", "--capture-steps", "0-0", "--capture-repeat", "2"])
    j = s.summary(c, d)
    steps = sorted(n for n in ranges_by_name(j) if n.startswith("step_"))
    c.equal("step ranges in the windows", steps, ["step_0", "step_2", "step_4"])
    c.equal("kernels in the windows", sum(k["count"] for k in j["kernels"]), 9)
    wins = dump_fields(s, c, os.path.join(d, traces(d)[0]), "Window")
    c.equal("window edges", [w.get("edge") for w in wins], ["begin", "end"] * 3)
    # The summary's per-window table: each window holds its own step and 3 kernels (records of a
    # packed block are grouped by type, not in time order: assigned by time).
    per = j["ranks"][0]["windows"]
    c.equal("summary windows", [(w["index"], w["kernels"], w["steps"]["count"]) for w in per],
            [(0, 3, 1), (1, 3, 1), (2, 3, 1)])
    c.equal("window kernel time adds up", sum(w["kernel_ns"] for w in per),
            sum(k["total_ns"] for k in j["kernels"]))
    c.expect(all(w["begin_ns"] < w["end_ns"] for w in per), f"window spans: {per!r}")
    text = s.run([s.cutrace, "summary", d]).stdout
    c.expect("Capture windows" in text, f"no windows table: {tail(text)!r}")
    # More windows than --top rows: evenly spaced ones, the first and the last (--top 1 must not
    # divide by zero).
    for top, rows in ((1, ["0"]), (2, ["0", "2"])):
        p = s.run([s.cutrace, "summary", "--top", str(top), d])
        c.require(p.returncode == 0, f"summary --top {top} exited {p.returncode}: {tail(p.stderr)}")
        table = p.stdout.split("Capture windows", 1)[-1].split("\n\n", 1)[0].splitlines()
        shown = [ln.split()[0] for ln in table if re.match(r"\s+\d+\s+\d", ln)]
        c.equal(f"windows shown with --top {top}", shown, rows)
        c.expect(f"3 windows: {top} shown, evenly spaced" in p.stdout, f"--top {top}: no note: {tail(p.stdout)!r}")
    # A period no longer than the block cannot repeat it: one warning, A-B captured once.
    d2 = s.tmpdir("nvtxrep_bad")
    p = s.record(c, d2, [s.prog("nvtx_app")],
                 opts=["--capture-range", "nvtx:step_*", "--capture-steps", "1-2", "--capture-repeat", "1"])
    c.expect("CUTRACE_CAPTURE_REPEAT=1 needs" in p.stderr, f"no warning: {tail(p.stderr)!r}")
    j2 = s.summary(c, d2)
    steps = sorted(n for n in ranges_by_name(j2) if n.startswith("step_"))
    if steps != ["step_1", "step_2"]:  # a rare failure under TSan: note what the trace holds
        c.notes.append(f"period <= B-A: ranges {sorted(ranges_by_name(j2))}, windows "
                       f"{[(w.get('index'), w.get('kernels')) for r in j2.get('ranks', []) for w in r.get('windows', [])]}, "
                       f"kernels {sum(k['count'] for k in j2.get('kernels', []))}, record stderr {tail(p.stderr)!r}")
    c.equal("steps with a period <= B-A", steps, ["step_1", "step_2"])


@test
def profiler_api_window_and_nothing_outside(s, c):
    """--capture-range=cudaProfilerApi: window_app launches 4 kernels, cuProfilerStart, 3
    kernels, cuProfilerStop, 5 kernels: only the 3 are recorded, and outside the window the
    shim records no event on the fake driver (events created/recorded counted by the fake)."""
    d = s.tmpdir("profapi")
    p = s.record(c, d, [s.prog("window_app")], opts=["--capture-range", "cudaProfilerApi"])
    j = s.summary(c, d)
    c.equal("kernels recorded", sum(k["count"] for k in j["kernels"]), 3)
    m = re.search(r"event_records_outside=(\d+)", p.stdout)
    c.expect(m and m.group(1) == "0", f"events recorded outside the window: {tail(p.stdout)!r}")
    wins = dump_fields(s, c, os.path.join(d, traces(d)[0]), "Window")
    c.equal("window edges", [(w.get("edge"), w.get("reason")) for w in wins],
            [("begin", "cudaProfilerApi"), ("end", "cudaProfilerApi")])


@test
def profiler_api_window_closed_before_first_drain_adds_no_gpu_work(s, c):
    """A window that closes before the collector has seen its launches (window_app --quick-window:
    3 launches, cuProfilerStop at once, 20 ms): the context's first GPU clock anchor must not be
    recorded outside the window (as it is when the collector takes it on first seeing one of the
    context's operations). It comes at exit instead, and the 3 kernels still get their GPU times."""
    d = s.tmpdir("quickwin")
    p = s.record(c, d, [s.prog("window_app"), "--quick-window"], opts=["--capture-range", "cudaProfilerApi"])
    m = re.search(r"event_records_outside=(\d+)", p.stdout)
    c.expect(m and m.group(1) == "0", f"events recorded outside the window: {tail(p.stdout)!r}")
    j = s.summary(c, d)
    c.equal("kernels recorded (count, untimed)", [(k["count"], k["untimed"]) for k in j["kernels"]], [(3, 0)])


def start_stop_window(s, c, pid, after_s, open_s):
    """After after_s seconds `cutrace start PID`, open_s seconds later `cutrace stop PID`."""
    time.sleep(after_s)
    st = s.run([s.cutrace, "start", str(pid)])
    c.expect(st.returncode == 0, f"`cutrace start` exited {st.returncode}: {tail(st.stderr)}")
    time.sleep(open_s)
    sp = s.run([s.cutrace, "stop", str(pid)])
    c.expect(sp.returncode == 0, f"`cutrace stop` exited {sp.returncode}: {tail(sp.stderr)}")


@test
def manual_window_from_the_cli(s, c):
    """--capture-range=manual, then `cutrace start PID` / `cutrace stop PID` on the running job."""
    d = s.tmpdir("manual")
    env = dict(s.env)
    env.update({"LD_PRELOAD": s.shim, "CUTRACE_OUTPUT": d, "CUTRACE_CAPTURE_RANGE": "manual"})
    preload_env(env)
    proc = subprocess.Popen([s.prog("window_app"), "--slow"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        start_stop_window(s, c, proc.pid, 0.6, 0.6)
        out, err = proc.communicate(timeout=30 * TIME_SCALE)
    finally:
        if proc.poll() is None:
            proc.kill()
    c.require(proc.returncode == 0, f"window_app --slow exited {proc.returncode}: {tail(err)}")
    j = s.summary(c, d)
    n = sum(k["count"] for k in j["kernels"])
    c.expect(0 < n < 40, f"{n} kernels recorded: expected some but not all 40 of the slow loop")
    wins = dump_fields(s, c, os.path.join(d, traces(d)[0]), "Window")
    c.equal("window reasons", [w.get("reason") for w in wins], ["signal", "signal"])


@test
def cupti_window_after_the_last_turns_callbacks_on_again(s, c):
    """After the last NVTX window (steps 1-2, no repeat) CUPTI's callbacks go off; `cutrace start
    PID` then opens a window after all: the callbacks come back on with a warning (a thread that
    was inside a driver call at the switch-off gets none: its operations would be counted in
    gpu_times_missing), and that window's kernels are recorded and accounted for."""
    d = s.tmpdir("cupti-after-last")
    env = dict(s.env)
    env.update({"LD_PRELOAD": s.shim, "NVTX_INJECTION64_PATH": s.shim, "CUTRACE_OUTPUT": d,
                "CUTRACE_CAPTURE_RANGE": "nvtx", "CUTRACE_CAPTURE_NVTX": "step_*", "CUTRACE_CAPTURE_STEPS": "1-2",
                "CUTRACE_GPU_TIMING": "cupti", "CUTRACE_CUPTI": s.fake_cupti, "CUTRACE_SAMPLE_HZ": "0",
                "FAKE_CUPTI_REPORT": "1"})
    preload_env(env)
    proc = subprocess.Popen([s.prog("nvtx_app"), str(int(3000 * TIME_SCALE))], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        start_stop_window(s, c, proc.pid, 1.2 * TIME_SCALE, 0.6 * TIME_SCALE)
        out, err = proc.communicate(timeout=60 * TIME_SCALE)
    finally:
        if proc.poll() is None:
            proc.kill()
    c.require(proc.returncode == 0, f"nvtx_app exited {proc.returncode}: {tail(err)}")
    c.expect("a capture window opened after the last one" in err, f"no warning: {tail(err)!r}")
    m = re.search(r"(\d+) callback ids on at exit", err)
    c.expect(m and int(m.group(1)) > 0, f"callbacks not on again: {tail(err)!r}")
    trace = os.path.join(d, traces(d)[0])
    wins = dump_fields(s, c, trace, "Window")
    c.equal("windows", [(w.get("edge"), w.get("reason")) for w in wins],
            [("begin", "nvtx"), ("end", "nvtx"), ("begin", "signal"), ("end", "signal")])
    later = [o for o in dump_ops(s, c, trace, "Kernel") if o[0] >= int(wins[2]["ts"])]
    missing = int(trace_meta(s, c, trace).get("gpu_times_missing") or 0)
    c.expect(len(later) > 100, f"{len(later)} kernels in the window after the last")
    c.equal("kernels of that window untimed = gpu_times_missing", sum(1 for o in later if not o[2]), missing)
