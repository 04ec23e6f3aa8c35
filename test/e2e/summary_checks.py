"""End-to-end tests of what `cutrace summary` counts and times: every launch route, threads
sharing streams, copies, memsets and syncs (exact counts, bytes and GPU means on the fake
driver), and the notes on traces of separate runs in one directory."""
import json
import os
import re

from harness import (MiB, ROUTES, THREADS_COUNTS, TIMING_CHECKED, by_name, check_counts, dump_kernels, tail,
                     test, trace_meta, traces)


SLOW_CALL_NS = 10_000  # a launch call this long was descheduled (normal: ~0.3 us on the fake)


def overlaps(recs):
    """Records that start before the previous one (by end) on their stream ended: the resolver
    double-counted GPU time. {stream: (count, largest overlap ns)}"""
    out, by_stream = {}, {}
    for r in recs:
        if r[4] and r[5] >= r[4]:
            by_stream.setdefault(r[1], []).append((r[5], r[4]))
    for stream, spans in by_stream.items():
        spans.sort()
        worst = [prev_end - start for (prev_end, _), (_, start) in zip(spans, spans[1:]) if start < prev_end - 1000]
        if worst:
            out[stream] = (len(worst), max(worst))
    return out


def check_means(c, kernels, want_ns, tolerance, s=None, trace=None):
    """Per-name mean within `tolerance` of the fake duration.

    With a trace (threads: 9 threads on 2 cores), a summary mean that is off gets a second look,
    because there cutrace cannot know every GPU start: when the launching thread was descheduled
    inside the call, default timing charges the whole call to the kernel and exact timing the
    time between its start event and the launch; when the stream was idle, default timing infers
    the start from the call's return, before the fake driver's 2 us launch latency. The test then
    passes (with a note on stderr) only if (1) no two records of a stream overlap (the resolver
    puts each start at or after the previous end; an overlap double-counts GPU time, a bug), and
    (2) the records whose start is certain (launch call <= 10 us and kernel started after the
    call returned: the stream was busy, so the start is the previous kernel's end) are >= 80% of
    the name's launches, their median is within tolerance and their mean within twice it. (A
    certain start does not make a certain end: a thread descheduled between the launch and its
    end event's record stamps the event late, on the fake as on a GPU, and a few such records
    moved k_ptds's mean of 765 certain records by +3.03% on a loaded machine, the median not.)
    --strict-means turns this off."""
    off = {n: ns for n, ns in want_ns.items()
           if n in kernels and abs(kernels[n]["mean_ns"] - ns) > tolerance * ns}
    if not off:
        return
    if not TIMING_CHECKED:
        for name, ns in off.items():
            c.timing(False, f"{name} mean {kernels[name]['mean_ns']} ns, expected {ns} ns +-{tolerance:.0%}")
        return
    if not trace or s.strict_means:
        for name, ns in off.items():
            k = kernels[name]
            c.errors.append(f"{name} mean {k['mean_ns']} ns, expected {ns} ns +-{tolerance:.0%} "
                            f"(min {k['min_ns']}, max {k['max_ns']}, untimed {k['untimed']})")
        return
    recs = dump_kernels(s, c, trace)
    bad_streams = overlaps(recs)
    for name, ns in off.items():
        k = kernels[name]
        mine = [r for r in recs if r[0] == name]
        sure = [r[5] - r[4] for r in mine if r[3] - r[2] <= SLOW_CALL_NS and r[4] > r[3] and r[5] >= r[4]]
        slow = [r[3] - r[2] for r in mine if r[3] - r[2] > SLOW_CALL_NS]
        mean = sum(sure) // len(sure) if sure else 0
        median = sorted(sure)[len(sure) // 2] if sure else 0
        streams = sorted({r[1] for r in mine})
        ovl = [bad_streams[st] for st in streams if st in bad_streams]
        why = (f"{name} mean {k['mean_ns']} ns, expected {ns} ns +-{tolerance:.0%}; "
               f"{len(slow)} launch call(s) descheduled (longest {max(slow, default=0) / 1e6:.2f} ms); "
               f"records with a certain start: {len(sure)} of {len(mine)}, mean {mean} ns, median {median} ns")
        if ovl:
            why += (f"; {sum(n for n, _ in ovl)} record(s) overlap the previous one on their stream "
                    f"(largest overlap {max(w for _, w in ovl) / 1e6:.3f} ms)")
        ok = (not ovl and len(mine) == k["count"] and len(sure) >= 0.8 * len(mine)
              and abs(median - ns) <= tolerance * ns and abs(mean - ns) <= 2 * tolerance * ns)
        (c.notes if ok else c.errors).append(why)


@test
def launch_routes_all_counted(s, c):
    d = s.tmpdir("routes")
    p = s.record(c, d, [s.prog("routes")])
    c.equal("stdout", p.stdout, "routes: OK\n")
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    j = s.summary(c, d)
    k = by_name(j)
    check_counts(c, k, ROUTES)
    for name in ROUTES:
        if name not in k:
            continue
        fake_ns = 60000 if name == "CUDA graph #1" else 20000  # graph: 3 nodes of 20 us
        c.equal(f"{name} untimed", k[name]["untimed"], 0)
        if k[name]["min_ns"] < fake_ns - 1000:
            # The inferred start is the launch call's return, while the fake GPU starts the
            # kernel inside the call: a record may be short by at most the call's duration
            # (more when the launching thread was descheduled inside it). Shorter than that is wrong.
            trace = os.path.join(d, traces(d)[0])
            short = [r for r in dump_kernels(s, c, trace)
                     if r[0] == name and (r[5] - r[4]) + (r[3] - r[2]) < fake_ns - 1000]
            (c.errors if short and TIMING_CHECKED else c.notes).append(
                f"{name} min {k[name]['min_ns']} ns < {fake_ns - 1000} ns"
                + (f": {len(short)} record(s) short by more than their launch call" if short else
                   ": each such record is short by less than its launch call's duration"))
        c.timing(abs(k[name]["mean_ns"] - fake_ns) <= 0.05 * fake_ns,
                 f"{name} mean {k[name]['mean_ns']} ns, expected {fake_ns} ns +-5%")
    c.equal("api_errors", j["api_errors"], 0)
    c.equal("captured_ops", j["captured_ops"], 0)
THREADS_NS = {"k_thread0": 5000, "k_thread1": 10000, "k_thread2": 20000, "k_thread3": 40000, "k_ptds": 3000}


def threads_case(s, c, opts):
    d = s.tmpdir("threads")
    p = s.record(c, d, [s.prog("threads")], opts)
    c.equal("stdout", p.stdout, "threads: OK\n")
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    j = s.summary(c, d)
    k = by_name(j)
    check_counts(c, k, THREADS_COUNTS)
    c.equal("total launches", sum(x["count"] for x in j["kernels"]), 16800)
    c.equal("dropped_records", j["dropped_records"], 0)
    # No min/max: two threads sharing a stream make single records ambiguous; means are exact.
    check_means(c, k, THREADS_NS, 0.03, s, os.path.join(d, traces(d)[0]))


@test
def threads_shared_streams_counted(s, c):
    threads_case(s, c, [])


@test
def threads_start_and_end_events(s, c):
    threads_case(s, c, ["--gpu-timing", "events"])


@test
def copies_kinds_bytes_and_data(s, c):
    d = s.tmpdir("copies")
    p = s.record(c, d, [s.prog("copies")])  # exit status 0: the program checked its data
    c.equal("stdout", p.stdout, "copies: OK\n")
    j = s.summary(c, d)
    want_copies = {"HtoD": (6, 6 * MiB), "DtoH": (4, 3 * MiB + 16), "DtoD": (2, 2 * MiB),
                   "HtoH": (1, 1 * MiB), "PtoP": (0, 0)}
    c.equal("memcpy kinds", sorted(j["memcpy"]), sorted(want_copies))
    for kind, (n, nbytes) in want_copies.items():
        got = j["memcpy"].get(kind, {})
        c.equal(f"memcpy {kind} count", got.get("count"), n)
        c.equal(f"memcpy {kind} bytes", got.get("bytes"), nbytes)
        c.equal(f"memcpy {kind} untimed", got.get("untimed"), 0)
    c.equal("memset count", j["memset"]["count"], 5)  # D8 x2, D32 x2, D2D8 x1, 1 MiB each
    c.equal("memset bytes", j["memset"]["bytes"], 5 * MiB)
    c.equal("memset untimed", j["memset"]["untimed"], 0)
    want_syncs = {"context": 2, "stream": 3, "event": 1, "stream_wait": 1, "stream_query": 0, "event_query": 0}
    c.equal("sync kinds", sorted(j["syncs"]), sorted(want_syncs))
    for kind, n in want_syncs.items():
        c.equal(f"sync {kind} count", j["syncs"].get(kind, {}).get("count"), n)
    c.equal("kernels", j["kernels"], [])
    c.equal("api_errors", j["api_errors"], 0)


@test
def separate_runs_in_one_directory_are_noted(s, c):
    """Two `cutrace record -o DIR` runs into one directory are not summed up as one job's
    processes without a word, nor two jobs' rank 0 taken for one: each record run gives its
    processes a session id (Meta "session"); the summary (text, JSON, the report's dashboard),
    merge and export note traces of separate runs and launcher ranks that appear twice, and record
    says the directory held earlier traces. Processes of one run stay quiet."""
    loop = s.prog("launch_loop")
    one = s.tmpdir("runs-one")  # one run, two CUDA processes
    p = s.record(c, one, ["sh", "-c", f"{loop} 30 & {loop} 40; wait"])
    c.equal("one run: trace files", len(traces(one)), 2)
    c.equal("one run: summary notes", s.summary(c, one)["notes"], [])
    c.expect("earlier runs" not in p.stderr, f"one run: record's message: {tail(p.stderr)!r}")
    sessions = {trace_meta(s, c, os.path.join(one, f)).get("session") for f in traces(one)}
    c.expect(len(sessions) == 1 and re.fullmatch(r"[0-9a-f]{16}", next(iter(sessions)) or ""),
             f"one run: session metas {sessions}")

    two = s.tmpdir("runs-two")
    s.record(c, two, [loop, "30"])
    p = s.record(c, two, [loop, "40"])
    c.expect("also holds 1 trace file of earlier runs" in p.stderr, f"record's message: {tail(p.stderr)!r}")
    j = s.summary(c, two)
    notes = [n for n in j["notes"] if "traces of 2 separate runs" in n]
    c.expect(len(notes) == 1 and "run 1: 1 trace (pid" in notes[0] and "run 2: 1 trace (pid" in notes[0],
             f"two runs: summary notes {j['notes']}")
    text = s.run([s.cutrace, "summary", two])
    c.expect("Note: traces of 2 separate runs" in text.stdout, f"summary text: {tail(text.stdout, 600)}")
    m = s.run([s.cutrace, "merge", two])
    c.equal("merge exit status", m.returncode, 0)
    c.expect("Note: traces of 2 separate runs" in m.stdout, f"merge: {tail(m.stdout)}")
    mj = s.run([s.cutrace, "merge", "--json", two])
    c.expect(any("separate runs" in n for n in json.loads(mj.stdout).get("mixed_runs", [])), f"merge --json: {tail(mj.stdout)}")
    html = os.path.join(s.tmpdir("runs-report"), "r.html")
    r = s.run([s.cutrace, "report", two, "-o", html])
    c.equal("report exit status", r.returncode, 0)
    with open(html, errors="replace") as f:  # the dashboard shows the summary's notes as warnings
        c.expect("traces of 2 separate runs" in f.read(), "the report's data has no note of the two runs")
    out = os.path.join(s.tmpdir("runs-export"), "t.sqlite")
    e = s.run([s.cutrace, "export", two, "--format", "sqlite", "-o", out])
    c.equal("export exit status", e.returncode, 0)
    c.expect("warning: traces of 2 separate runs" in e.stderr, f"export: {tail(e.stderr)}")

    # Two launcher jobs (torchrun's variables) in one directory: rank 0 twice.
    ranks = s.tmpdir("runs-ranks")
    for _ in range(2):
        s.record(c, ranks, [loop, "30"], extra_env={"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"})
    notes = s.summary(c, ranks)["notes"]
    c.expect(any(n.startswith("2 traces of rank 0 (pid ") for n in notes), f"rank twice: summary notes {notes}")
