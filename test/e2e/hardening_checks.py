"""End-to-end tests of cutrace against hostile files and damaged traces (imported by check.py,
which runs them with the others): FIFOs and symlinks where cutrace opens a file by a name from a
directory or a trace, ids and values at their extremes, names holding terminal escapes, files in
the output directory that are not traces, traces cut short, files that are not traces at all.
The crafted traces come from test/craft/craft_trace.cpp.
docs/RELIABILITY.md names the promises these tests guard."""
import json
import os
import random
import re
import struct
import subprocess
import time

from harness import MiB, SAN_PRELOAD, TIME_SCALE, env_of, run_measured, tail, test, traces


def craft(s, c, path, *mode):
    p = subprocess.run([os.path.join(s.build, "test", "craft_trace"), path, *mode], capture_output=True, text=True)
    c.require(p.returncode == 0, f"craft_trace {' '.join(mode)} exited {p.returncode}: {p.stderr.strip()}")
    return path


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


def block_offsets(path):
    """(offset, total size) of each block: FileHeader (header_size at byte 12), then
    BlockHeader {magic "CBLK", compressed_size, raw_size, checksum, seq} (24 bytes) + LZ4 bytes."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"CUTRACE\0":
        return []
    (pos,) = struct.unpack_from("<I", data, 12)
    blocks = []
    while pos + 24 <= len(data) and data[pos:pos + 4] == b"CBLK":
        (compressed,) = struct.unpack_from("<I", data, pos + 4)
        blocks.append((pos, 24 + compressed))
        pos += 24 + compressed
    return blocks


@test
def truncated_trace_still_reads(s, c):
    d = s.tmpdir("truncated")
    s.record(c, d, [s.prog("threads")])
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    full = s.summary(c, d)
    src = os.path.join(d, traces(d)[0])
    blocks = block_offsets(src)
    c.require(len(blocks) >= 2, f"{len(blocks)} blocks in the threads trace, need >= 2 to cut the last")
    cut_dir = s.tmpdir("cut")
    dst = os.path.join(cut_dir, "cut.cutrace")
    last_off, last_size = blocks[-1]
    with open(src, "rb") as f:
        data = f.read(last_off + last_size // 2)  # up to the middle of the last block
    with open(dst, "wb") as f:
        f.write(data)
    p = s.run([s.cutrace, "summary", "--json", dst])
    c.require(p.returncode == 0, f"summary of the cut trace exited {p.returncode}: {tail(p.stderr)}")
    j = json.loads(p.stdout)
    r = j["ranks"][0]
    c.equal("cut trace complete", r["complete"], False)
    c.equal("full trace complete", full["ranks"][0]["complete"], True)
    c.equal("cut trace pid (from its first block)", r["pid"], full["ranks"][0]["pid"])
    c.expect(0 < j["records"] < full["records"],
             f"cut trace has {j['records']} records, expected some but fewer than {full['records']}")
    # The lost half block may hold launches or only what the collector wrote last (samples, the
    # End record): when the program outran a slow collector, every launch is in earlier blocks.
    launches = sum(k["count"] for k in j["kernels"])
    c.expect(0 < launches <= 16800, f"cut trace has {launches} launches, expected 1..16800")
    t = s.run([s.cutrace, "summary", dst])
    c.equal("text summary exit status", t.returncode, 0)
    c.expect("truncated" in t.stdout, f"text summary does not say truncated: {tail(t.stdout)}")


@test
def corrupt_or_foreign_file_is_a_clear_error(s, c):
    """Every subcommand that reads traces (dump, summary, merge, export to each format), on files
    that are not a readable trace: a clear error naming the file, exit status 1..127, no crash, no
    hang (the run's timeout), no output file left behind; a newer format version says so."""
    d = s.tmpdir("corrupt")
    rng = random.Random(1234)
    with open(s.cutrace, "rb") as f:
        elf = f.read(64 << 10)
    cases = {"random bytes": bytes(rng.randrange(256) for _ in range(64 << 10)),
             "empty file": b"",
             "text file": b"kernel k 1000\n" * 100,
             "future format version": b"CUTRACE\0" + struct.pack("<HHI", 3, 0, 16) + b"\0" * 64,
             "header cut short": b"CUTRACE\0" + struct.pack("<HH", 1, 0),
             "header size out of range": b"CUTRACE\0" + struct.pack("<HHI", 1, 0, 1 << 30) + b"\0" * 64,
             "ELF executable": elf}
    for what, content in cases.items():
        path = os.path.join(d, what.replace(" ", "_"), "x.cutrace")
        os.makedirs(os.path.dirname(path))
        with open(path, "wb") as f:
            f.write(content)
        out = os.path.join(d, what.replace(" ", "_") + "-out")
        for args in (["summary", "--json", path], ["summary", path], ["dump", path], ["merge", path],
                     ["merge", "--json", path], ["export", path, "-f", "chrome", "-o", out + "-chrome"],
                     ["export", path, "-f", "perfetto", "-o", out + ".pftrace"],
                     ["export", path, "-f", "sqlite", "-o", out + ".sqlite"]):
            p = s.run([s.cutrace, *args])
            what_cmd = f"cutrace {' '.join(a for a in args if a != path)} on {what}"
            c.expect(0 < p.returncode < 128, f"{what_cmd} exited {p.returncode}, expected 1..127")
            c.expect(path in p.stderr, f"{what_cmd}: message does not name the file: {tail(p.stderr)}")
            c.expect(not re.search(r"terminate called|Segmentation|Aborted|exception|Sanitizer", p.stderr),
                     f"{what_cmd} crashed: {tail(p.stderr)}")
            if what == "future format version":
                c.expect("newer" in p.stderr and "3.0" in p.stderr,
                         f"{what_cmd} does not say the file is from a newer version: {tail(p.stderr)}")
        left = [o for o in (out + ".pftrace", out + ".sqlite") if os.path.exists(o)]
        c.expect(not left, f"export on {what} left {left} behind")


def damage_job(s, c, name):
    """DIR with a good trace (craft_trace plain) and the 0-byte file a full disk leaves."""
    d = s.tmpdir(name)
    craft(s, c, os.path.join(d, "node-0.rank0.pid4242.cutrace"), "plain")
    empty = os.path.join(d, "node-0.rank1.pid4343.cutrace")
    open(empty, "w").close()
    return d, empty


@test
def unreadable_rank_skipped_and_named_by_every_tool(s, c):
    """A job of two ranks, one of them the empty file a full disk leaves: every tool reads the
    other rank and names the empty file with the reason, in text and JSON: `summary --json`
    lists it under `unreadable`, `summary` says so, `export` (chrome, perfetto, sqlite) and
    `merge` (text, --json, -o) write the readable rank and say which file was skipped and why
    (exit status 1), `report` writes the page, which names the file, and names it on stderr. Fails (export and merge:
    exit 2 and no output; summary --json: no entry) when one unreadable file refuses the job."""
    d, empty = damage_job(s, c, "unreadable-rank")
    work = s.tmpdir("unreadable-rank-out")
    p = s.run([s.cutrace, "summary", "--json", d])
    c.equal("summary --json exit status (a file did not open)", p.returncode, 1)
    j = json.loads(p.stdout)
    c.equal("summary --json unreadable", j.get("unreadable"), [{"file": empty, "reason": "empty file"}])
    c.equal("summary --json kernels of the readable rank", sum(k["count"] for k in j["kernels"]), 10)
    p = s.run([s.cutrace, "summary", d])
    c.expect(re.search(r"Unreadable, not counted: .*rank1\.pid4343\.cutrace: empty file", p.stdout),
             f"text summary does not name the unreadable file: {tail(p.stdout)}")
    outs = {"chrome": os.path.join(work, "chrome"), "perfetto": os.path.join(work, "x.pftrace"),
            "sqlite": os.path.join(work, "x.sqlite")}
    for fmt, out in outs.items():
        p = s.run([s.cutrace, "export", d, "-f", fmt, "-o", out])
        c.equal(f"export -f {fmt} exit status (one file skipped)", p.returncode, 1)
        c.expect(re.search(rf"skipped {re.escape(empty)}: empty file", p.stderr),
                 f"export -f {fmt} does not name the skipped file and why: {tail(p.stderr)}")
        c.expect(os.path.exists(out), f"export -f {fmt} wrote no {out}")
    c.equal("chrome files written", sorted(os.listdir(outs["chrome"])), ["node-0.rank0.pid4242.json"])
    if os.path.exists(outs["sqlite"]):
        import sqlite3
        db = sqlite3.connect(outs["sqlite"])
        c.equal("sqlite kernels", db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0], 10)
        db.close()
    p = s.run([s.cutrace, "merge", "--json", d])
    c.equal("merge --json exit status (one file left out)", p.returncode, 1)
    m = json.loads(p.stdout) if p.stdout.strip() else {}
    c.equal("merge --json skipped", m.get("skipped"), [{"file": empty, "reason": "empty file"}])
    c.equal("merge --json ranks", len(m.get("ranks", [])), 1)
    merged = os.path.join(work, "job.cutrace")
    p = s.run([s.cutrace, "merge", d, "-o", merged])
    c.equal("merge -o exit status", p.returncode, 1)
    c.expect("Left out (unreadable)" in p.stdout and empty in p.stdout and "empty file" in p.stderr,
             f"merge does not name the file left out: {tail(p.stdout + p.stderr)}")
    if c.expect(os.path.exists(merged), "merge -o wrote nothing"):
        j = s.summary(c, merged)
        c.equal("kernels of the merged file", sum(k["count"] for k in j["kernels"]), 10)
    page = os.path.join(work, "r.html")
    p = s.run([s.cutrace, "report", d, "-o", page])
    c.equal("report exit status", p.returncode, 0)
    with open(page, encoding="utf-8", errors="replace") as f:
        html = f.read()
    c.expect("node-0.rank1.pid4343.cutrace: empty file" in html,
             "the report page does not name the unreadable rank's file and why")
    c.expect("not in the report: " in p.stderr and "node-0.rank1.pid4343.cutrace: empty file" in p.stderr,
             f"report's stderr does not name the unreadable rank: {tail(p.stderr)}")


def block_payload_flip(path, index):
    """Flips a byte inside block `index`'s compressed bytes (its checksum then fails)."""
    off, size = block_offsets(path)[index]
    with open(path, "r+b") as f:
        f.seek(off + 24 + (size - 24) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x55]))


@test
def duplicated_block_read_once_and_said(s, c):
    """A block copied a second time right after itself (same seq, same checksum): every record
    counted once; summary (text and JSON `duplicate_blocks`), dump and export say so. Fails
    (kernels counted twice, nothing said) when blocks are not checked against the seqs read."""
    d = s.tmpdir("dup-block")
    path = craft(s, c, os.path.join(d, "dup.cutrace"), "blocks")
    blocks = block_offsets(path)
    c.require(len(blocks) == 8, f"craft_trace blocks wrote {len(blocks)} blocks, expected 8")
    with open(path, "rb") as f:
        data = f.read()
    off, size = blocks[3]
    with open(path, "wb") as f:
        f.write(data[:off + size] + data[off:off + size] + data[off + size:])
    j = s.summary(c, path)
    c.equal("kernels (each counted once)", sum(k["count"] for k in j["kernels"]), 20)
    c.equal("ranks[0].duplicate_blocks", j["ranks"][0].get("duplicate_blocks"), 1)
    c.equal("ranks[0].bad_blocks", j["ranks"][0]["bad_blocks"], 0)
    p = s.run([s.cutrace, "summary", path])
    c.expect("duplicate blocks skipped 1" in p.stdout, f"text summary does not say: {tail(p.stdout)}")
    p = s.run([s.cutrace, "dump", path])
    c.expect("duplicate_blocks=1" in p.stdout, f"dump does not say: {tail(p.stdout)}")
    p = s.run([s.cutrace, "export", path, "-f", "perfetto", "-o", os.path.join(d, "x.pftrace")])
    c.expect(p.returncode == 0 and "1 duplicated blocks" in p.stderr, f"export: {p.returncode} {tail(p.stderr)}")


@test
def major_version_flipped_to_1_is_a_clear_error(s, c):
    """A 2.x trace whose header's major version byte reads 1: every tool says the version field
    is damaged, naming the file (exit 1..127), instead of reading an empty trace. Fails (summary
    exits 0 with no operations) when 1.x files are not checked for packed blocks."""
    d = s.tmpdir("version-flip")
    path = craft(s, c, os.path.join(d, "flip.cutrace"), "plain")
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(struct.pack("<H", 1))
    for args in (["summary", "--json"], ["summary"], ["dump"], ["merge"],
                 ["export", "-f", "sqlite", "-o", os.path.join(d, "x.sqlite")]):
        p = s.run([s.cutrace, *args, path])
        what = "cutrace " + " ".join(args[:3])
        c.expect(0 < p.returncode < 128, f"{what} exited {p.returncode}")
        c.expect(path in p.stderr and "version field is damaged" in p.stderr,
                 f"{what} does not say the version is damaged: {tail(p.stderr)}")


@test
def lost_string_block_sqlite_exports_the_rest(s, c):
    """The block holding only the String of a kernel name is damaged: the SQLite export still
    writes every kernel (those of the lost name under "(unknown string)", the others by name)
    with a warning; summary and the other exports read the rest too."""
    d = s.tmpdir("lost-string")
    path = craft(s, c, os.path.join(d, "lost.cutrace"), "blocks")
    c.require(len(block_offsets(path)) == 8, "craft_trace blocks: expected 8 blocks")
    block_payload_flip(path, 1)
    j = s.summary(c, path)
    c.equal("bad blocks", j["ranks"][0]["bad_blocks"], 1)
    c.equal("kernels", sum(k["count"] for k in j["kernels"]), 20)
    out = os.path.join(d, "x.sqlite")
    p = s.run([s.cutrace, "export", path, "-f", "sqlite", "-o", out])
    c.equal("sqlite export exit status", p.returncode, 0)
    c.expect("1 damaged" in p.stderr, f"the export does not warn of the damaged block: {tail(p.stderr)}")
    if c.expect(os.path.exists(out), "no database written"):
        import sqlite3
        db = sqlite3.connect(out)
        rows = db.execute("SELECT s.value, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                          "ON s.id = k.demangledName GROUP BY s.value ORDER BY s.value").fetchall()
        db.close()
        c.equal("kernels by name in the database", rows, [("(unknown string)", 10), ("k_kept", 10)])
    for fmt, o in (("chrome", os.path.join(d, "chrome")), ("perfetto", os.path.join(d, "x.pftrace"))):
        p = s.run([s.cutrace, "export", path, "-f", fmt, "-o", o])
        c.equal(f"export -f {fmt} exit status", p.returncode, 0)
