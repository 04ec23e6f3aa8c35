"""End-to-end tests of the flight recorder (--capture-range flight:SECONDS, collector/flight.cpp,
the TraceWriter's ring) and `cutrace snapshot PID` (imported by check.py), on paced_launches: one
fake kernel a millisecond, so that each record's CPU time says when it was recorded."""
import json
import os
import re
import signal
import subprocess
import time

from harness import TIME_SCALE, dump_fields, env_of, tail, test, traces, trace_meta

KEEP_S = 1.5
# Records reach the ring within a cycle of their call; operations wait up to 200 ms for their GPU
# times (ops.cpp grace period) and blocks are cut every 100 ms: a record may be that much older
# than its block's begin.
SLACK_NS = int(0.35e9 * TIME_SCALE)


def start(s, d, keep, ms, name, app=None, hang_timeout="0"):
    out = open(os.path.join(os.path.dirname(d), name + ".out"), "w+")
    err = open(os.path.join(os.path.dirname(d), name + ".err"), "w+")
    env = env_of(s, {"CUTRACE_SAMPLE_HZ": "0"})
    app = app or [s.prog("paced_launches"), str(ms), "20000", "1000", "0"]
    argv = [s.cutrace, "record", "-q", "-o", d, "--hang-timeout", hang_timeout, "--capture-range", f"flight:{keep}",
            "--", *app]
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True)
    return p, out, err


def read(f):
    f.flush()
    with open(f.name, errors="replace") as g:
        return g.read()


def app_pid(p, timeout):
    """The pid of `cutrace record`'s child once it has launched kernels for a while."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.02)
    return None


def windows(s, c, trace):
    """[(reason, begin_ts, end_ts)] of the trace's Window pairs, in file order."""
    out, opened = [], {}
    for w in dump_fields(s, c, trace, "Window"):
        if w["edge"] == "begin":
            opened[w["index"]] = (w["reason"], int(w["ts"]))
        elif w["index"] in opened:
            reason, begin = opened.pop(w["index"])
            out.append((reason, begin, int(w["ts"])))
    return out


def kernel_times(s, c, trace):
    return sorted(f["cpu"][0] for f in dump_fields(s, c, trace, "Kernel") if "cpu" in f)


def finish(p, timeout=60):
    try:
        return p.wait(timeout=timeout * TIME_SCALE)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None


def check_span(c, what, win, trigger_ns, kernels, late_s=1.0):
    """The window ends at the trigger (taken within late_s), covers about KEEP_S, and kernels fill it."""
    reason, begin, end = win
    c.expect(trigger_ns <= end <= trigger_ns + int(late_s * 1e9 * TIME_SCALE),
             f"{what}: window ends {(end - trigger_ns) / 1e9:.3f} s after the trigger")
    c.expect(end - int(KEEP_S * 1e9) <= begin <= end - int((KEEP_S - 0.3 * TIME_SCALE) * 1e9),
             f"{what}: window spans {(end - begin) / 1e9:.3f} s, not the last {KEEP_S} s")
    inside = [t for t in kernels if begin - SLACK_NS <= t <= end]
    c.expect(len(inside) >= 0.3 * KEEP_S * 1000,
             f"{what}: {len(inside)} kernels in the window, expected about {KEEP_S * 1000:.0f} (one a ms)")
    if inside:
        c.expect(inside[0] <= begin + int(0.3e9 * TIME_SCALE),
                 f"{what}: the first kernel comes {(inside[0] - begin) / 1e9:.3f} s after the window's begin")


@test
def flight_sigusr2_then_sigterm_write_the_last_seconds_and_nothing_older(s, c):
    """flight:1.5 on a job launching a kernel a millisecond: SIGUSR2 after 3.5 s, SIGTERM 2.5 s
    later. The trace holds two windows, flight:SIGUSR2 and flight:SIGTERM, each ending at its
    trigger and spanning the 1.5 s before it; every kernel in the file lies in one of them (none
    from the first 2 s, none from the second between them); summary, dump and export read it."""
    root = s.tmpdir("flight_signals")
    d = os.path.join(root, "out")
    p, out, err = start(s, d, KEEP_S, 600000, "signals")
    try:
        pid = app_pid(p, 30 * TIME_SCALE)
        c.require(pid, f"no child of cutrace record: {tail(read(err))}")
        time.sleep(3.5 * TIME_SCALE)
        t1 = time.monotonic_ns()
        os.kill(pid, signal.SIGUSR2)
        time.sleep(2.5 * TIME_SCALE)
        t2 = time.monotonic_ns()
        os.kill(pid, signal.SIGTERM)
        rc = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    c.require(rc is not None and rc != 0, f"cutrace record exited {rc} after SIGTERM: {tail(read(err))}")
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}")
    trace = os.path.join(d, traces(d)[0])
    wins = windows(s, c, trace)
    c.require([w[0] for w in wins] == ["flight:SIGUSR2", "flight:SIGTERM"], f"windows {wins}")
    kernels = kernel_times(s, c, trace)
    check_span(c, "SIGUSR2", wins[0], t1, kernels)
    check_span(c, "SIGTERM", wins[1], t2, kernels)
    outside = [t for t in kernels if not any(b - SLACK_NS <= t <= e for _, b, e in wins)]
    c.expect(not outside, f"{len(outside)} kernels outside the snapshots' windows, the first at "
             f"{(outside[0] - t1) / 1e9 if outside else 0:.3f} s from SIGUSR2")
    c.expect(kernels and kernels[0] >= t1 - int(KEEP_S * 1e9) - SLACK_NS,
             f"a kernel {(t1 - kernels[0]) / 1e9 if kernels else 0:.3f} s before SIGUSR2 (kept {KEEP_S} s)")
    meta = trace_meta(s, c, trace)
    c.equal("flight_seconds meta", meta.get("flight_seconds"), "1.5")
    c.expect("trigger=SIGTERM" in meta.get("flight_snapshot.1", ""), f"flight_snapshot.1 meta: {meta}")
    j = s.summary(c, trace)
    c.equal("summary's kernel count", sum(k["count"] for k in j["kernels"]), len(kernels))
    fl = j["ranks"][0]["flight"]
    c.expect(fl and fl["seconds"] == KEEP_S and len(fl["snapshots"]) == 2,
             f"summary --json ranks[0].flight: {fl} (want {KEEP_S} s and 2 snapshots)")
    text = s.run([s.cutrace, "summary", trace])
    c.expect(text.returncode == 0 and re.search(r"flight recorder: snapshot 1: the last 1\.\d s before SIGTERM",
                                                text.stdout), f"summary text lacks the snapshot line: {tail(text.stdout, 2000)}")
    exp = s.run([s.cutrace, "export", d, "--format", "chrome", "-o", os.path.join(root, "t.json")])
    c.expect(exp.returncode == 0, f"`cutrace export` exited {exp.returncode}: {tail(exp.stderr)}")


@test
def flight_cutrace_snapshot_pid_writes_once_and_normal_exit_adds_nothing(s, c):
    """`cutrace snapshot PID` (of cutrace record's pid: descendants included) on a flight:1.5 job:
    one flight:snapshot window ending at the request; the job then ends with status 0, which writes
    no record of the run: no kernel after the snapshot. A second job with no trigger and exit 0
    leaves a valid trace (End, the flight_seconds meta) without one kernel."""
    root = s.tmpdir("flight_snapshot")
    d = os.path.join(root, "out")
    p, out, err = start(s, d, KEEP_S, int(2500 * TIME_SCALE) + 2500, "snap")  # runs on 2.5 s past the request
    try:
        c.require(app_pid(p, 30 * TIME_SCALE), f"no child of cutrace record: {tail(read(err))}")
        time.sleep(2.5 * TIME_SCALE)
        t1 = time.monotonic_ns()
        snap = s.run([s.cutrace, "snapshot", str(p.pid)])
        rc = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    c.expect(snap.returncode == 0 and "taken by 1 process" in snap.stdout,
             f"`cutrace snapshot` exited {snap.returncode}: {tail(snap.stdout)} {tail(snap.stderr)}")
    c.require(rc == 0, f"the job exited {rc}: {tail(read(err))}")
    trace = os.path.join(d, traces(d)[0])
    wins = windows(s, c, trace)
    c.require([w[0] for w in wins] == ["flight:snapshot"], f"windows {wins}")
    kernels = kernel_times(s, c, trace)
    check_span(c, "snapshot", wins[0], t1, kernels, late_s=3.0)  # the command starts, then the 100 ms poll
    c.expect(kernels and kernels[-1] <= wins[0][2], f"kernels after the snapshot: the last at "
             f"{(kernels[-1] - wins[0][2]) / 1e9 if kernels else 0:.3f} s past it (a normal exit writes none)")

    d2 = os.path.join(root, "quiet")
    p, out, err = start(s, d2, KEEP_S, 1500, "quiet")
    rc = finish(p)
    c.require(rc == 0, f"the untriggered job exited {rc}: {tail(read(err))}")
    c.require(len(traces(d2)) == 1, f"trace files {traces(d2)}")
    trace = os.path.join(d2, traces(d2)[0])
    c.equal("kernels of an untriggered normal exit", kernel_times_or_none(s, c, trace), [])
    c.equal("windows of an untriggered normal exit", windows(s, c, trace), [])
    j = s.summary(c, trace)
    c.equal("untriggered trace complete", j["ranks"][0]["complete"], True)
    c.equal("flight_seconds meta", trace_meta(s, c, trace).get("flight_seconds"), "1.5")


def kernel_times_or_none(s, c, trace):
    return [f["cpu"][0] for f in dump_fields(s, c, trace, "Kernel") if "cpu" in f]


@test
def flight_nonzero_exit_writes_a_snapshot(s, c):
    """exit_code (one kernel, then exit(3)) under flight:5: the exit status triggers a snapshot,
    flight:exit 3, holding the kernel; the status is passed on."""
    root = s.tmpdir("flight_exit")
    d = os.path.join(root, "out")
    p = s.run([s.cutrace, "record", "-q", "-o", d, "--capture-range", "flight:5", "--", s.prog("exit_code")],
              extra_env={"CUTRACE_SAMPLE_HZ": "0"})
    c.equal("exit status", p.returncode, 3)
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}: {tail(p.stderr)}")
    trace = os.path.join(d, traces(d)[0])
    c.equal("windows", [w[0] for w in windows(s, c, trace)], ["flight:exit 3"])
    j = s.summary(c, trace)
    c.equal("kernels", [(k["name"], k["count"]) for k in j["kernels"]], [("k_before_exit", 1)])


@test
def flight_hang_report_writes_a_snapshot_with_the_stuck_kernel(s, c):
    """hang_app's kernel that never ends under flight:5 --hang-timeout 1: the hang report triggers
    a flight:hang snapshot, in the file while the job still hangs; SIGTERM then adds flight:SIGTERM,
    and `cutrace hang` reads the Hang record and the pending kernel from the flight trace."""
    root = s.tmpdir("flight_hang")
    d = os.path.join(root, "out")
    p, out, err = start(s, d, 5, 0, "hang", app=[s.prog("hang_app"), "kernel", "inf"], hang_timeout="1")
    try:
        c.require(app_pid(p, 30 * TIME_SCALE), f"no child of cutrace record: {tail(read(err))}")
        deadline = time.monotonic() + 15 * TIME_SCALE
        wins = []
        while time.monotonic() < deadline and not wins:
            time.sleep(0.1)
            if traces(d):
                wins = windows(s, c, os.path.join(d, traces(d)[0]))
        c.require([w[0] for w in wins] == ["flight:hang"], f"windows while the job hangs: {wins}; {tail(read(err))}")
        c.expect(p.poll() is None, "the job did not go on after the hang snapshot")
        os.kill(app_pid(p, 1), signal.SIGTERM)
        finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    trace = os.path.join(d, traces(d)[0])
    c.equal("windows", [w[0] for w in windows(s, c, trace)], ["flight:hang", "flight:SIGTERM"])
    h = s.run([s.cutrace, "hang", "--json", d])
    c.require(h.returncode == 0, f"`cutrace hang --json` exited {h.returncode}: {tail(h.stderr)}")
    r = json.loads(h.stdout)["ranks"][0]
    c.equal("hangs in the flight trace", r["hangs"], 1)
    c.expect(any(o["name"] == "k_stuck" for o in r["in_flight"]), f"in flight: {r['in_flight']}")
