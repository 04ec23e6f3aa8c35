"""End-to-end tests of GPU timing: --gpu-timing auto/cupti/exact/end on the fake CUPTI
(test/fake_cupti/fake_cupti.h), where every GPU time must be the fake GPU's exact span, the
fallback to events, CUPTI attached only while it is needed, and the timing sample (--gpu-sample)."""
import bisect
import collections
import glob
import json
import os
import re
import time

from harness import ROUTES, THREADS_COUNTS, dump_fields, dump_ops, tail, test, trace_meta, traces


@test
def default_timing_falls_back_to_events_quietly(s, c):
    """The default --gpu-timing auto uses CUPTI where it works; where it does not (here: the fake
    driver, whether or not libcupti is installed) it uses end events without a warning, and the
    trace says so. Asking for cupti by name warns once when it falls back."""
    def timing(d):
        f = glob.glob(os.path.join(d, "*.cutrace"))
        c.require(len(f) == 1, f"expected one trace in {d}, found {f}")
        return trace_meta(s, c, f[0]).get("gpu_timing")
    d = s.tmpdir("auto")
    p = s.record(c, d, [s.prog("launch_loop"), "200"])
    c.equal("auto mode's gpu_timing meta on the fake driver", timing(d), "end")
    c.expect("CUPTI" not in p.stderr, f"auto mode warned about CUPTI: {tail(p.stderr)}")
    d = s.tmpdir("cupti")
    p = s.record(c, d, [s.prog("launch_loop"), "200"], ["--gpu-timing", "cupti"])
    c.equal("explicit cupti's gpu_timing meta after the fallback", timing(d), "end")
    c.equal("CUPTI warnings when cupti was asked for", len(re.findall(r"warning: CUPTI", p.stderr)), 1)


# ---- CUPTI timing on the fake CUPTI (test/fake_cupti/fake_cupti.h) ----------------------------
# CUTRACE_CUPTI points cutrace at build/test/fake_cupti/libcupti.so, which reports the fake
# driver's calls and GPU operations as CUPTI does (correlation ids from driver-API callbacks,
# activity records with the virtual GPU's spans, flush flags). FAKE_CUDA_OP_LOG makes the fake
# driver write the span of every operation it runs (fake_cupti_hooks.cpp): the trace's GPU times
# must be exactly those.

LOGGED_TYPE = {"kernel": "Kernel", "graph": "Kernel", "memcpy": "Memcpy", "memset": "Memset"}


def fake_gpu_ops(log):
    """(type, start, end) of every operation the fake GPU ran (FAKE_CUDA_OP_LOG). A graph launch is
    ("Kernel", its span), and each of its nodes ("GraphNode:Kernel" / ":Memcpy" / ":Memset", its
    span): with CUPTI timing the trace holds them as records flagged graph_node."""
    ops = []
    with open(log) as f:
        for line in f:
            k, a, b = line.split()
            t = "GraphNode:" + LOGGED_TYPE[k[len("graph_"):]] if k.startswith("graph_") else LOGGED_TYPE[k]
            ops.append((t, int(a), int(b)))
    return ops


def record_cupti(s, c, name, argv, opts=("--gpu-timing", "cupti"), env=None):
    """Records argv with the fake CUPTI and the fake driver's op log; (trace, meta, log, stderr)."""
    d = s.tmpdir(name)
    log = os.path.join(d, "ops.log")
    p = s.record(c, d, argv, opts, {"CUTRACE_CUPTI": s.fake_cupti, "FAKE_CUDA_OP_LOG": log, **(env or {})})
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    trace = os.path.join(d, traces(d)[0])
    return trace, trace_meta(s, c, trace), log, p.stderr


def check_fake_gpu_spans(s, c, trace, log, what, untimed_want=None):
    """Every Kernel/Memcpy/Memset record's GPU span is one the fake GPU ran, exactly, and every
    operation it ran is in the trace once: the two lists of (type, start, end) are equal, but for
    the operations written without GPU time, whose number per type must be untimed_want (default
    none) and which must be exactly the ones missing from the trace's timed list. Returns the
    number of operations the fake GPU ran, per type."""
    ran = collections.Counter(fake_gpu_ops(log))
    got, untimed = collections.Counter(), collections.Counter()
    for t in ("Kernel", "Memcpy", "Memset"):
        for _, start, end, flags in dump_ops(s, c, trace, t):
            t_node = "GraphNode:" + t if "graph_node" in flags.split("|") else t  # a graph replay's node
            if end == 0:
                untimed[t_node] += 1
            else:
                got[(t_node, start, end)] += 1
    c.equal(f"{what}: operations written without GPU time, by type", dict(untimed), untimed_want or {})
    only_trace, only_fake = got - ran, ran - got
    if only_trace or collections.Counter(t for t, _, _ in only_fake.elements()) != untimed:
        c.errors.append(f"{what}: GPU spans differ from the fake GPU's ({sum(got.values())} timed in the trace, "
                        f"{sum(ran.values())} run): only in the trace {sorted(only_trace)[:3]}, "
                        f"only on the fake GPU {sorted(only_fake)[:3]}")
    return collections.Counter(t for t, _, _ in ran.elements())


def check_cupti_meta(c, meta, what):
    c.equal(f"{what}: gpu_timing", meta.get("gpu_timing"), "cupti")
    for key in ("gpu_times_missing", "cupti_incomplete_records", "cupti_dropped_records"):
        c.equal(f"{what}: meta {key}", meta.get(key), None)


@test
def cupti_gpu_times_are_the_fake_gpus_exact_spans(s, c):
    """--gpu-timing cupti on the fake CUPTI: every kernel (all launch routes, graph replays),
    copy and memset gets the exact span the fake GPU gave it, from one thread or nine."""
    for prog, want in (("routes", {"Kernel": sum(ROUTES.values()), "GraphNode:Kernel": 12}),
                       ("copies", {"Memcpy": 13, "Memset": 5}),
                       ("threads", {"Kernel": sum(THREADS_COUNTS.values())})):
        trace, meta, log, _ = record_cupti(s, c, prog, [s.prog(prog)])
        check_cupti_meta(c, meta, prog)
        c.equal(f"{prog}: operations the fake GPU ran, by type", dict(check_fake_gpu_spans(s, c, trace, log, prog)), want)


@test
def cupti_graph_replays_shown_as_their_operations(s, c):
    """With CUPTI timing, a CUDA graph replay comes as its kernels, copies and memsets (flag
    graph_node), after the launch's record (flag graph_nodes, which keeps the launch call and the
    replay's span): each node has exactly the span the fake GPU ran it in. The summary counts the
    nodes (kernels by name, memsets) and not the replay, and each launch once (API table, launch
    latency); the Chrome and SQLite exports put the nodes under the launch's correlation id. With
    end events every replay is one operation."""
    trace, meta, log, _ = record_cupti(s, c, "graphs", [s.prog("graph_app")])
    check_cupti_meta(c, meta, "graph_app")
    c.equal("graph_app: operations the fake GPU ran, by type", dict(check_fake_gpu_spans(s, c, trace, log, "graph_app")),
            {"Kernel": 5, "GraphNode:Kernel": 11, "GraphNode:Memset": 2, "Memcpy": 1})
    d = os.path.dirname(trace)
    j = s.summary(c, d)
    kernels = {k["name"]: (k["count"], k["mean_ns"]) for k in j["kernels"]}
    c.equal("kernels by name (count, mean)", kernels,
            {"k_first": (6, 10000), "k_second": (3, 30000), "k_mixed": (2, 20000)})
    c.equal("memsets (graph nodes)", (j["memset"]["count"], j["memset"]["bytes"], j["memset"]["untimed"]),
            (2, 2 << 20, 0))
    c.equal("graph_replays", j["graph_replays"], 5)
    c.equal("graph_kernels", j["graph_kernels"], 11)
    apis = {a["name"]: a["count"] for a in j["api"]}
    c.equal("cuGraphLaunch calls", apis.get("cuGraphLaunch"), 5)
    c.expect(not any("Memset" in n for n in apis), f"a graph's memset counted as a call: {apis}")
    c.equal("launch latency samples (launches, not graph nodes)", j["launch_latency"]["count"], 5)
    text = s.run([s.cutrace, "summary", d]).stdout
    c.expect("Kernels: 11 kernels (11 of them in 5 CUDA graph replays)" in text, f"kernels line: {tail(text)}")

    out = os.path.join(d, "chrome")
    p = s.run([s.cutrace, "export", d, "--format", "chrome", "-o", out])
    c.require(p.returncode == 0, f"`cutrace export --format chrome` exited {p.returncode}: {tail(p.stderr)}")
    ev = json.load(open(os.path.join(out, os.listdir(out)[0]), encoding="utf-8"))["traceEvents"]
    ks = [e for e in ev if e.get("cat") in ("kernel", "gpu_memset")]
    c.equal("chrome GPU events by name", dict(collections.Counter(e["name"] for e in ks)),
            {"k_first": 6, "k_second": 3, "k_mixed": 2, "Memset (Device)": 2})
    launches = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaGraphLaunch"}
    c.equal("chrome cudaGraphLaunch host events", len(launches), 5)
    c.expect({e["args"]["correlation"] for e in ks} <= launches, "a node's correlation is no cudaGraphLaunch's")
    db = os.path.join(d, "x.sqlite")
    p = s.run([s.cutrace, "export", d, "--format", "sqlite", "-o", db])
    c.require(p.returncode == 0, f"`cutrace export --format sqlite` exited {p.returncode}: {tail(p.stderr)}")
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    launch_rows = ("SELECT r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds n ON n.id = r.nameId "
                   "WHERE n.value = 'cuGraphLaunch'")
    rows = con.execute("SELECT s.value, count(*), sum(k.correlationId IN (%s)) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                       "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value ORDER BY s.value" % launch_rows).fetchall()
    c.equal("sqlite kernels (name, rows, under a cuGraphLaunch)", rows, [("k_first", 6, 6), ("k_mixed", 2, 2), ("k_second", 3, 3)])
    c.equal("sqlite memsets (rows, under a cuGraphLaunch)",
            con.execute("SELECT count(*), sum(correlationId IN (%s)) FROM CUPTI_ACTIVITY_KIND_MEMSET" % launch_rows).fetchone(),
            (2, 2))
    c.equal("sqlite graph launches", con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()[0], 5)
    con.close()
    p = s.run([s.cutrace, "export", d, "--format", "perfetto", "-o", os.path.join(d, "x.pftrace")])
    c.equal("perfetto export exit status", p.returncode, 0)

    d = s.tmpdir("graphs-end")
    s.record(c, d, [s.prog("graph_app")], ["--gpu-timing", "end"])
    j = s.summary(c, d)
    c.equal("end events: kernels by name", {k["name"]: k["count"] for k in j["kernels"]},
            {"CUDA graph #1": 3, "CUDA graph #2": 2})
    c.equal("end events: graph_kernels", j["graph_kernels"], 0)


@test
def cupti_forced_flush_records_without_timestamps_not_used(s, c):
    """A forced CUPTI flush hands over the records of work still in flight with start = end = 0
    (lost for good). With the GPU kept busy (busy_gpu queues 200 ms per stream per round), the
    collector's periodic flush finds work in flight: it must not be forced, and no operation may
    end up without its GPU time (on an H200 a forced periodic flush lost ~40% of them)."""
    trace, meta, log, _ = record_cupti(s, c, "busy", [s.prog("busy_gpu")])
    check_cupti_meta(c, meta, "busy_gpu")
    c.equal("busy_gpu: operations the fake GPU ran, by type", dict(check_fake_gpu_spans(s, c, trace, log, "busy_gpu")),
            {"Kernel": 60, "Memcpy": 6, "Memset": 6})


@test
def cupti_call_without_correlation_id_counted_not_waited_for(s, c):
    """A traced call CUPTI reports no callback for (FAKE_CUPTI_SILENT_CALLS: here the two async
    memsets) leaves its operation without a correlation id: it is written at once without GPU
    time and counted in gpu_times_missing, not held for 10 s; every other operation keeps its
    exact span."""
    t0 = time.monotonic()
    trace, meta, log, _ = record_cupti(s, c, "silent", [s.prog("copies")],
                                       env={"FAKE_CUPTI_SILENT_CALLS": "cuMemsetD8Async,cuMemsetD32Async"})
    took = time.monotonic() - t0
    c.expect(took < 8, f"recording took {took:.1f} s (an operation waited)")
    c.equal("meta gpu_times_missing", meta.get("gpu_times_missing"), "2")
    check_fake_gpu_spans(s, c, trace, log, "copies", untimed_want={"Memset": 2})


@test
def cupti_dropped_record_overtaken_not_waited_for(s, c):
    """CUPTI drops the records of one kernel (FAKE_CUPTI_DROP_KERNELS=k_dlsym, 6 launches on a
    stream that more launches follow): once a later operation of that stream has its final span,
    the waiting ones are written without GPU time at once (counted in gpu_times_missing; CUPTI's
    own count in cupti_dropped_records), not held for 10 s; every other kernel keeps its span."""
    t0 = time.monotonic()
    trace, meta, log, _ = record_cupti(s, c, "dropped", [s.prog("routes")], env={"FAKE_CUPTI_DROP_KERNELS": "k_dlsym"})
    took = time.monotonic() - t0
    c.expect(took < 8, f"recording took {took:.1f} s (an operation waited)")
    c.equal("meta gpu_times_missing", meta.get("gpu_times_missing"), str(ROUTES["k_dlsym"]))
    c.equal("meta cupti_dropped_records", meta.get("cupti_dropped_records"), str(ROUTES["k_dlsym"]))
    check_fake_gpu_spans(s, c, trace, log, "routes", untimed_want={"Kernel": ROUTES["k_dlsym"]})


# ---- GPU-timing sample (--gpu-sample) -------------------------------------------------------
# paced_launches: one kernel every 200 us on one stream for 1.2 s, a memset after every 10th.
SAMPLE_FRACTION, SAMPLE_PERIOD_MS = 0.25, 40


def gpu_sample_case(s, c, mode, extra_env=None):
    """Records paced_launches with --gpu-timing MODE --gpu-sample 0.25/40: every operation is in the
    trace; those outside the sample windows have no GPU time and are flagged not_sampled (never
    counted as missing); the timed ones come in runs no longer than a window, about 25% of all, and
    carry the fake GPU's exact spans (end mode: the exact end, and the exact start wherever the
    stream was backed up, including the first timed operation of each window)."""
    d = s.tmpdir("sample-" + mode)
    log = os.path.join(d, "ops.log")
    env = {"FAKE_CUDA_OP_LOG": log, **(extra_env or {})}
    if mode == "cupti":
        env["CUTRACE_CUPTI"] = s.fake_cupti
        env["CUTRACE_VERBOSE"] = "1"  # the CUPTI counts below
    # end mode: the GPU backed up (250 us kernels every 200 us), where an inferred start depends on
    # the previous operation's end; CUPTI: the GPU keeps up (50 us kernels), as on a launch-bound
    # job, so that collection can stop soon after each window.
    kernel_ns = "250000" if mode == "end" else "50000"
    p = s.record(c, d, [s.prog("paced_launches"), "1200", kernel_ns, "200"],
                 ["--gpu-timing", mode, "--gpu-sample", f"{SAMPLE_FRACTION}/{SAMPLE_PERIOD_MS}"], env)
    m = re.match(r"paced_launches: (\d+) kernels (\d+) memsets", p.stdout)
    c.require(m, f"paced_launches printed {p.stdout!r}")
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    trace = os.path.join(d, traces(d)[0])
    meta = trace_meta(s, c, trace)
    c.equal(f"{mode}: meta gpu_timing", meta.get("gpu_timing"), mode)
    c.equal(f"{mode}: meta gpu_sample", meta.get("gpu_sample"), str(SAMPLE_FRACTION))
    c.equal(f"{mode}: meta gpu_sample_period_ns", meta.get("gpu_sample_period_ns"), str(SAMPLE_PERIOD_MS * 1000000))
    for key in ("gpu_times_missing", "cupti_incomplete_records", "cupti_dropped_records"):
        c.equal(f"{mode}: meta {key}", meta.get(key), None)
    windows = int(meta.get("gpu_sample_windows", "0"))
    c.timing(1200 / SAMPLE_PERIOD_MS - 3 <= windows <= 2500 / SAMPLE_PERIOD_MS,
             f"{mode}: {windows} sample windows in a 1.2 s run (+ exit) of {SAMPLE_PERIOD_MS} ms periods")

    ops = {t: dump_ops(s, c, trace, t) for t in ("Kernel", "Memset")}
    c.equal(f"{mode}: kernels, memsets in the trace", (len(ops["Kernel"]), len(ops["Memset"])),
            (int(m.group(1)), int(m.group(2))))
    timeline = sorted(o for t in ops for o in ops[t])
    untimed = [o for o in timeline if o[2] == 0]
    wrong = [o for o in untimed if "not_sampled" not in o[3].split("|")]
    c.equal(f"{mode}: untimed operations not flagged not_sampled", len(wrong), 0)
    share = 1 - len(untimed) / len(timeline)
    c.timing(0.12 <= share <= 0.40, f"{mode}: {share:.1%} of the operations timed, sample {SAMPLE_FRACTION:.0%}")
    runs, run = [], []  # runs of consecutive timed operations (CPU order)
    for o in timeline + [(0, 0, 0, "")]:
        if o[2]:
            run.append(o)
        elif run:
            runs.append(run[-1][0] - run[0][0])
            run = []
    c.expect(len(runs) <= windows, f"{mode}: {len(runs)} runs of timed operations in {windows} windows")
    c.timing(len(runs) >= windows * 0.6, f"{mode}: {len(runs)} runs of timed operations in {windows} windows")
    window_ns = SAMPLE_FRACTION * SAMPLE_PERIOD_MS * 1e6
    # Two windows can be back to back (one at the end of its period, the next at the start of its own).
    c.timing(max(runs) <= 2 * window_ns + 10e6, f"{mode}: a run of timed operations lasts {max(runs) / 1e6:.1f} ms, "
             f"windows {window_ns / 1e6:.0f} ms")

    j = s.summary(c, trace)
    c.equal(f"{mode}: summary ranks[0].not_sampled", j["ranks"][0]["not_sampled"], len(untimed))
    c.expect(any("sampled in 25% of the time" in n for n in j["notes"]), f"{mode}: summary notes {j['notes']}")
    untimed_by_type = {t: sum(1 for o in ops[t] if o[2] == 0) for t in ops}
    k = next((x for x in j["kernels"] if x["name"] == "k_paced"), None)
    c.require(k and "est_total_ns" in k, f"{mode}: summary kernels {j['kernels']}")
    if mode == "cupti":  # every launch takes 50 us on the fake GPU, and CUPTI's spans are exact
        c.equal(f"{mode}: summary est_total_ns of k_paced", k["est_total_ns"], 50000 * k["count"])
        check_fake_gpu_spans(s, c, trace, log, mode, untimed_want={t: n for t, n in untimed_by_type.items() if n})
        # CUPTI collects in the windows only, and stops soon after each (once the window's work
        # has its records): it timed few operations beyond those the trace asked for.
        n = re.search(r"CUPTI: (\d+) GPU records, (\d+) spans used", p.stderr)
        c.require(n, f"no CUPTI counts in the verbose log: {tail(p.stderr)}")
        made, used = int(n.group(1)), int(n.group(2))
        c.timing(made <= 2 * used, f"{mode}: CUPTI made {made} records, {used} used: collection stays on "
                 "between windows")
        return
    # end mode: ends as the fake GPU gave them (to within 5 us: events go through the GPU clock's
    # anchors, ~2 us off when an anchor is taken on a loaded machine), and the inferred start too wherever the fake GPU started the operation at the end of
    # the previous one (backed up), which the first timed operation of a window is too.
    ran = sorted((a, b) for t, a, b in fake_gpu_ops(log) if not t.startswith("GraphNode:"))
    ends = [b for _, b in ran]

    def fake(end):  # index of the fake GPU's operation ending nearest `end`, if within 5 us
        i = bisect.bisect_left(ends, end)
        near = min((j for j in (i - 1, i) if 0 <= j < len(ends)), key=lambda j: abs(ends[j] - end))
        return near if abs(ends[near] - end) <= 5000 else None

    timed = [o for o in timeline if o[2]]
    found = [(o, fake(o[2])) for o in timed]
    # Within 5 us is a GPU-clock check (anchors): on a loaded machine an anchor can be a few us
    # off for a while, so 1% may miss it (and any under a sanitizer). An inferred start from a
    # stale previous end (the first operation of a window) is off by the backlog: milliseconds.
    unmatched = sum(i is None for _, i in found)
    c.timing(unmatched <= 0.01 * len(timed), f"{mode}: {unmatched} of {len(timed)} timed operations end more than "
             "5 us from any operation of the fake GPU")
    matched = [(o, i) for o, i in found if i is not None]
    backed = [(o, i) for o, i in matched if i and ran[i][0] == ran[i - 1][1]]
    c.timing(len(backed) >= 0.8 * len(matched), f"{mode}: {len(backed)} of {len(matched)} timed operations "
             "matched to the fake GPU's were backed up")
    off = [(o[1], ran[i][0]) for o, i in backed if abs(o[1] - ran[i][0]) > 5000]
    far = [(a, b) for a, b in off if abs(a - b) > 100000]
    c.timing(not far, f"{mode}: {len(far)} backed-up timed operations whose inferred start is over 100 us off "
             f"the fake GPU's, e.g. (trace, fake) {far[:3]}")
    c.timing(len(off) <= 0.01 * len(backed), f"{mode}: {len(off)} of {len(backed)} backed-up timed operations "
             f"start more than 5 us off the fake GPU's, e.g. (trace, fake) {off[:3]}")


@test
def gpu_sample_end_mode_times_windows_only_exactly(s, c):
    gpu_sample_case(s, c, "end")


@test
def gpu_sample_end_mode_clock_anchor_held_up_after_stamp_not_used(s, c):
    """The collector held up inside cuEventRecord after the GPU stamped a clock anchor (preempted):
    the anchor's host time is late by as much, and so is every GPU time mapped through it (a
    whole window of end-mode times 40 us late). Here the fake driver returns every
    3rd record on an idle stream (the anchors) 40 us after its stamp: such an anchor is taken
    again, and the spans stay as exact as in gpu_sample_end_mode_times_windows_only_exactly."""
    gpu_sample_case(s, c, "end", {"FAKE_CUDA_IDLE_RECORD_STALL_NS": "40000", "FAKE_CUDA_IDLE_RECORD_STALL_EVERY": "3"})


@test
def gpu_sample_cupti_mode_times_windows_only_exactly(s, c):
    gpu_sample_case(s, c, "cupti")


@test
def gpu_sample_cupti_record_never_coming_not_waited_for(s, c):
    """With --gpu-sample, CUPTI drops every kernel's record (FAKE_CUPTI_DROP_KERNELS=k_paced): each
    window's kernels after its last memset have no later CUPTI operation before the next window.
    They are written without GPU time once a CUPTI operation of the next window is reported (the
    look-ahead skips the unsampled operations between), and at exit the collector stops waiting
    once CUPTI has delivered nothing for 3 s: the recording takes at most that longer than the same
    one without drops, not 10 s."""
    argv = [s.prog("paced_launches"), "600", "50000", "200"]
    opts = ["--gpu-timing", "cupti", "--gpu-sample", "0.25/40"]
    t0 = time.monotonic()
    s.record(c, s.tmpdir("sample-kept"), argv, opts, {"CUTRACE_CUPTI": s.fake_cupti})
    t1 = time.monotonic()
    d = s.tmpdir("sample-dropped")
    s.record(c, d, argv, opts, {"CUTRACE_CUPTI": s.fake_cupti, "FAKE_CUPTI_DROP_KERNELS": "k_paced"})
    extra = time.monotonic() - t1 - (t1 - t0)
    c.expect(extra < 6, f"recording with the records dropped took {extra:.1f} s longer than without (an "
             "operation waited 10 s)")
    trace = os.path.join(d, traces(d)[0])
    meta = trace_meta(s, c, trace)
    kernels = dump_ops(s, c, trace, "Kernel")
    c.equal("kernels with a GPU time", sum(1 for k in kernels if k[2]), 0)
    in_windows = sum(1 for k in kernels if "not_sampled" not in k[3].split("|"))
    c.expect(in_windows > 0, "no kernel launched inside a sample window")
    c.equal("meta gpu_times_missing (the kernels launched in windows)", meta.get("gpu_times_missing"), str(in_windows))
    memsets = dump_ops(s, c, trace, "Memset")
    c.equal("memsets in windows without a GPU time",
            sum(1 for m in memsets if not m[2] and "not_sampled" not in m[3].split("|")), 0)


@test
def gpu_sample_cupti_switch_off_mid_call_keeps_threads_timed(s, c):
    """CUPTI gives no callback to a thread that was inside a driver call when the callbacks went
    off, for the rest of the run (the fake CUPTI models it; on the H200, GPT small with --gpu-sample
    0.2, it leaves the autograd thread's operations without GPU times from the first window on).
    Here every call spends 150 us inside the driver (FAKE_CUPTI_CALL_US), so most window ends fall
    inside one: the callbacks must never go off, and every operation launched in a window keeps
    its GPU time."""
    d = s.tmpdir("sample-mid-call")
    argv = [s.prog("paced_launches"), "1200", "50000", "200"]
    s.record(c, d, argv, ["--gpu-timing", "cupti", "--gpu-sample", f"{SAMPLE_FRACTION}/{SAMPLE_PERIOD_MS}"],
             {"CUTRACE_CUPTI": s.fake_cupti, "FAKE_CUPTI_CALL_US": "150"})
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    trace = os.path.join(d, traces(d)[0])
    meta = trace_meta(s, c, trace)
    c.equal("meta gpu_times_missing", meta.get("gpu_times_missing"), None)
    ops = dump_ops(s, c, trace, "Kernel") + dump_ops(s, c, trace, "Memset")
    c.equal("operations in windows without a GPU time",
            sum(1 for o in ops if not o[2] and "not_sampled" not in o[3].split("|")), 0)
    windows = int(meta.get("gpu_sample_windows", "0"))
    c.expect(windows >= 10, f"{windows} sample windows in a 1.2 s run of {SAMPLE_PERIOD_MS} ms periods")
    c.expect(sum(1 for o in ops if o[2]) > 0, "no operation has a GPU time")


def record_with_cupti_report(s, c, name, argv, opts, armed=None):
    """`cutrace record` on the fake CUPTI with its exit report (FAKE_CUPTI_REPORT): (trace dir,
    time of the last driver callback in CLOCK_MONOTONIC ns, callback ids still on at exit). With
    `armed` (a list), appends the calls made while CUPTI was armed and not collecting to it."""
    d = s.tmpdir(name)
    p = s.record(c, d, argv, ["--gpu-timing", "cupti", *opts],
                 {"CUTRACE_CUPTI": s.fake_cupti, "FAKE_CUPTI_REPORT": "1", "CUTRACE_SAMPLE_HZ": "0"})
    m = re.search(r"fake_cupti: last driver callback at (\d+) ns, (\d+) callback ids on at exit", p.stderr)
    n = re.search(r"fake_cupti: \d+ finalizes, (\d+) calls while armed and not collecting", p.stderr)
    c.require(m and n, f"no fake_cupti report: {tail(p.stderr)!r}")
    if armed is not None:
        armed.append(int(n.group(1)))
    return d, int(m.group(1)), int(m.group(2))


@test
def cupti_detached_after_the_last_window(s, c):
    """CUPTI stays set up after a window (its driver callbacks on: switching them off, or detaching
    CUPTI, can strand a thread that is inside a driver call), but after the last window nothing is
    timed again: CUPTI detaches (cuptiFinalize), so the rest of the run pays neither its callbacks
    nor the cost CUPTI leaves on every launch once its activity kinds have been on (about 1 us on
    the H200). Here a 150 ms window cut by --duration (process mode: none can follow) in a 600 ms
    run; the fake CUPTI reports when it delivered its last callback, how many callback ids were on
    at exit and how many calls were made while it was armed and not collecting (without the
    detach: the run's last launch 450 ms after the window, every id, and ~2,250 calls)."""
    paced = [s.prog("paced_launches"), "600", "50000", "200"]
    armed = []
    d, last_ns, ids_on = record_with_cupti_report(s, c, "cupti-last", paced, ["--duration", "0.15"], armed)
    trace = os.path.join(d, traces(d)[0])
    wins = dump_fields(s, c, trace, "Window")
    c.equal("window edges", [(w.get("edge"), w.get("reason")) for w in wins],
            [("begin", "process"), ("end", "duration")])
    c.equal("callback ids on at exit", ids_on, 0)
    after_ms = (last_ns - int(wins[1]["ts"])) / 1e6
    c.expect(after_ms < 100, f"last callback {after_ms:.1f} ms after the window ended (the run went on 450 ms)")
    c.equal("meta gpu_times_missing", trace_meta(s, c, trace).get("gpu_times_missing"), None)
    ops = dump_ops(s, c, trace, "Kernel")
    c.expect(len(ops) > 100 and all(o[2] for o in ops), f"{len(ops)} kernels, untimed: {sum(1 for o in ops if not o[2])}")
    c.expect(armed[0] < 150, f"{armed[0]} calls made while CUPTI was armed and not collecting")
    # The same after NVTX steps 1-2 (no repeat: the last window), with 300 ms of launches after.
    d, last_ns, ids_on = record_with_cupti_report(s, c, "cupti-last-nvtx", [s.prog("nvtx_app"), "300"],
                                                  ["--capture-range", "nvtx:step_*", "--capture-steps", "1-2"])
    trace = os.path.join(d, traces(d)[0])
    wins = dump_fields(s, c, trace, "Window")
    c.equal("NVTX window edges", [w.get("edge") for w in wins], ["begin", "end"])
    c.equal("callback ids on at exit (NVTX)", ids_on, 0)
    after_ms = (last_ns - int(wins[1]["ts"])) / 1e6
    c.expect(after_ms < 100, f"NVTX: last callback {after_ms:.1f} ms after the window ended (the run went on 300 ms)")
    c.equal("kernels of steps 1-2, timed", sum(1 for o in dump_ops(s, c, trace, "Kernel") if o[2]), 6)
    # With a sample (10 ms of each 100 ms), the last window mostly closes while the sample's is
    # shut, collection already off: the callbacks must go then too.
    _, _, ids_on = record_with_cupti_report(s, c, "cupti-last-sampled", paced,
                                            ["--duration", "0.3", "--gpu-sample", "0.1/100"])
    c.equal("callback ids on at exit (sampled)", ids_on, 0)


@test
def cupti_detached_before_the_first_window(s, c):
    """cutrace checks at start-up that CUPTI works by switching its activity kinds on and off;
    once they have been on, every kernel launch costs about 1 us more on the H200 (BENCHMARKS.md)
    until CUPTI detaches. So the check ends in cuptiFinalize and the first window sets CUPTI up
    again. The fake CUPTI counts the calls made while it was armed and not collecting: here 600 ms
    of paced launches (~3,000), the window opening at 450 ms (--delay) and lasting to the end
    (without the finalize: ~2,250 calls)."""
    d = s.tmpdir("cupti-first-window")
    p = s.record(c, d, [s.prog("paced_launches"), "600", "50000", "200"], ["--gpu-timing", "cupti", "--delay", "0.45"],
                 {"CUTRACE_CUPTI": s.fake_cupti, "FAKE_CUPTI_REPORT": "1", "CUTRACE_SAMPLE_HZ": "0"})
    m = re.search(r"fake_cupti: (\d+) finalizes, (\d+) calls while armed and not collecting", p.stderr)
    c.require(m, f"no fake_cupti report: {tail(p.stderr)!r}")
    c.equal("finalizes (the start-up check's)", int(m.group(1)), 1)
    c.expect(int(m.group(2)) < 20, f"{m.group(2)} calls made while CUPTI was armed and not collecting")
    trace = os.path.join(d, traces(d)[0])
    c.equal("window edges", [(w.get("edge"), w.get("reason")) for w in dump_fields(s, c, trace, "Window")],
            [("begin", "delay"), ("end", "exit")])
    ops = dump_ops(s, c, trace, "Kernel")
    c.expect(len(ops) > 100 and all(o[2] for o in ops), f"{len(ops)} kernels, untimed: {sum(1 for o in ops if not o[2])}")


@test
def gpu_sample_bad_value_refused_or_ignored(s, c):
    """`cutrace record --gpu-sample 0` is refused (exit 2, says why); a malformed CUTRACE_GPU_SAMPLE
    under LD_PRELOAD gets one warning and every GPU time is taken."""
    d = s.tmpdir("sample-bad")
    p = s.run([s.cutrace, "record", "-o", d, "--gpu-sample", "0", "--", s.prog("launch_loop"), "20"])
    c.equal("--gpu-sample 0: exit status", p.returncode, 2)
    c.expect("--gpu-sample must be" in p.stderr, f"--gpu-sample 0: stderr {tail(p.stderr)}")
    p = s.record(c, d, [s.prog("launch_loop"), "20"], (), {"CUTRACE_GPU_SAMPLE": "half"})
    c.expect("CUTRACE_GPU_SAMPLE=half not understood" in p.stderr, f"stderr {tail(p.stderr)}")
    trace = os.path.join(d, traces(d)[0])
    c.equal("meta gpu_sample", trace_meta(s, c, trace).get("gpu_sample"), None)
    c.equal("untimed kernels", sum(1 for o in dump_ops(s, c, trace, "Kernel") if o[2] == 0), 0)

@test
def cupti_auto_mode_uses_libcupti_when_it_loads(s, c):
    """The default --gpu-timing auto uses CUPTI when libcupti loads and accepts a subscriber (here
    the fake one, through CUTRACE_CUPTI), quietly; default_timing_falls_back_to_events_quietly
    checks the fallback to end events when it does not."""
    trace, meta, log, err = record_cupti(s, c, "auto", [s.prog("copies")], opts=())
    check_cupti_meta(c, meta, "auto")
    c.expect("CUPTI" not in err, f"auto mode warned about CUPTI: {tail(err)}")
    check_fake_gpu_spans(s, c, trace, log, "auto")


@test
def exact_mode_is_cupti_and_says_when_it_falls_back_to_events(s, c):
    """--gpu-timing exact takes every operation's GPU span from CUPTI (here the fake one: exactly
    the fake GPU's spans). Where CUPTI cannot load it uses start and end events, with one warning
    that says so, and the trace says `events`. It times every operation, so the CLI refuses
    --gpu-sample with it and the environment's CUTRACE_GPU_SAMPLE is ignored with a warning."""
    trace, meta, log, err = record_cupti(s, c, "exact", [s.prog("copies")], opts=("--gpu-timing", "exact"))
    check_cupti_meta(c, meta, "exact")
    c.expect("warning: CUPTI" not in err, f"exact mode with CUPTI warned: {tail(err)}")
    c.equal("exact: operations the fake GPU ran, by type", dict(check_fake_gpu_spans(s, c, trace, log, "exact")),
            {"Memcpy": 13, "Memset": 5})

    d = s.tmpdir("exact_no_cupti")
    p = s.record(c, d, [s.prog("launch_loop"), "200"], ["--gpu-timing", "exact"],
                 {"CUTRACE_CUPTI": os.path.join(d, "no-such-libcupti.so")})
    c.equal("exact without CUPTI: gpu_timing meta", trace_meta(s, c, os.path.join(d, traces(d)[0])).get("gpu_timing"),
            "events")
    warnings = re.findall(r"warning: CUPTI[^\n]*", p.stderr)
    c.equal("exact without CUPTI: warnings", len(warnings), 1)
    c.expect(warnings and "start and end events" in warnings[0], f"the warning does not name the fallback: {warnings}")
    ops = dump_ops(s, c, os.path.join(d, traces(d)[0]), "Kernel")
    c.equal("exact without CUPTI: kernels", len(ops), 2200)  # launch_loop's 2 x 1,000 warm-up launches too
    c.equal("exact without CUPTI: kernels without GPU time", sum(1 for o in ops if o[2] == 0), 0)
    c.equal("exact without CUPTI: kernels with an inferred start", sum(1 for o in ops if "inferred_start" in o[3]), 0)

    d = s.tmpdir("exact_sample")
    p = s.run([s.cutrace, "record", "-o", d, "--gpu-timing", "exact", "--gpu-sample", "0.2", "--",
               s.prog("launch_loop"), "10"])
    c.equal("exact with --gpu-sample: exit status", p.returncode, 2)
    c.expect("does not take --gpu-sample" in p.stderr, f"no reason given: {tail(p.stderr)}")
    c.equal("exact with --gpu-sample: trace files", traces(d) if os.path.isdir(d) else [], [])
    trace, meta, log, err = record_cupti(s, c, "exact_env_sample", [s.prog("copies")], opts=("--gpu-timing", "exact"),
                                         env={"CUTRACE_GPU_SAMPLE": "0.25/40"})
    c.expect("CUTRACE_GPU_SAMPLE ignored" in err, f"no warning about CUTRACE_GPU_SAMPLE: {tail(err)}")
    c.equal("exact with CUTRACE_GPU_SAMPLE: meta gpu_sample", meta.get("gpu_sample"), None)
    check_fake_gpu_spans(s, c, trace, log, "exact, CUTRACE_GPU_SAMPLE set")
