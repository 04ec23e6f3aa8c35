"""End-to-end tests of NVTX as the specification defines it (imported by check.py, which runs them
with the others). test/e2e/nvtx_spec.cpp drives the entry points a tool receives; it runs once
under the oracle injection of test/nvtx_oracle (which keeps exactly what it received, paired per
thread and domain) and once under `cutrace record`, and every range, mark and thread name must
match: name, domain, kind, depth, colour, category, payload, open or closed, and the duration. Also the
ranges, marks and thread names of test/e2e/nvtx_app.cpp through NVTX_INJECTION64_PATH."""
import json
import os
import re
import struct
import subprocess

from harness import TIME_SCALE, dump_fields, dump_kernels, ranges_by_name, tail, test, traces


def unhex(s):
    return bytes.fromhex(s).decode("utf-8", "surrogateescape")


def oracle_run(s, c, prog):
    """The oracle's records of one run of prog: (ranges, marks, thread names, category names,
    CUDA resource names as (kind, handle, name))."""
    d = s.tmpdir("nvtx_oracle")
    log = os.path.join(d, "oracle.jsonl")
    env = {"NVTX_INJECTION64_PATH": os.path.join(s.build, "test", "libnvtx_oracle.so"), "NVTX_ORACLE_LOG": log}
    p = s.run([prog], env)
    c.require(p.returncode == 0 and os.path.exists(log), f"oracle run exited {p.returncode}: {p.stderr[-300:]!r}")
    recs = [json.loads(line) for line in open(log)]
    ranges = [{**r, "name": unhex(r["name"]), "domain": unhex(r["domain"])} for r in recs if r["type"] == "range"]
    marks = [(unhex(r["name"]), unhex(r["domain"]), r["category"], r["color"], r["payload"])
             for r in recs if r["type"] == "mark"]
    threads = sorted(unhex(r["name"]) for r in recs if r["type"] == "thread")
    cats = sorted((unhex(r["domain"]), r["id"], unhex(r["name"])) for r in recs if r["type"] == "category")
    res = sorted((r["kind"], r["handle"], unhex(r["name"])) for r in recs if r["type"] == "resource")
    return ranges, marks, threads, cats, res


def dump_raw_lines(s, c, trace, rec_type):
    """The rec_type lines of `cutrace dump`, bytes that are not UTF-8 kept (surrogateescape)."""
    p = subprocess.run([s.cutrace, "dump", "--type", rec_type, trace], capture_output=True, timeout=120)
    c.require(p.returncode == 0, f"`cutrace dump --type {rec_type}` exited {p.returncode}")
    return [ln for ln in p.stdout.decode("utf-8", "surrogateescape").splitlines() if f" {rec_type} " in ln]


STR = r'#\d+ "((?:[^"\\]|\\.)*)"'
CAT = r'category=(\d+)(?: "((?:[^"\\]|\\.)*)")?'  # the id, and its name when the trace has one
PAYLOAD = r"(?:.*? payload=(\S+))?"  # TYPE:VALUE at the line's end, when the event has a payload


def unquote(q):
    """cutrace dump's quote() reversed: \\xNN is one byte (a control character, or a byte that is
    not UTF-8: then as Python's surrogateescape has it), \\u00NN a C1 control, \\c the character c."""
    if q is None:
        return None

    def one(m):
        if m.group(1):
            b = int(m.group(1), 16)
            return chr(b) if b < 0x80 else chr(0xDC00 + b)
        return chr(int(m.group(2), 16)) if m.group(2) else m.group(3)
    return re.sub(r'\\x([0-9a-f]{2})|\\u([0-9a-f]{4})|\\(.)', one, q)


def cutrace_ranges(s, c, trace):
    pat = re.compile(r"kind=(\w+)( open)? source=\w+ tid=(\d+) end_tid=\d+ depth=(\d+) name=" + STR +
                     r" domain=" + STR + " " + CAT + r" color=(0x[0-9a-f]+) cpu=\[(-?\d+)\.\.(-?\d+)\]" + PAYLOAD)
    out = []
    for ln in dump_raw_lines(s, c, trace, "Range"):
        m = pat.search(ln)
        c.require(m is not None, f"unparsed Range line {ln[:200]!r}")
        out.append({"kind": m.group(1), "open": bool(m.group(2)), "tid": int(m.group(3)), "depth": int(m.group(4)),
                    "name": unquote(m.group(5)), "domain": unquote(m.group(6)), "category": int(m.group(7)),
                    "category_name": unquote(m.group(8)), "color": int(m.group(9), 16),
                    "dur_ns": int(m.group(11)) - int(m.group(10)), "payload": m.group(12) or ""})
    return out


def cutrace_marks(s, c, trace):
    pat = re.compile(r"name=" + STR + r" domain=" + STR + " " + CAT + r" color=(0x[0-9a-f]+)" + PAYLOAD)
    out = []
    for ln in dump_raw_lines(s, c, trace, "Mark"):
        m = pat.search(ln)
        c.require(m is not None, f"unparsed Mark line {ln[:200]!r}")
        out.append((unquote(m.group(1)), unquote(m.group(2)), int(m.group(3)), int(m.group(5), 16), m.group(6) or ""))
    return out


def key(r):
    return (r["kind"], r["domain"], r["name"][:64])


def compare_ranges(c, want, got, cut_at):
    """Every oracle range has its cutrace range with the same attributes and duration (within the
    two runs' scheduling noise); names longer than cut_at bytes may be cut on a character boundary."""
    def norm(r):
        name = r["name"]
        if len(name.encode("utf-8", "surrogateescape")) > cut_at:
            name = name.encode("utf-8", "surrogateescape")[:cut_at].decode("utf-8", "ignore")[:64]
        return {**r, "name": name[:64]}
    want = sorted((norm(r) for r in want), key=key)
    got = sorted((norm(r) for r in got), key=key)
    c.equal("ranges (kind, domain, name)", [key(r) for r in got], [key(r) for r in want])
    for w, g in zip(want, got):
        if key(w) != key(g):
            continue
        what = f"range {w['name'][:40]!r} ({w['domain'] or 'default'})"
        for f in ("depth", "category", "color", "open", "payload"):
            c.equal(f"{what} {f}", g[f], w[f])
        if not w["open"]:
            # Two runs' sleeps: each may overshoot on a loaded machine.
            slack = (0.3 * w["dur_ns"] + 3_000_000) * TIME_SCALE
            c.timing(abs(g["dur_ns"] - w["dur_ns"]) <= slack,
                     f"{what}: {g['dur_ns']} ns under cutrace, {w['dur_ns']} ns under the oracle")


@test
def nvtx_spec_matches_the_oracle(s, c):
    """nvtx_spec under the oracle and under `cutrace record`: the same ranges (A and W entry
    points, 3 domains interleaved 200 deep, push A / push B in another domain / pop A / pop B,
    a pop on an empty domain, the NVTX3 C++ API, a thread without CUDA, NULL/empty/100 KB/invalid
    UTF-8 names, ranges open at exit, payloads of every type), the same marks (with payloads,
    sync-user and resource events among them) and thread names."""
    prog = s.prog("nvtx_spec")
    want, want_marks, want_threads, want_cats, _ = oracle_run(s, c, prog)
    c.require(len(want) > 200, f"the oracle saw {len(want)} ranges")
    d = s.tmpdir("nvtx_spec")
    p = s.record(c, d, [prog])
    c.expect("nvtx_spec: OK" in p.stdout, f"nvtx_spec printed {tail(p.stdout)!r}")
    trace = os.path.join(d, traces(d)[0])
    got = cutrace_ranges(s, c, trace)
    # Payloads of all six types reach the oracle (the comparison below is not vacuous).
    c.require({r["payload"].split(":")[0] for r in want if r["payload"]} == {"u64", "i64", "f64", "u32", "i32", "f32"},
              f"oracle payloads {sorted({r['payload'] for r in want if r['payload']})}")
    compare_ranges(c, want, got, 16384)
    # Category names: every range of a named category shows the name the oracle received.
    names = {(d, i): n for d, i, n in want_cats}
    shown = {(r["domain"], r["category"], r["category_name"]) for r in got if r["category"]}
    c.equal("ranges' category names", shown, {(d, i, names.get((d, i))) for d, i, _ in shown})
    c.expect(len({(d, i) for d, i, _ in shown} & set(names)) >= 4, f"named categories on ranges: {sorted(shown)}")
    # The exports carry category names and colours too.
    for fmt_, ext in (("chrome", "json"), ("perfetto", "pftrace")):
        out = os.path.join(d, "t." + ext)
        p = s.run([s.cutrace, "export", "--format", fmt_, "-o", out, trace])
        c.require(p.returncode == 0, f"{fmt_} export exited {p.returncode}: {p.stderr[-300:]!r}")
        data = open(out, "rb").read()
        for want_bytes in (b"second_cat", b"cat_two_\xe4\xba\x8c", b"#ff112233"):
            c.expect(want_bytes in data, f"{fmt_} export lacks {want_bytes!r}")
    # Sync-user objects and resources arrive as marks "<name>: <event>".
    objs = sorted(m[0] for m in want_marks if m[0].startswith(("queue_lock: ", "staging_buffer: ")))
    c.require(len(objs) == 8, f"the oracle's sync-user and resource marks: {objs}")
    norm = lambda m: (m[0][:64], *m[1:])  # noqa: E731
    c.equal("marks", sorted(map(norm, cutrace_marks(s, c, trace))), sorted(map(norm, want_marks)))
    # The summary keeps a mark's domain.
    marks = s.summary(c, d).get("marks", {})
    for name, n in (("second: second_mark", 1), ("cpp: cpp_mark", 1), ("helper_mark", 1), ("mark_w_\u2713", 1)):
        c.equal(f"summary marks[{name!r}]", marks.get(name), n)
    got_threads = sorted(t.get("name", "") for t in dump_fields(s, c, trace, "Thread") if t.get("name"))
    c.expect(set(want_threads) <= set(got_threads), f"thread names {got_threads}, the oracle's {want_threads}")


# nvtx_spec's payloads: name -> (type, value) as NVTX received them.
PAYLOADS = {"pl_u64": ("u64", 2**64 - 1), "pl_i64": ("i64", -2**63), "pl_f64": ("f64", 0.1),
            "pl_u32": ("u32", 2**32 - 1), "pl_i32": ("i32", -2**31),
            "pl_f32": ("f32", struct.unpack("f", struct.pack("f", 3.14159274))[0]),
            "plm_u64": ("u64", 2**63 + 5), "plm_i64": ("i64", -1), "plm_f64": ("f64", -1.5e-300),
            "plm_u32": ("u32", 7), "plm_i32": ("i32", -7), "plm_f32": ("f32", struct.unpack("f", struct.pack("f", 1e-45))[0]),
            "pl_wide_\u00e9": ("f64", -2.5)}
SQL_COLUMNS = {"u64": "uint64Value", "i64": "int64Value", "f64": "doubleValue", "u32": "uint32Value",
               "i32": "int32Value", "f32": "floatValue"}


@test
def nvtx_payloads_in_exports_and_report(s, c):
    """nvtx_spec's payloads of every type, on ranges and marks: the Chrome export's args (`payload`,
    `payload type`), SQLite's NVTX_EVENTS column of the type (the others NULL), the Perfetto
    export's `payload` annotation, and the report's event details; an unknown type has none."""
    import sqlite3
    d = s.tmpdir("nvtx_payload")
    s.record(c, d, [s.prog("nvtx_spec")])
    trace = os.path.join(d, traces(d)[0])
    out = os.path.join(d, "t.json")
    p = s.run([s.cutrace, "export", "--format", "chrome", "-o", out, trace])
    c.require(p.returncode == 0, f"chrome export exited {p.returncode}: {p.stderr[-300:]!r}")
    ev = json.load(open(out))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    args = {}
    for e in ev:
        if e.get("cat") == "user_annotation" and e.get("ph") in ("X", "b", "i") and e.get("name") in PAYLOADS:
            args.setdefault(e["name"], e.get("args", {}))
        if e.get("name") == "pl_unknown_type" and e.get("ph") == "X":
            c.expect("payload" not in e.get("args", {}), f"pl_unknown_type has a payload: {e}")
    for name, (typ, value) in PAYLOADS.items():
        a = args.get(name, {})
        got = a.get("payload")
        if typ == "f32" and isinstance(got, float):  # 9 digits: the float it reads back as
            got = struct.unpack("f", struct.pack("f", got))[0]
        c.equal(f"chrome {name} payload", (a.get("payload type"), got), (typ, value))
    db = os.path.join(d, "t.sqlite")
    p = s.run([s.cutrace, "export", "--format", "sqlite", "-o", db, trace])
    c.require(p.returncode == 0, f"sqlite export exited {p.returncode}: {p.stderr[-300:]!r}")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "surrogateescape")  # nvtx_spec has invalid UTF-8 names
    try:
        cols = list(SQL_COLUMNS.values())
        rows = {r[0]: r[1:] for r in con.execute(f"SELECT text, {', '.join(cols)} FROM NVTX_EVENTS WHERE text IS NOT NULL")}
    finally:
        con.close()
    for name, (typ, value) in PAYLOADS.items():
        want = tuple((value - 2**64 if value >= 2**63 else value) if col == SQL_COLUMNS[typ] else None for col in cols)
        c.equal(f"sqlite {name} payload columns", rows.get(name), want)
    c.equal("sqlite pl_unknown_type payload columns", rows.get("pl_unknown_type"), (None,) * 6)
    pf = os.path.join(d, "t.pftrace")
    p = s.run([s.cutrace, "export", "--format", "perfetto", "-o", pf, trace])
    c.require(p.returncode == 0, f"perfetto export exited {p.returncode}: {p.stderr[-300:]!r}")
    c.expect(b"payload" in open(pf, "rb").read(), "the Perfetto export has no payload annotation")
    html = os.path.join(d, "r.html")
    p = s.run([s.cutrace, "report", trace, "-o", html])
    c.require(p.returncode == 0, f"`cutrace report` exited {p.returncode}: {tail(p.stderr)}")
    page = open(html, encoding="utf-8").read()
    for detail in ("payload u64:18446744073709551615", "payload f32:3.14159274", "mark  payload i64:-1"):
        c.expect(detail in page, f"the report's event details lack {detail!r}")


@test
def nvtx_cuda_resource_names(s, c):
    """nvtx_spec names two streams, two devices, its context and two events through NVTX's CUDA
    driver and runtime calls (A and W): the trace keeps every name the oracle received (Meta
    nvtx_name/<kind>/<handle>, a stream's handle that of its Stream record), and the Chrome and
    Perfetto exports and the report name each stream "stream N (name)"."""
    prog = s.prog("nvtx_spec")
    want = oracle_run(s, c, prog)[4]
    c.require(len(want) == 7, f"the oracle received {want}")
    d = s.tmpdir("nvtx_resources")
    s.record(c, d, [prog])
    trace = os.path.join(d, traces(d)[0])
    got = []
    for f in dump_fields(s, c, trace, "Meta"):
        key, value = unquote(f.get("key", "")), unquote(f.get("value", ""))
        if key.startswith("nvtx_name/"):
            _, kind, handle = key.split("/", 2)
            got.append((kind, handle, value))
    # Handles differ between the two runs but for devices (ordinals): compare kinds and names.
    c.equal("resource names (kind, name)", sorted((k, n) for k, _, n in got), sorted((k, n) for k, _, n in want))
    c.equal("device names", sorted(r for r in got if r[0] == "device"), sorted(r for r in want if r[0] == "device"))
    sids = {f["handle"]: int(f["stream"]) for f in dump_fields(s, c, trace, "Stream")}
    labels = []
    for kind, handle, name in got:
        if kind == "stream":
            c.expect(handle in sids, f"stream {name!r}: handle {handle} is no Stream record's ({sorted(sids)})")
            labels.append(f"stream {sids.get(handle)} ({name})")
    c.require(len(labels) == 2, f"named streams {labels}")
    out = os.path.join(d, "t.json")
    p = s.run([s.cutrace, "export", "--format", "chrome", "-o", out, trace])
    c.require(p.returncode == 0, f"chrome export exited {p.returncode}: {p.stderr[-300:]!r}")
    ev = json.load(open(out))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    names = {e.get("args", {}).get("name") for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    pf = os.path.join(d, "t.pftrace")
    p = s.run([s.cutrace, "export", "--format", "perfetto", "-o", pf, trace])
    c.require(p.returncode == 0, f"perfetto export exited {p.returncode}: {p.stderr[-300:]!r}")
    pf_bytes = open(pf, "rb").read()
    html = os.path.join(d, "r.html")
    p = s.run([s.cutrace, "report", trace, "-o", html])
    c.require(p.returncode == 0, f"`cutrace report` exited {p.returncode}: {tail(p.stderr)}")
    page = open(html, encoding="utf-8").read()
    for label in labels:
        c.expect(label in names, f"the Chrome export has no track {label!r}: {sorted(n for n in names if n)}")
        c.expect(label.encode() in pf_bytes, f"the Perfetto export has no track {label!r}")
        c.expect(json.dumps(label)[1:-1] in page or label in page, f"the report has no track {label!r}")


@test
def nvtx_open_ranges_flagged_and_out_of_statistics(s, c):
    """nvtx_spec leaves a push and a start open at exit: they end at the trace's end flagged open
    (dump, the Chrome export's args), the summary counts them apart and in no duration statistic,
    and no export has a negative time."""
    d = s.tmpdir("nvtx_open")
    s.record(c, d, [s.prog("nvtx_spec")])
    trace = os.path.join(d, traces(d)[0])
    rs = {r["name"]: r for r in cutrace_ranges(s, c, trace)}
    for n in ("open_at_exit", "started_open_at_exit"):
        r = rs.get(n)
        if c.expect(r is not None, f"{n} missing"):
            c.expect(r["open"], f"{n} not flagged open")
            c.expect(r["dur_ns"] >= 1_000_000, f"{n} does not end at the trace's end: {r['dur_ns']} ns")
    j = s.summary(c, d)
    for n in ("open_at_exit", "started_open_at_exit"):
        r = next((x for x in j["ranges"] if x["name"] == n), {})
        c.equal(f"summary {n} count/open/cpu_total_ns", (r.get("count"), r.get("open"), r.get("cpu_total_ns")), (0, 1, 0))
    out = os.path.join(d, "t.json")
    p = s.run([s.cutrace, "export", "--format", "chrome", "-o", out, trace])
    c.require(p.returncode == 0, f"chrome export exited {p.returncode}: {p.stderr[-300:]!r}")
    ev = json.load(open(out))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    opened = [e for e in ev if e.get("name") in ("open_at_exit", "started_open_at_exit") and e.get("ph") in ("X", "b")]
    c.equal("open ranges in the Chrome export", sorted(e["name"] for e in opened), ["open_at_exit", "started_open_at_exit"])
    c.expect(all(e.get("args", {}).get("open") is True for e in opened), f"open flag missing: {opened}")
    c.expect(all(e.get("ts", 0) >= 0 and e.get("dur", 0) >= 0 for e in ev if "ts" in e), "a negative time in the Chrome export")


@test
def nvtx_ranges_through_injection(s, c):
    """nvtx_app.cpp through NVTX_INJECTION64_PATH: push/pop with GPU projection, nesting, a
    domain range with a registered string, a start/end range ended on another thread, marks,
    thread names (expected values in its header comment)."""
    d = s.tmpdir("nvtx")
    # Start and end events: the projection is checked against the fake GPU's 3 x 20 us, so starts
    # are measured (an inferred start is the launch call's return: late when the test machine is
    # loaded and the thread is descheduled inside the call).
    p = s.record(c, d, [s.prog("nvtx_app")], ["--gpu-timing", "events"])
    c.expect("nvtx_app: OK" in p.stdout, f"nvtx_app printed {tail(p.stdout)!r}")
    j = s.summary(c, d)
    r = ranges_by_name(j)
    for i in range(5):
        st = r.get(f"step_{i}")
        if c.expect(st is not None, f"range step_{i} missing (ranges: {sorted(r)})"):
            c.equal(f"step_{i} count", st["count"], 1)
            c.equal(f"step_{i} gpu_ops", st["gpu_ops"], 3)
            c.timing(st["gpu_mean_ns"] >= 59_000, f"step_{i} GPU projection {st['gpu_mean_ns']} ns, expected >= 3 x 20 us")
    # Each step's projection is exactly the GPU span of the kernels launched inside it (a fixed
    # upper bound would depend on how the loaded test machine spaced the launches).
    trace = os.path.join(d, traces(d)[0])
    kernels = dump_kernels(s, c, trace)
    span = re.compile(r'name=#\d+ "(step_\d)".*? cpu=\[(-?\d+)\.\.(-?\d+)\].*? gpu=\[(-?\d+)\.\.(-?\d+)\]')
    for line in s.run([s.cutrace, "dump", "--type", "Range", trace]).stdout.splitlines():
        m = span.search(line)
        if not m:
            continue
        b, e, gs, ge = (int(m.group(i)) for i in range(2, 6))
        inside = [k for k in kernels if b <= k[2] <= e]
        want = (min(k[4] for k in inside), max(k[5] for k in inside)) if inside else (0, 0)
        c.equal(f"{m.group(1)} GPU projection [start, end]", (gs, ge), want)
    inner = r.get("inner", {})
    c.equal("inner count", inner.get("count"), 5)
    c.timing(19_000 <= inner.get("gpu_mean_ns", 0) <= 25_000, f"inner GPU projection {inner.get('gpu_mean_ns')} ns, expected ~20 us")
    dom = r.get("dom_range", {})
    c.equal("dom_range count", dom.get("count"), 1)
    c.equal("dom_range domain", dom.get("domain"), "mylib")
    c.equal("cross_thread count", r.get("cross_thread", {}).get("count"), 1)
    c.equal("marks", j.get("marks", {}).get("checkpoint"), 2)
    threads = dump_fields(s, c, os.path.join(d, traces(d)[0]), "Thread")
    c.expect(any(t.get("name") == "trainer" for t in threads), f"thread name 'trainer' missing: {threads}")
