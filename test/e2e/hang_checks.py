"""End-to-end tests of the hang watchdog (--hang-timeout, collector/hang.cpp) and `cutrace hang`
(imported by check.py), on jobs of test/e2e/hang_app.cpp whose fake kernels never end."""
import glob
import json
import os
import signal
import subprocess
import time

from harness import TIME_SCALE, env_of, tail, test


def start(s, d, argv, opts, extra_env=None, name="rank0"):
    """`cutrace record -o d opts -- argv` in the background, its stdout and stderr in files of d's parent."""
    out = open(os.path.join(os.path.dirname(d), name + ".out"), "w+")
    err = open(os.path.join(os.path.dirname(d), name + ".err"), "w+")
    env = env_of(s, dict({"CUTRACE_SAMPLE_HZ": "0"}, **(extra_env or {})))
    p = subprocess.Popen([s.cutrace, "record", "-q", "-o", d, *opts, "--", *argv], env=env, stdin=subprocess.DEVNULL,
                         stdout=out, stderr=err, text=True)
    return p, out, err


def read(f):
    f.flush()
    with open(f.name, errors="replace") as g:
        return g.read()


def wait_for(cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    return cond()


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=30 * TIME_SCALE)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def hang_json(s, c, d):
    p = s.run([s.cutrace, "hang", "--json", d])
    c.require(p.returncode == 0, f"`cutrace hang --json` exited {p.returncode}: {tail(p.stderr)}")
    return json.loads(p.stdout)


@test
def hang_report_names_stuck_kernel_stream_launch_site_and_waiters(s, c):
    """A kernel that never ends, waited for by two threads: with --hang-timeout 2 the report (stderr
    and DIR/hang.<host>.rank0.txt) comes within 2 + 1 s of the launch and names the kernel, its
    stream, the launch's call site and both blocked threads with their NVTX ranges; the job goes on
    until stopped, and its trace keeps the Hang record and the pending kernel."""
    root = s.tmpdir("hang_kernel")
    d = os.path.join(root, "out")
    p, out, err = start(s, d, [s.prog("hang_app"), "kernel", "inf"], ["--hang-timeout", "2", "--backtrace", "all"])
    try:
        c.require(wait_for(lambda: "hang_app: launched" in read(out), 30 * TIME_SCALE),
                  f"hang_app never launched: {tail(read(out))} {tail(read(err))}")
        launched = time.monotonic()
        reports = lambda: [f for f in glob.glob(os.path.join(d, "hang.*.rank0.txt")) if "HANG" in open(f).read()]
        found = wait_for(reports, 10 * TIME_SCALE)
        took = time.monotonic() - launched
        c.require(found, f"no hang report in {d} 10 s after the launch: {os.listdir(d)}; stderr {tail(read(err))}")
        c.expect(took <= 3.0 * TIME_SCALE, f"the hang report came {took:.2f} s after the launch, more than 2 + 1 s")
        c.expect(took >= 1.9, f"the hang report came {took:.2f} s after the launch, before the 2 s timeout")
        time.sleep(0.3)
        text = open(found[0]).read()
        c.expect(p.poll() is None, "the job did not go on after the hang report")
        for want in ("kernel k_stuck", "launch_stuck_kernel", "cuStreamSynchronize", "in ranges: train_step",
                     "in ranges: wait_for_result", "--hang-timeout 2.0 s"):
            c.expect(want in text, f"hang report lacks {want!r}: {tail(text, 1500)}")
        c.expect("stream 1 (device 0): 1 op; the first has not completed" in text,
                 f"hang report does not name stream 1 with the one stuck op: {tail(text, 1500)}")
        c.expect(text.count("cuStreamSynchronize on stream 1") == 2,
                 f"hang report does not list the two threads blocked on stream 1: {tail(text, 1500)}")
        c.expect("k_warm" not in text, f"hang report lists the completed k_warm: {tail(text, 1500)}")
        c.expect("HANG #1" in read(err), f"no hang report on stderr: {tail(read(err))}")
        c.expect(text.count("HANG #") == 1, f"more than one report for one hang: {tail(text, 1500)}")
    finally:
        stop([p])
    j = hang_json(s, c, d)
    c.require(len(j["ranks"]) == 1, f"`cutrace hang` ranks: {j['ranks']}")
    r = j["ranks"][0]
    c.equal("hangs in the trace", (r["hangs"], r["hangs_over"]), (1, 0))
    stuck = [o for o in r["in_flight"] if o["name"] == "k_stuck"]
    c.require(len(stuck) == 1, f"in flight after SIGTERM: {r['in_flight']}")
    c.expect(any("launch_stuck_kernel" in f for f in stuck[0]["stack"]), f"k_stuck's stack: {stuck[0]['stack']}")
    c.equal("threads blocked at SIGTERM", sorted(b["api"] for b in r["blocked"]), ["cuStreamSynchronize"] * 2)
    c.equal("verdict", j["verdict"], "no rank waits in a collective")


@test
def hang_that_completes_later_is_noted_and_watchdog_off_reports_nothing(s, c):
    """A kernel of 3.5 s with --hang-timeout 1: one report, then a note on stderr and in the report
    file that the work completed, a HangEnd in the trace, and the job ends normally. The same job
    with --hang-timeout 0 writes no report."""
    root = s.tmpdir("hang_over")
    for timeout in ("1", "0"):
        d = os.path.join(root, "out" + timeout)
        p, out, err = start(s, d, [s.prog("hang_app"), "kernel", "3500000000"], ["--hang-timeout", timeout],
                            name="t" + timeout)
        try:
            rc = p.wait(timeout=60 * TIME_SCALE)
        finally:
            stop([p])
        c.require(rc == 0, f"--hang-timeout {timeout}: exited {rc}: {tail(read(err))}")
        files = glob.glob(os.path.join(d, "hang.*.txt"))
        if timeout == "0":
            c.equal("hang reports with --hang-timeout 0", files, [])
            c.expect("HANG" not in read(err), f"--hang-timeout 0 printed a report: {tail(read(err))}")
            continue
        c.require(len(files) == 1, f"hang reports: {files}")
        text = open(files[0]).read()
        c.expect(text.count("HANG #1") == 1 and "hang #1 of rank 0" in text and "is over" in text,
                 f"report file: {tail(text, 1500)}")
        c.expect("is over: the reported work completed after" in read(err), f"stderr: {tail(read(err))}")
        j = hang_json(s, c, d)
        r = j["ranks"][0]
        c.equal("hangs, hangs over", (r["hangs"], r["hangs_over"]), (1, 1))
        c.equal("in flight at the end", r["in_flight"], [])


@test
def hang_names_rank_that_never_reached_the_collective(s, c):
    """Two ranks of a fake DDP job; at step 4 rank 1 never launches the all-reduce (it sleeps in
    NVTX range load_batch after k_prefetch) and rank 0's all-reduce never ends. `cutrace hang DIR`,
    while the job hangs and after SIGTERM, names collective #5, rank 0 waiting in it, rank 1 as the
    culprit that reached 4, and, after SIGTERM, what rank 1 was doing (its open ranges, last op)."""
    root = s.tmpdir("hang_ddp")
    d = os.path.join(root, "out")
    procs = []
    try:
        for rank in (0, 1):
            env = {"RANK": str(rank), "LOCAL_RANK": "0", "WORLD_SIZE": "2"}
            p, out, err = start(s, d, [s.prog("hang_app"), "ddp", "8", "4"], ["--hang-timeout", "2"], env,
                                name=f"rank{rank}")
            procs.append((p, out, err))
        for rank, (p, out, err) in enumerate(procs):
            c.require(wait_for(lambda: "hang_app: stuck" in read(out), 30 * TIME_SCALE),
                      f"rank {rank} never got stuck: {tail(read(out))} {tail(read(err))}")
        c.require(wait_for(lambda: glob.glob(os.path.join(d, "hang.*.rank0.txt")), 10 * TIME_SCALE),
                  f"rank 0 wrote no hang report: {os.listdir(d)}")
        time.sleep(1.5)  # rank 1's completed collectives reach its trace within the 1 s flush
        live = hang_json(s, c, d)
        c.equal("live: collective", live["collective"],
                {"seq": 5, "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL"})
        c.equal("live: waiting, culprits", (live["waiting"], live["culprits"]), ([0], [{"rank": 1, "reached": 4}]))
    finally:
        stop([p for p, _, _ in procs])
    j = hang_json(s, c, d)
    c.equal("collective", j["collective"], {"seq": 5, "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL"})
    c.equal("waiting, culprits", (j["waiting"], j["culprits"]), ([0], [{"rank": 1, "reached": 4}]))
    r1 = next(r for r in j["ranks"] if r["rank"] == 1)
    c.equal("rank 1 open ranges", [g["name"] for g in r1["open_ranges"]], ["step_4", "load_batch"])
    c.expect(r1["last_ops"] and r1["last_ops"][0]["name"] == "k_prefetch", f"rank 1 last ops: {r1['last_ops']}")
    r0 = next(r for r in j["ranks"] if r["rank"] == 0)
    c.equal("rank 0 waits in", r0["waiting_in"], {"seq": 5, "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL"})
    c.equal("rank 0 blocked", [b["api"] for b in r0["blocked"]], ["cuStreamSynchronize"])
    p = s.run([s.cutrace, "hang", d])
    c.require(p.returncode == 0, f"`cutrace hang` exited {p.returncode}: {tail(p.stderr)}")
    for want in ("1 rank waits in collective #5 (ncclDevKernel_AllReduce_Sum_f32_RING_LL); rank 1 never reached it",
                 "culprit: rank 1", "load_batch", "last ops: kernel k_prefetch"):
        c.expect(want in p.stdout, f"`cutrace hang` text lacks {want!r}: {tail(p.stdout, 1500)}")


@test
def hang_with_cupti_timing_keeps_a_kernel_whose_record_never_came(s, c):
    """CUPTI timing (the fake CUPTI delivers a buffer once every kernel in it ended): a kernel that
    never ends gets no record and is written without GPU time after 10 s; with --hang-timeout 11
    the report still lists it on its stream, flagged as never reported (with the kernels before it
    whose records are held back with it), and `cutrace hang` after SIGTERM has it in flight."""
    root = s.tmpdir("hang_cupti")
    d = os.path.join(root, "out")
    p, out, err = start(s, d, [s.prog("hang_app"), "kernel", "inf"], ["--hang-timeout", "11", "--gpu-timing", "cupti"],
                        {"CUTRACE_CUPTI": s.fake_cupti})
    try:
        c.require(wait_for(lambda: "hang_app: launched" in read(out), 30 * TIME_SCALE),
                  f"hang_app never launched: {tail(read(out))} {tail(read(err))}")
        found = wait_for(lambda: glob.glob(os.path.join(d, "hang.*.rank0.txt")), 20 * TIME_SCALE)
        c.require(found, f"no hang report 20 s after the launch: {os.listdir(d)}; stderr {tail(read(err))}")
        time.sleep(0.3)
        text = open(found[0]).read()
        stuck = [ln for ln in text.splitlines() if "kernel k_stuck:" in ln]
        c.expect(len(stuck) == 1 and "its CUPTI record never came" in stuck[0],
                 f"the report does not list k_stuck as never reported: {tail(text, 1500)}")
        c.expect("stream 1 (device 0):" in text, f"the report does not name stream 1: {tail(text, 1500)}")
    finally:
        stop([p])
    r = hang_json(s, c, d)["ranks"][0]
    c.expect("k_stuck" in [o["name"] for o in r["in_flight"]], f"in flight after SIGTERM: {r['in_flight']}")
