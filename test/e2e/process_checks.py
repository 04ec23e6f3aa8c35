"""End-to-end tests of the profiled process: its exit status and output unchanged, child
processes (fork, vfork, exec, sh -c) each with its own file, launcher ranks, and the faults
(test/e2e/fault_app.cpp): SIGKILL, every exit path, threads ending mid-run, a file size limit, a
full disk, a trace name that exists already. docs/RELIABILITY.md names the promises these guard."""
import json
import os
import re
import signal
import socket
import subprocess
import time

from harness import (ROUTES, TIME_SCALE, by_name, check_counts, dump_fields, fault_popen, fault_run, one_trace,
                     preload_env, tail, test, trace_meta, traces)


@test
def app_exit_code_and_output_unchanged(s, c):
    for prog, status in (("copies", 0), ("exit_code", 3)):
        plain = s.run([s.prog(prog)])
        c.equal(f"{prog} exit status without cutrace", plain.returncode, status)
        d = s.tmpdir(prog)
        traced = s.run([s.cutrace, "record", "-o", d, "--", s.prog(prog)])
        c.equal(f"{prog} exit status under cutrace record", traced.returncode, plain.returncode)
        c.expect(plain.stdout != "", f"{prog} printed nothing")
        c.equal(f"{prog} stdout under cutrace record", traced.stdout, plain.stdout)
        preloaded = s.run([s.prog(prog)], {"LD_PRELOAD": s.shim, "CUTRACE_OUTPUT": s.tmpdir(prog)})
        c.equal(f"{prog} exit status with LD_PRELOAD", preloaded.returncode, plain.returncode)
        c.equal(f"{prog} stdout with LD_PRELOAD", preloaded.stdout, plain.stdout)
        if prog == "exit_code" and c.equal("exit_code trace files", len(traces(d)), 1):
            j = s.summary(c, d)  # exit() without cleanup still writes the whole trace
            c.equal("exit_code kernels", [(k["name"], k["count"]) for k in j["kernels"]], [("k_before_exit", 1)])
            c.equal("exit_code trace complete", j["ranks"][0]["complete"], True)
            c.equal("exit_code exit status in the trace", j["ranks"][0]["exit_status"], 3)
            text = s.run([s.cutrace, "summary", d]).stdout
            c.expect("complete, exit status 3" in text, f"summary text does not say 'exit status 3': {tail(text)}")
        if prog == "copies" and c.equal("copies trace files", len(traces(d)), 1):
            c.equal("copies exit status in the trace", s.summary(c, d)["ranks"][0]["exit_status"], 0)


@test
def vfork_exec_child_leaves_parent_recording(s, c):
    """A vfork() child that execs (Python's subprocess does, so torch.compile's compile workers do)
    runs on the parent's memory: its exec, failed or not, must not shut down the parent's collector
    (if it does, a failed exec restarts it and a new file `.cutrace.1` gets the rest without CUPTI:
    a torch.compile job loses every kernel after its first compile worker starts). One trace file,
    with all 10 kernels, complete."""
    d = s.tmpdir("spawn")
    p = s.record(c, d, [s.prog("spawn_app")])
    c.equal("stdout", p.stdout, "spawn_app: OK\n")
    c.equal("trace files", traces(d), [t for t in traces(d) if re.fullmatch(r".*\.pid\d+\.cutrace", t)])
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    j = s.summary(c, d)
    c.equal("kernels", {k["name"]: k["count"] for k in j["kernels"]}, {"k_before": 5, "k_after": 5})
    c.equal("complete", j["ranks"][0]["complete"], True)
    c.equal("files in the directory", sorted(os.listdir(d)), traces(d))


@test
def no_cuda_process_writes_nothing(s, c):
    d = os.path.join(s.tmpdir("nocuda"), "out")
    p = s.run([s.cutrace, "record", "-o", d, "--", "sh", "-c", "echo hi; ls / >/dev/null"])
    c.equal("exit status", p.returncode, 0)
    c.equal("stdout", p.stdout, "hi\n")
    c.equal("trace files", traces(d), [])
    c.expect("0 trace files" in p.stderr, f"stderr does not say '0 trace files': {tail(p.stderr)}")


@test
def child_processes_each_get_a_file(s, c):
    d = s.tmpdir("children")
    p = s.record(c, d, ["sh", "-c", f"{s.prog('routes')} && {s.prog('copies')}"])
    c.equal("stdout", p.stdout, "routes: OK\ncopies: OK\n")
    c.require(len(traces(d)) == 2, f"trace files {traces(d)}, expected 2")
    c.expect("2 trace files" in p.stderr, f"stderr does not say '2 trace files': {tail(p.stderr)}")
    j = s.summary(c, d)
    pids = [r["pid"] for r in j["ranks"]]
    c.equal("ranks", len(pids), 2)
    c.expect(len(set(pids)) == 2 and 0 not in pids, f"pids {pids} are not two distinct pids")
    for r in j["ranks"]:
        c.expect(f".pid{r['pid']}." in os.path.basename(r["file"]), f"pid {r['pid']} not in file name {r['file']}")
        c.equal(f"{os.path.basename(r['file'])} complete", r["complete"], True)
    c.equal("memcpy HtoD count (copies)", j["memcpy"]["HtoD"]["count"], 6)
    c.equal("CUDA graph #1 count (routes)", by_name(j).get("CUDA graph #1", {}).get("count"), 4)


@test
def unwritable_output_dir_is_a_clear_error(s, c):
    bad = "/proc/nonexistent/x"
    p = s.run([s.cutrace, "record", "-o", bad, "--", "true"])
    c.equal("cutrace record exit status", p.returncode, 2)
    c.expect(bad in p.stderr, f"message does not name {bad}: {tail(p.stderr)}")
    p = s.run([s.prog("routes")], {"LD_PRELOAD": s.shim, "CUTRACE_OUTPUT": "/proc/x"})
    c.equal("routes exit status with CUTRACE_OUTPUT=/proc/x", p.returncode, 0)
    c.equal("routes stdout", p.stdout, "routes: OK\n")
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    c.expect(len(lines) == 1 and "/proc/x" in lines[0] and "warning" in lines[0],
             f"expected one warning naming /proc/x on stderr, got: {tail(p.stderr)}")


@test
def rank_from_launcher_env(s, c):
    d = s.tmpdir("rank")
    s.record(c, d, [s.prog("routes")], extra_env={"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"})
    files = traces(d)
    c.require(len(files) == 1, f"trace files {files}, expected 1")
    c.expect("rank3" in files[0], f"file name {files[0]} does not contain rank3")
    j = s.summary(c, d)
    c.equal("ranks[0].rank", j["ranks"][0]["rank"], 3)


# ---- fault tolerance: the process dies, forks, execs, loses threads, hits limits ------------
# test/e2e/fault_app.cpp runs each scenario; docs/RELIABILITY.md lists what these tests promise.

FAULT_N = 500  # launches before the fault


def end_flags(s, c, trace):
    ends = dump_fields(s, c, trace, "End")
    return ends[0].get("flags") if len(ends) == 1 else None


@test
def sigkill_leaves_a_readable_truncated_trace(s, c):
    """SIGKILL after 2 s of ~900 launches/s (too few to fill a 256 KiB block: only the collector's
    flush at least once a second writes them): the trace reads, is truncated, and holds every
    launch the program had reported 1.25 s before the kill (1 s flush period + scheduling)."""
    d = s.tmpdir("sigkill")
    log = os.path.join(s.tmpdir("sigkill-out"), "stdout")
    with open(log, "w") as out:
        p = fault_popen(s, [s.prog("fault_app"), "loop", "2.5"], d, stdout=out, stderr=subprocess.DEVNULL)
        time.sleep(2.0)
        killed_at = time.monotonic_ns()
        p.kill()
        p.wait(timeout=10 * TIME_SCALE)
    c.equal("exit status", p.returncode, -signal.SIGKILL)
    progress = [(int(t), int(n)) for t, n in re.findall(r"mono_ns=(\d+) launches=(\d+)", open(log).read())]
    c.require(progress, "fault_app loop printed no progress before the kill")
    before = [n for t, n in progress if t <= killed_at - 1_250_000_000]
    c.require(before, f"no progress line 1.25 s before the kill (first at {(killed_at - progress[0][0]) / 1e9:.2f} s "
                      "before it): the program started too slowly to test the flush period")
    path, j, r, launches = one_trace(s, c, d)
    c.equal("complete", r["complete"], False)
    c.equal("pid (from the first block)", r["pid"], p.pid)
    c.expect(max(before) <= launches <= progress[-1][1] + 100,
             f"{launches} launches in the trace: expected >= {max(before)} (reported 1.25 s before the kill) "
             f"and <= {progress[-1][1] + 100} (last reported {progress[-1][1]} + 100)")
    c.notes.append(f"SIGKILL at 2 s: {launches} launches in the trace; the program had reported "
                   f"{max(before)} 1.25 s before the kill and {progress[-1][1]} last")


@test
def exit_paths_flush(s, c):
    """N launches then exit(0), _exit(0), abort(), an uncaught exception, SIGTERM, SIGINT: the
    exit status is the program's own and the trace always reads. exit(0), SIGTERM and SIGINT give
    a complete trace with every launch (atexit / the shim's signal flush). _exit, abort and
    std::terminate run no atexit and the shim does not catch SIGABRT: their trace is truncated and
    holds what the collector had flushed (its first flush is at start and the next one a second
    later, so for this short run: no launch); a trace of them that is complete must hold all N."""
    n = FAULT_N
    cases = [("exit", 0), ("_exit", 0), ("abort", -signal.SIGABRT), ("throw", -signal.SIGABRT)]
    for mode, status in cases:
        d = s.tmpdir("exit" + mode)
        rc, out, err = fault_run(s, [s.prog("fault_app"), mode, str(n)], d)
        c.equal(f"{mode}: exit status", rc, status)
        c.equal(f"{mode}: stdout", out, f"{mode}: launched {n}\n")
        path, j, r, launches = one_trace(s, c, d)
        if mode == "exit":
            c.equal(f"{mode}: complete", r["complete"], True)
            c.equal(f"{mode}: launches", launches, n)
            c.equal(f"{mode}: End flags", end_flags(s, c, path), "clean")
        else:
            c.expect(not r["complete"] or launches == n,
                     f"{mode}: a complete trace with {launches} of {n} launches")
            c.notes.append(f"{mode}: trace readable, complete={r['complete']}, {launches} of {n} launches "
                           "(only what was flushed before the process ended)")
    for sig in (signal.SIGTERM, signal.SIGINT):
        d = s.tmpdir("sig%d" % sig)
        p = fault_popen(s, [s.prog("fault_app"), "wait", str(n)], d)
        try:
            first = [p.stdout.readline(), p.stdout.readline()]
            c.require(first[1] == "ready\n", f"fault_app wait printed {first!r}")
            p.send_signal(sig)
            out, err = p.communicate(timeout=10 * TIME_SCALE)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        name = signal.Signals(sig).name
        c.equal(f"{name}: exit status", p.returncode, -sig)
        c.equal(f"{name}: stderr", err, "")
        path, j, r, launches = one_trace(s, c, d)
        c.equal(f"{name}: complete", r["complete"], True)
        c.equal(f"{name}: launches", launches, n)
        c.equal(f"{name}: End flags", end_flags(s, c, path), "signal")
        c.equal(f"{name}: meta signal", trace_meta(s, c, path).get("signal"), str(int(sig)))


@test
def fork_child_gets_own_file_parent_unharmed(s, c):
    """N launches, fork (no exec); the child sets up its context again, launches M and exits;
    the parent waits, then launches K: two complete files, the parent's N + K, the child's M."""
    n, m, k = 30, 20, 40
    d = s.tmpdir("fork")
    p = s.record(c, d, [s.prog("fault_app"), "fork", str(n), str(m), str(k)])
    child = re.search(r"^child pid=(\d+) launched %d$" % m, p.stdout, re.M)
    parent = re.search(r"^parent pid=(\d+) child_status=0$", p.stdout, re.M)
    c.require(child and parent, f"fault_app fork printed {p.stdout!r}")
    pids = {"parent": int(parent.group(1)), "child": int(child.group(1))}
    c.expect(pids["parent"] != pids["child"], f"pids {pids}")
    c.require(len(traces(d)) == 2, f"trace files {traces(d)}, expected 2")
    for who, want in (("parent", n + k), ("child", m)):
        files = [f for f in traces(d) if f".pid{pids[who]}.cutrace" in f]
        if not c.expect(len(files) == 1, f"{who}: no single file named .pid{pids[who]}. in {traces(d)}"):
            continue
        path = os.path.join(d, files[0])
        j = s.summary(c, path)
        r = j["ranks"][0]
        c.equal(f"{who}: pid", r["pid"], pids[who])
        c.equal(f"{who}: complete", r["complete"], True)
        c.equal(f"{who}: launches", {x["name"]: x["count"] for x in j["kernels"]}, {"k_fault": want})
        c.equal(f"{who}: bad blocks", r["bad_blocks"], 0)
        dump = s.run([s.cutrace, "dump", "--type", "End", path])
        c.expect(" bad_blocks=0 " in dump.stdout and " bad_records=0 " in dump.stdout and " trailing_bytes=0" in dump.stdout,
                 f"{who}: damaged file: {tail(dump.stdout)}")


@test
def exec_gets_own_file(s, c):
    """N launches, then execv(routes) in the same process: two files, the first with the N
    launches of the image before exec, the second (same pid, host.rank0.pid<P>.1.cutrace) with
    routes' launches; a summary of the directory reads both."""
    n = 30
    d = s.tmpdir("exec")
    p = s.record(c, d, [s.prog("fault_app"), "exec", str(n), s.prog("routes")])
    m = re.match(r"exec: pid=(\d+) launched %d\nroutes: OK\n$" % n, p.stdout)
    c.require(m, f"fault_app exec printed {p.stdout!r}")
    pid = int(m.group(1))
    stem = f"{socket.gethostname().replace('/', '_').replace(' ', '_')}.rank0.pid{pid}"
    base, second = stem + ".cutrace", stem + ".1.cutrace"
    c.require(sorted(os.listdir(d)) == sorted([base, second]), f"files {sorted(os.listdir(d))}, expected {base} and {second}")
    both = s.summary(c, d)
    c.equal("directory summary: files", len(both["ranks"]), 2)
    c.equal("directory summary: launches", sum(k["count"] for k in both["kernels"]), n + sum(ROUTES.values()))
    after = s.summary(c, os.path.join(d, second))
    c.equal("after exec: pid", after["ranks"][0]["pid"], pid)
    c.equal("after exec: complete", after["ranks"][0]["complete"], True)
    check_counts(c, by_name(after), ROUTES)
    before = s.summary(c, os.path.join(d, base))  # readable in any case
    got = ({x["name"]: x["count"] for x in before["kernels"]}, before["ranks"][0]["pid"])
    # The shim shuts its collector down before the real exec (shim/wrap_exec.cpp).
    c.expect(got == ({"k_fault": n}, pid),
             f"the trace of the image before exec holds (launches, pid) {got}, expected ({{'k_fault': {n}}}, {pid})")


@test
def thread_exit_mid_run_loses_nothing(s, c):
    """8 threads: 4 launch 500 kernels and exit without synchronising, the other 4 launch 500,
    then 1000 more after those exited: every launch is in the trace, per thread."""
    d = s.tmpdir("threadexit")
    p = s.record(c, d, [s.prog("fault_app"), "threads", "8", "500"])
    c.equal("stdout", p.stdout, "threads: launches=8000\n")
    path, j, r, launches = one_trace(s, c, d)
    c.equal("launches", launches, 8000)
    c.equal("dropped_records", j["dropped_records"], 0)
    c.equal("complete", r["complete"], True)
    per_tid = {}
    for k in dump_fields(s, c, path, "Kernel"):
        per_tid[k["tid"]] = per_tid.get(k["tid"], 0) + 1
    c.equal("launches per thread", sorted(per_tid.values()), [500] * 4 + [1500] * 4)


@test
def file_size_limit_is_a_clear_warning(s, c):
    """RLIMIT_FSIZE of 8 KiB (`ulimit -f`), 20000 launches (a ~65 KiB trace): SIGXFSZ does not
    kill the program (the collector thread, the only writer, blocks every signal), its exit status
    and stdout are unchanged, stderr holds exactly one cutrace warning (File too large), and the
    trace, cut at 8 KiB, still reads."""
    import resource
    limit = 8192
    argv = [s.prog("fault_app"), "many", "20000"]
    d0 = s.tmpdir("fsize-free")
    rc0, out0, err0 = fault_run(s, argv, d0)
    c.equal("without a limit: exit status", rc0, 0)
    c.equal("without a limit: stderr", err0, "")
    _, j0, _, full = one_trace(s, c, d0)
    # Every launch is in the trace or counted as dropped (a collector slowed by a sanitizer on a
    # loaded machine can let the ring fill up); never silently lost.
    dropped = j0["dropped_records"]
    c.expect(full <= 20000 and full + dropped >= 20000,
             f"without a limit: {full} launches and {dropped} dropped records, expected 20000 in all")
    if dropped:
        c.notes.append(f"without a limit: {dropped} records dropped (counted), {full} launches kept")
    c.expect(os.path.getsize(os.path.join(d0, traces(d0)[0])) > 4 * limit, "the unlimited trace is too small")
    d = s.tmpdir("fsize")

    def limit_fsize():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    rc, out, err = fault_run(s, argv, d, preexec_fn=limit_fsize)
    c.equal("exit status (not killed by SIGXFSZ)", rc, rc0)
    c.equal("stdout", out, out0)
    lines = [x for x in err.splitlines() if x.strip()]
    c.expect(len(lines) == 1 and "warning" in lines[0] and "File too large" in lines[0] and d in lines[0],
             f"expected one cutrace warning naming the trace and 'File too large', got: {tail(err)}")
    path, j, r, launches = one_trace(s, c, d)
    c.expect(os.path.getsize(path) <= limit, f"trace of {os.path.getsize(path)} bytes > {limit}")
    c.equal("complete", r["complete"], False)
    c.expect(launches < 20000, f"{launches} launches in an 8 KiB trace")
    c.notes.append(f"RLIMIT_FSIZE {limit}: trace of {os.path.getsize(path)} bytes, {launches} of 20000 launches; "
                   f"warning: {lines[0] if lines else ''}")


@test
def disk_full_is_one_warning_and_a_readable_trace(s, c):
    """The disk fills up (ENOSPC) while the trace is written: test/fault_io/disk_full.cpp, preloaded
    ahead of the shim, lets 20,000 bytes reach the trace file, cuts the write that crosses that,
    and fails every later one with ENOSPC. The program's exit status and stdout are those of a run
    without the fault, stderr holds one cutrace warning ("No space left on device"), and the tools
    read the file and say that it is incomplete."""
    limit, n = 20000, 20000  # format 2.0 packs a launch into ~4 bytes: n makes a trace > 2 x limit
    argv = [s.prog("fault_app"), "many", str(n)]
    d0 = s.tmpdir("diskfull-free")
    rc0, out0, err0 = fault_run(s, argv, d0)
    c.equal("without the fault: exit status", rc0, 0)
    _, j0, _, full = one_trace(s, c, d0)
    # Every launch is in the trace or counted as dropped: a collector slowed down by a sanitizer
    # on a loaded machine may drop some. The count is of dropped records of every type (the
    # program's other calls too), so it bounds the lost launches from above.
    dropped0 = j0["dropped_records"]
    c.expect(full <= n and full + dropped0 >= n,
             f"without the fault: {full} launches and {dropped0} dropped records, expected {n} in all")
    c.expect(os.path.getsize(os.path.join(d0, traces(d0)[0])) > 2 * limit, "the trace without the fault is too small")
    d = s.tmpdir("diskfull")
    interposer = os.path.join(s.build, "test", "libdisk_full.so")
    env = dict(s.env, LD_PRELOAD=interposer + ":" + s.shim, CUTRACE_OUTPUT=d, CUTRACE_SAMPLE_HZ="0",
               CUTRACE_TEST_DISK_FULL_AFTER=str(limit))
    p = subprocess.run(argv, env=preload_env(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace", timeout=30 * TIME_SCALE)
    c.equal("exit status", p.returncode, rc0)
    c.equal("stdout", p.stdout, out0)
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    c.expect(len(lines) == 1 and "warning" in lines[0] and "No space left on device" in lines[0]
             and "incomplete" in lines[0] and d in lines[0],
             f"expected one cutrace warning naming the trace, 'incomplete' and ENOSPC, got: {tail(p.stderr)}")
    path, j, r, launches = one_trace(s, c, d)
    c.equal("trace size (the bytes the full disk took)", os.path.getsize(path), limit)
    c.equal("complete", r["complete"], False)
    c.expect(launches < n, f"{launches} launches in a {limit}-byte trace")
    text = s.run([s.cutrace, "summary", path])
    c.equal("cutrace summary exit status", text.returncode, 0)
    c.expect(re.search(r"truncated|incomplete", text.stdout + text.stderr),
             f"`cutrace summary` does not say the trace is incomplete: {tail(text.stdout + text.stderr)}")
    dump = s.run([s.cutrace, "dump", path])
    c.equal("cutrace dump exit status", dump.returncode, 0)
    c.expect(re.search(r"truncated|incomplete", dump.stdout + dump.stderr),
             f"`cutrace dump` does not say the trace is incomplete: {tail(dump.stdout + dump.stderr)}")
    c.notes.append(f"disk full after {limit} bytes: {launches} of {n} launches kept; warning: {lines[0] if lines else ''}")


@test
def existing_file_is_never_overwritten(s, c):
    """The trace name the shim would pick (host.rank0.pid<P>.cutrace) already exists, as a
    regular file or as a symlink to a file elsewhere: neither is written to; the trace goes to
    host.rank0.pid<P>.1.cutrace. (TraceWriter::open itself: test/unit/format_test.cpp.)"""
    host = socket.gethostname().replace("/", "_").replace(" ", "_")
    victim = os.path.join(s.tmpdir("victim"), "precious.txt")
    for kind in ("regular file", "symlink"):
        d = s.tmpdir("existing")
        with open(victim, "w") as f:
            f.write("precious\n")

        def plant(d=d, kind=kind):  # runs in the child before exec: its pid is the program's
            name = os.path.join(d, f"{host}.rank0.pid{os.getpid()}.cutrace")
            if kind == "symlink":
                os.symlink(victim, name)
            else:
                with open(name, "w") as f:
                    f.write("keep me\n")

        rc, out, err = fault_run(s, [s.prog("fault_app"), "exit", "10"], d, preexec_fn=plant)
        c.equal(f"{kind}: exit status", rc, 0)
        names = sorted(os.listdir(d))
        c.require(len(names) == 2 and names[0].endswith(".1.cutrace") and names[1] == names[0][:-len(".1.cutrace")] + ".cutrace",
                  f"{kind}: files {names}")
        names = [names[1], names[0]]  # the planted name, then the trace's
        planted = os.path.join(d, names[0])
        if kind == "symlink":
            c.equal("symlink still points to", os.readlink(planted), victim)
        else:
            c.equal("planted file", open(planted).read(), "keep me\n")
        c.equal(f"{kind}: file outside the directory", open(victim).read(), "precious\n")
        j = s.summary(c, os.path.join(d, names[1]))
        c.equal(f"{kind}: trace {names[1]} launches", sum(k["count"] for k in j["kernels"]), 10)
        c.equal(f"{kind}: trace complete", j["ranks"][0]["complete"], True)


@test
def sigterm_during_blocked_sync_keeps_pending_kernels_and_the_open_sync(s, c):
    """busy_gpu launches 2 kernels of ~11 days (the fake driver's module duration), a copy and a
    memset behind them, then blocks in cuCtxSynchronize; SIGTERM (then SIGINT) 1 s later. The trace
    holds the 4 operations flagged pending_exit without GPU times, and one open Sync of kind context
    that began after the launches and ends at capture_end_ns; summary counts them as pending at
    exit, none in a time statistic; dump says pending; the Chrome export has them with
    args pending=true. Fails when the blocked sync is only a Loss and the operations are plain
    no_gpu_time ones (what an abnormal end gave without the pending-at-exit accounting)."""
    for how in ("SIGTERM", "SIGINT"):
        sig = getattr(signal, how)
        d = s.tmpdir("pending-" + how)
        p = fault_popen(s, [s.prog("busy_gpu"), "1", "1", "2", str(10**15)], d)
        time.sleep(1.0 * TIME_SCALE)
        c.require(p.poll() is None, f"{how}: busy_gpu ended before the signal: {p.returncode}")
        p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=30 * TIME_SCALE)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        c.equal(f"{how}: exit status", p.returncode, -sig)
        c.require(len(traces(d)) == 1, f"{how}: trace files {traces(d)} ({tail(err)})")
        path = os.path.join(d, traces(d)[0])
        kernels = dump_fields(s, c, path, "Kernel")
        c.equal(f"{how}: kernels", len(kernels), 2)
        ops = kernels + dump_fields(s, c, path, "Memcpy") + dump_fields(s, c, path, "Memset")
        for o in ops:
            c.expect("pending_exit" in o["flags"].split("|") and "no_gpu_time" in o["flags"].split("|"),
                     f"{how}: operation flags {o['flags']}, expected pending_exit|no_gpu_time")
            c.equal(f"{how}: pending op's gpu_dur", o["gpu_dur"], "pending")
        c.equal(f"{how}: pending operations", len(ops), 4)
        syncs = dump_fields(s, c, path, "Sync")
        open_syncs = [y for y in syncs if y.get("open") == "pending_at_exit"]
        c.require(len(open_syncs) == 1, f"{how}: open syncs {open_syncs} of {syncs}")
        y = open_syncs[0]
        c.equal(f"{how}: open sync kind", y["kind"], "context")
        meta = trace_meta(s, c, path)
        end_ns = int(meta.get("capture_end_ns", "0"))
        last_launch = max(k["cpu"][1] for k in kernels)
        c.expect(last_launch <= y["cpu"][0] < end_ns, f"{how}: open sync began at {y['cpu'][0]}, launches returned "
                 f"by {last_launch}, capture ended at {end_ns}")
        c.equal(f"{how}: open sync's end", y["cpu"][1], end_ns)
        c.expect(end_ns - y["cpu"][0] > 500000000 / TIME_SCALE, f"{how}: blocked {end_ns - y['cpu'][0]} ns, expected ~1 s")
        c.equal(f"{how}: meta pending_at_exit", meta.get("pending_at_exit"), "4")
        c.equal(f"{how}: meta syncs_open_at_exit", meta.get("syncs_open_at_exit"), "1")
        losses = dump_fields(s, c, path, "Loss")
        c.expect(not any(int(x.get("syncs", 0)) for x in losses), f"{how}: the blocked sync counted as lost: {losses}")

        j = s.summary(c, path)
        c.equal(f"{how}: summary pending_at_exit", j["pending_at_exit"], {"ops": 4, "syncs": 1})
        k = by_name(j)["k_busy"]
        c.equal(f"{how}: k_busy count/untimed/pending/total", (k["count"], k["untimed"], k["pending_at_exit"], k["total_ns"]),
                (2, 2, 2, 0))
        c.equal(f"{how}: context syncs in the sync table", j["syncs"]["context"]["count"], 0)
        text = s.run([s.cutrace, "summary", path]).stdout
        c.expect("Pending at exit: 4 GPU operations" in text and "1 synchronisations blocked" in text,
                 f"{how}: summary text has no pending line: {tail(text, 600)}")

        out = os.path.join(d, "trace.json")
        e = s.run([s.cutrace, "export", path, "--format", "chrome", "-o", out])
        c.require(e.returncode == 0, f"{how}: chrome export exited {e.returncode}: {tail(e.stderr)}")
        with open(out) as f:
            events = json.load(f)["traceEvents"]
        pend = [ev for ev in events if ev.get("args", {}).get("pending") is True]
        c.equal(f"{how}: chrome pending kernels", sorted(ev["name"] for ev in pend if ev.get("cat") == "kernel"),
                ["k_busy", "k_busy"])
        c.expect(any(ev["args"].get("driver api") == "cuCtxSynchronize" and ev.get("ph") == "X" for ev in pend),
                 f"{how}: no pending cuCtxSynchronize event in the chrome export")
        c.notes.append(f"{how}: blocked {(end_ns - y['cpu'][0]) / 1e9:.2f} s in cuCtxSynchronize, 4 ops pending")
