"""End-to-end tests of cutrace against hostile files and damaged traces (imported by check.py,
which runs them with the others): FIFOs and symlinks where cutrace opens a file by a name from a
directory or a trace, ids and values at their extremes, names holding terminal escapes, files in
the output directory that are not traces. The crafted traces come from test/craft/craft_trace.cpp.
docs/RELIABILITY.md names the promises these tests guard."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

TESTS = []
SAN_PRELOAD = os.environ.get("CUTRACE_TEST_SAN_PRELOAD", "")
TIME_SCALE = float(os.environ.get("CUTRACE_TEST_TIME_SCALE", "1"))
MiB = 1 << 20


def test(fn):
    TESTS.append(fn)
    return fn


def tail(text, n=300):
    text = " | ".join(line for line in text.strip().splitlines() if line.strip())
    return text if len(text) <= n else "..." + text[-n:]


def env_of(s, extra=None):
    env = dict(s.env)
    env.update(extra or {})
    if SAN_PRELOAD:
        env["LD_PRELOAD"] = SAN_PRELOAD + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    return env


def craft(s, c, path, *mode):
    p = subprocess.run([os.path.join(s.build, "test", "craft_trace"), path, *mode], capture_output=True, text=True)
    c.require(p.returncode == 0, f"craft_trace {' '.join(mode)} exited {p.returncode}: {p.stderr.strip()}")
    return path


class Measured:
    """A finished command: returncode, stdout, stderr (bytes), peak RSS in bytes, wall seconds."""

    def __init__(self, argv, returncode, out, err, rss, secs):
        self.argv, self.returncode, self.out, self.err, self.rss, self.secs = argv, returncode, out, err, rss, secs

    def text(self):
        return (self.out + self.err).decode(errors="replace")


# Runs argv in a fresh, small python3 that forks it and reports its peak RSS (wait4): a child
# forked from this suite would count the suite's own resident memory as its peak (the peak of
# the image before exec is kept). Writes "rss status" to the file argv[2].
MEASURE = r"""
import os, resource, sys
cap, out = int(sys.argv[1]), sys.argv[2]
pid = os.fork()
if pid == 0:
    try:
        if cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        os.execvp(sys.argv[3], sys.argv[3:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(f"{ru.ru_maxrss * 1024} {os.waitstatus_to_exitcode(status)}")
"""


def run_measured(s, argv, timeout=30, cap_memory=True):
    """Runs argv with its own peak RSS; None when it ran past timeout (then killed). Outside a
    sanitizer run its address space is capped at 2 GiB, so that a tool that sizes a table by a
    hostile id fails (bad_alloc) instead of taking the machine's memory."""
    cap = 2 << 30 if cap_memory and not SAN_PRELOAD else 0
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as res:
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, "-c", MEASURE, str(cap), res.name, *argv], env=env_of(s),
                             stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, start_new_session=True)
        try:
            p.wait(timeout=timeout * TIME_SCALE)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return None
        secs = time.monotonic() - t0
        rss, status = (int(x) for x in res.read().split())
        fo.seek(0)
        fe.seek(0)
        return Measured(argv, status, fo.read(), fe.read(), rss, secs)


def tool_commands(s, work):
    """Every subcommand that reads traces, with its output under work/."""
    return [["summary"], ["summary", "--json"], ["dump"], ["merge"], ["merge", "--json"],
            ["report", "-o", os.path.join(work, "r.html")],
            ["export", "-f", "chrome", "-o", os.path.join(work, "x.json")],
            ["export", "-f", "perfetto", "-o", os.path.join(work, "x.pb")],
            ["export", "-f", "sqlite", "-o", os.path.join(work, "x.sqlite")]]


def run_tools(s, c, trace, work, timeout=30, ok=(0,)):
    """Every tool on trace: each must finish within timeout with a status in ok; [(cmd, Measured)]."""
    out = []
    for cmd in tool_commands(s, work):
        sqlite = os.path.join(work, "x.sqlite")
        if os.path.exists(sqlite):
            os.remove(sqlite)
        m = run_measured(s, [s.cutrace, *cmd, trace], timeout)
        what = "cutrace " + " ".join(cmd[:3])
        if not c.expect(m is not None, f"`{what}` did not finish within {timeout} s"):
            continue
        c.expect(m.returncode in ok, f"`{what}` exited {m.returncode}: {tail(m.text())}")
        c.expect(b"runtime error" not in m.err and b"Sanitizer" not in m.err,
                 f"`{what}`: sanitizer report: {tail(m.text())}")
        out.append((cmd, m))
    return out


@test
def control_file_fifo_or_symlink_never_blocks_the_app(s, c):
    """DIR/.cutrace-ctl.<pid>, which `cutrace start|stop PID` writes and the collector polls, is a
    FIFO, or a symlink to one outside DIR (anyone who can write DIR can put one there): the
    collector neither blocks on it nor follows the link; the program ends normally, with every
    launch in a complete trace. `cutrace start PID` does not block on the FIFO either: it says it
    cannot write it. Fails (the program never ends: the collector blocks in fopen and exit waits
    for it) when the control file is opened without O_NONBLOCK/O_NOFOLLOW."""
    for kind in ("fifo", "symlink", "fifo, then cutrace start"):
        d = s.tmpdir("ctl-" + kind.split(",")[0])
        outside = s.tmpdir("ctl-outside")
        env = env_of(s, {"LD_PRELOAD": s.shim, "CUTRACE_OUTPUT": d, "CUTRACE_SAMPLE_HZ": "0"})
        proc = subprocess.Popen([s.prog("window_app"), "--slow"], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
        try:
            ctl = os.path.join(d, f".cutrace-ctl.{proc.pid}")
            if kind != "symlink":
                os.mkfifo(ctl)
            else:
                os.mkfifo(os.path.join(outside, "fifo"))
                os.symlink(os.path.join(outside, "fifo"), ctl)
            if kind.endswith("start"):
                # No reader on the FIFO (the collector does not open it): start cannot write.
                time.sleep(0.3)
                t0 = time.monotonic()
                st = subprocess.run([s.cutrace, "start", str(proc.pid)], env=env_of(s), stdin=subprocess.DEVNULL,
                                    capture_output=True, text=True, errors="replace", timeout=20 * TIME_SCALE)
                c.expect(st.returncode != 0 and "cannot write" in st.stderr,
                         f"`cutrace start` exited {st.returncode} ({tail(st.stderr)}), expected 'cannot write'")
                c.expect(time.monotonic() - t0 < 5 * TIME_SCALE, f"`cutrace start` took {time.monotonic() - t0:.1f} s")
            try:
                out, err = proc.communicate(timeout=20 * TIME_SCALE)
            except subprocess.TimeoutExpired:
                c.require(False, f"{kind}: window_app --slow did not end within {20 * TIME_SCALE:.0f} s "
                                 "(the collector blocked on the control file)")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        c.expect(proc.returncode == 0, f"{kind}: window_app exited {proc.returncode}: {tail(err)}")
        files = [f for f in os.listdir(d) if f.endswith(".cutrace")]
        c.require(len(files) == 1, f"{kind}: trace files {files}, expected 1")
        j = s.summary(c, os.path.join(d, files[0]))
        c.equal(f"{kind}: complete", j["ranks"][0]["complete"], True)
        c.equal(f"{kind}: kernels", sum(k["count"] for k in j["kernels"]), 40)


@test
def fifo_module_path_or_trace_name_tools_finish(s, c):
    """A trace whose call stacks point into a module whose path is a FIFO: every tool finishes
    (summary notes the module as not a regular file and prints its frames unsymbolised); a FIFO
    named like a trace, given on the command line or (as a symlink) in a directory, is a clear
    error or skipped, never waited on. Fails (every tool blocks in open()) when module paths from
    a trace are opened without O_NONBLOCK."""
    work = s.tmpdir("fifo-module")
    fifo = os.path.join(work, "libfake.so")
    os.mkfifo(fifo)
    trace = craft(s, c, os.path.join(work, "module.cutrace"), "module", fifo)
    runs = dict((tuple(cmd), m) for cmd, m in run_tools(s, c, trace, work))
    text = runs.get(("summary",))
    if text:
        c.expect(re.search(r"symbols of .*libfake\.so: cannot open: not a regular file", text.text()),
                 f"summary does not say the module is not a regular file: {tail(text.text(), 600)}")
        c.expect("libfake.so+0x1234" in text.text(), "summary does not print the unsymbolised frame")
    # A FIFO named like a trace: on the command line, a clear error; in a directory, skipped.
    named = os.path.join(work, "named.cutrace")
    os.mkfifo(named)
    m = run_measured(s, [s.cutrace, "summary", named], 20)
    if c.expect(m is not None, "`cutrace summary FIFO` did not finish"):
        c.expect(m.returncode != 0 and b"not a regular file" in m.err and named.encode() in m.err,
                 f"`cutrace summary FIFO` exited {m.returncode}: {tail(m.text())}")
    d = s.tmpdir("fifo-dir")
    os.rename(trace, os.path.join(d, "a.cutrace"))
    os.symlink(fifo, os.path.join(d, "b.cutrace"))
    m = run_measured(s, [s.cutrace, "summary", "--json", d], 20)
    if c.expect(m is not None, "`cutrace summary DIR` with a symlink to a FIFO did not finish"):
        c.equal("summary of DIR: exit status", m.returncode, 0)


def stream_trace_checks(s, c, sid, limit):
    work = s.tmpdir(f"stream-{sid}")
    plain = craft(s, c, os.path.join(work, "plain.cutrace"), "plain")
    trace = craft(s, c, os.path.join(work, "far.cutrace"), "stream", str(sid))
    size = os.path.getsize(trace)
    base = dict((tuple(cmd), m) for cmd, m in run_tools(s, c, plain, work))
    for cmd, m in run_tools(s, c, trace, work):
        b = base.get(tuple(cmd))
        # Under a sanitizer the runtime's own memory comes first: compare with the plain trace.
        allowed = limit if not SAN_PRELOAD or b is None else b.rss + limit
        c.expect(m.rss < allowed, f"stream {sid}: `cutrace {' '.join(cmd[:3])}` peaked at {m.rss / MiB:.0f} MiB "
                                  f"for a {size}-byte trace (limit {allowed / MiB:.0f} MiB)")
        if cmd == ["summary", "--json"] and m.returncode == 0:
            import json
            j = json.loads(m.out)
            c.equal(f"stream {sid}: kernels", sorted((k["name"], k["count"]) for k in j["kernels"]),
                    [("k_alpha", 5), ("k_beta", 5), ("k_far", 5)])
            c.equal(f"stream {sid}: launch latency samples", j["launch_latency"]["count"], 15)
            # the first kernel of each of the 3 streams finds its stream idle
            c.equal(f"stream {sid}: launches on an idle stream", j["launch_latency"]["stream_idle"]["count"], 3)


@test
def stream_id_2_30_correct_output_within_100_mb(s, c):
    """A valid trace (under 1 KB) with kernels on stream id 2^30, and one with 2^24: every tool
    finishes with exit status 0 and peaks under 100 MiB; summary counts the far stream's kernels
    and their launch latencies (its first launch finds the stream idle, as on streams 1 and 2). Fails (2^30: bad_alloc, 8 GiB asked for; 2^24: 144 MiB) with a
    table indexed by stream id (tools/analysis/summary_model.cpp; tools/common/id_table.h maps ids sparsely)."""
    for sid in (1 << 30, 1 << 24):
        stream_trace_checks(s, c, sid, 100 * MiB)


@test
def extreme_ids_and_times_no_crash_bounded_memory(s, c):
    """A valid trace whose every id (stream, device, thread, API, string, module, stack, window) is
    at its largest, whose times sit at both ends of int64 and whose sizes are 2^64-1: every tool
    exits 0, within 100 MiB, and (in the ASan+UBSan suite) with no sanitizer report. Fails
    (summary and report: bad_alloc, a 32 GiB table by stream id) without sparse id tables."""
    work = s.tmpdir("extreme")
    trace = craft(s, c, os.path.join(work, "extreme.cutrace"), "extreme")
    plain = craft(s, c, os.path.join(work, "plain.cutrace"), "plain")
    base = dict((tuple(cmd), m) for cmd, m in run_tools(s, c, plain, work))
    for cmd, m in run_tools(s, c, trace, work):
        b = base.get(tuple(cmd))
        allowed = 100 * MiB if not SAN_PRELOAD or b is None else b.rss + 100 * MiB
        c.expect(m.rss < allowed, f"`cutrace {' '.join(cmd[:3])}` peaked at {m.rss / MiB:.0f} MiB")


# What a terminal acts on: C0 controls but newline (a newline inside a name forges a row; caught
# by the "forged row" check), DEL, C1 controls (UTF-8 U+0080-U+009F).
CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


@test
def hostile_names_escaped_in_every_text_output(s, c):
    """Kernel, NVTX range, mark, domain, thread, device and API names, the host name and the
    command line of a trace (test/craft/craft_trace.cpp `names`) hold a clear-screen, a window
    title and a clipboard write (OSC 52), a carriage return, DEL, C1 CSI and a newline followed by
    a forged table row; so do the names of two files in a directory. No text output of any tool
    (summary, dump, merge, report, export, stdout and stderr) holds a control character or starts
    a line with the forged row; summary shows the escapes as text (\\x1b). Fails (summary, merge
    and the tools' messages printed the names raw) without tools::printable()."""
    work = s.tmpdir("names")
    trace = craft(s, c, os.path.join(work, "names.cutrace"), "names")
    d = s.tmpdir("names-dir")
    evil_file = os.path.join(d, "r\x1b[2Jx\nforged row 888.cutrace")
    with open(trace, "rb") as src, open(evil_file, "wb") as dst:
        dst.write(src.read())
    with open(os.path.join(d, "j\x1b]0;t\x07.cutrace"), "wb") as f:
        f.write(b"junk")
    for target, ok in ((trace, (0,)), (d, (0, 1, 2))):
        for cmd, m in run_tools(s, c, target, work, ok=ok):
            what = f"`cutrace {' '.join(cmd[:3])}`" + (" on a directory" if target == d else "")
            for stream, data in (("stdout", m.out), ("stderr", m.err)):
                if cmd == ["summary", "--json"] or cmd == ["merge", "--json"]:
                    if stream == "stdout":
                        continue  # JSON escapes its own way (checked by the serve tests)
                hit = CONTROL.search(data)
                c.expect(hit is None, f"{what}: a control character in {stream}: "
                                      f"{data[max(0, hit.start() - 30):hit.end() + 10]!r}" if hit else "")
                c.expect(b"\nforged row" not in data, f"{what}: a forged row in {stream}")
    m = run_measured(s, [s.cutrace, "summary", trace])
    c.require(m is not None and m.returncode == 0, "cutrace summary failed")
    text = m.out.decode(errors="replace")
    c.expect(r"k_alpha\x1b[2J\x1b]0;owned\x07" in text, f"summary does not show the escapes as text: {tail(text)}")
    c.expect(r"\x0aforged row 999\x0d\x7f\u009b31m" in text, "summary does not show newline, CR, DEL, C1 as text")


@test
def record_counts_only_real_traces(s, c):
    """`cutrace record` counts the traces of its run only: not a stale control file (.cutrace-ctl.*),
    and not an empty file (what a full disk leaves) or one that is not a trace, which it names with
    the reason. Fails ("4 trace files written", and "also holds 1 trace file of earlier runs" for
    the control file) when every name holding ".cutrace" counts."""
    d = s.tmpdir("record-count")
    with open(os.path.join(d, ".cutrace-ctl.99999"), "w") as f:
        f.write("start")
    script = (f"{s.prog('fault_app')} exit 50 && : > '{d}/empty.rank1.pid1.cutrace' && "
              f"printf 'not a trace at all' > '{d}/junk.rank2.pid2.cutrace' && : > '{d}/.cutrace-ctl.1'")
    p = s.record(c, d, ["sh", "-c", script], extra_env={"CUTRACE_SAMPLE_HZ": "0"})
    err = p.stderr
    c.expect(re.search(rf"cutrace: 1 trace file written to {re.escape(d)}\n", err),
             f"record does not count 1 trace: {tail(err, 600)}")
    c.expect(re.search(r"empty\.rank1\.pid1\.cutrace.*empty", err), f"the empty file is not named as empty: {tail(err, 600)}")
    c.expect(re.search(r"junk\.rank2\.pid2\.cutrace.*not a cutrace trace", err),
             f"the file that is not a trace is not named: {tail(err, 600)}")
    c.expect("earlier runs" not in err, f"the stale control file counts as a trace of an earlier run: {tail(err, 600)}")
