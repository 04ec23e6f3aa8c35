"""End-to-end tests of `cutrace export`: the Chrome JSON (Kineto schema) and the Perfetto protobuf
of nvtx_app's trace, the Nsight Systems queries on the SQLite export of routes', and nsys's report
figures on sample_app's against the summary."""
import json
import os
import re
import time

from harness import ROUTES, by_name, tail, test, traces


def pb_fields(b):
    """[(field, value)] of one protobuf message: an int for varint and fixed64, bytes otherwise."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            x = b[i]
            i += 1
            v |= (x & 0x7F) << shift
            shift += 7
            if x < 0x80:
                return v

    while i < len(b):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            out.append((field, varint()))
        elif wire == 1:
            out.append((field, int.from_bytes(b[i:i + 8], "little")))
            i += 8
        elif wire == 2:
            n = varint()
            if i + n > len(b):
                raise ValueError(f"field {field}: {n} bytes past the end")
            out.append((field, b[i:i + n]))
            i += n
        else:
            raise ValueError(f"field {field}: wire type {wire}")
    return out


@test
def export_chrome_and_perfetto_from_fake_run(s, c):
    """`cutrace export` of nvtx_app's trace: the Chrome JSON (Kineto schema) loads, has the rank
    as HTA reads it, kernels with correlation ids and ac2g flows, NVTX ranges as user_annotation;
    the Perfetto file is a stream of TracePackets with interned names, balanced slices per track
    and launch -> kernel flows."""
    d = s.tmpdir("export")
    s.record(c, d, [s.prog("nvtx_app")])
    out = os.path.join(d, "chrome")
    p = s.run([s.cutrace, "export", d, "--format", "chrome", "-o", out])
    c.require(p.returncode == 0, f"`cutrace export --format chrome` exited {p.returncode}: {tail(p.stderr)}")
    files = sorted(os.listdir(out)) if os.path.isdir(out) else []
    c.require(len(files) == 1 and files[0].endswith(".json"), f"chrome output files: {files}")
    text = open(os.path.join(out, files[0]), encoding="utf-8").read()
    try:
        j = json.loads(text)
    except ValueError as e:
        c.require(False, f"chrome JSON does not load: {e}")
    # One process, not distributed: no distributedInfo, as Kineto writes it (HTA then takes rank 0).
    c.expect("distributedInfo" not in j and not re.search(r'"rank":\s+(\d+)', text),
             "distributedInfo written for a job of world size 1")
    c.equal("schemaVersion", j.get("schemaVersion"), 1)
    ev = j["traceEvents"]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    c.equal("kernels", len(kernels), 16)
    c.equal("kernel names", {k["name"] for k in kernels}, {"k_nvtx"})
    starts = {e["id"] for e in ev if e["ph"] == "s" and e.get("cat") == "ac2g"}
    ends = {e["id"] for e in ev if e["ph"] == "f" and e.get("cat") == "ac2g" and e.get("bp") == "e"}
    launches = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"}
    no_flow = [k["args"].get("correlation") for k in kernels
               if not {k["args"].get("correlation")} <= (starts & ends & launches)]
    c.expect(not no_flow, f"kernels without launch event or ac2g flow: {no_flow}")
    ranges = {}
    for e in ev:
        if e.get("cat") == "user_annotation" and e["ph"] in ("X", "b"):
            ranges[e["name"]] = ranges.get(e["name"], 0) + 1
    want = {**{f"step_{i}": 1 for i in range(5)}, "inner": 5, "dom_range": 1, "cross_thread": 1}
    c.equal("user_annotation ranges", ranges, want)
    gpu_anno = {e["name"] for e in ev if e.get("cat") == "gpu_user_annotation"}
    c.expect("inner" in gpu_anno and not any(n.startswith("step_") for n in gpu_anno),
             f"gpu_user_annotation names {sorted(gpu_anno)}: want inner's, none for a step (Kineto writes none)")
    c.equal("marks", sum(1 for e in ev if e["ph"] == "i" and e["name"] == "checkpoint"), 2)

    pf = os.path.join(d, "trace.pftrace")
    p = s.run([s.cutrace, "export", d, "--format", "perfetto", "-o", pf])
    c.require(p.returncode == 0, f"`cutrace export --format perfetto` exited {p.returncode}: {tail(p.stderr)}")
    data = open(pf, "rb").read()
    try:
        packets = [v for f, v in pb_fields(data) if f == 1]
        names, tracks, open_slices, flows, ends_of_flows, kernel_slices = {}, {}, {}, [], [], 0
        for pkt in packets:
            fields = pb_fields(pkt)
            top = dict(fields)
            if 12 in top:  # interned_data: event_names
                for f, v in pb_fields(top[12]):
                    if f == 2:
                        e = dict(pb_fields(v))
                        names[e[1]] = e[2].decode()
            if 60 in top:  # track_descriptor
                td = pb_fields(top[60])
                desc = dict(td)
                name = desc.get(2, b"").decode()
                for f, v in td:
                    if f in (3, 4):  # process / thread: their names are inside
                        name = dict(pb_fields(v)).get(6 if f == 3 else 5, b"").decode()
                tracks[desc[1]] = name
            if 11 in top:  # track_event
                te = pb_fields(top[11])
                t = dict(te)
                track = t.get(11)
                c.require(track in tracks, f"event on an undeclared track {track}")
                if t.get(9) == 1:
                    open_slices.setdefault(track, []).append(top[8])
                    flows += [v for f, v in te if f == 47]
                    ends_of_flows += [v for f, v in te if f == 48]
                    kernel_slices += names.get(t.get(10)) == "k_nvtx"
                elif t.get(9) == 2:
                    c.require(open_slices.get(track), f"SLICE_END without a BEGIN on track {tracks[track]!r}")
                    open_slices[track].pop()
    except (ValueError, IndexError, KeyError) as e:
        c.require(False, f"perfetto file does not decode: {type(e).__name__}: {e}")
    c.expect(len(packets) > 100, f"only {len(packets)} packets")
    c.equal("slices left open", sum(len(v) for v in open_slices.values()), 0)
    c.equal("k_nvtx slices", kernel_slices, 16)
    c.expect("step_0" in names.values() and "cuLaunchKernel" in names.values(), f"interned names: {sorted(names.values())}")
    c.expect(any(n.startswith("trainer") for n in tracks.values()), f"no 'trainer' thread track: {sorted(tracks.values())}")
    c.expect(any(n == "stream" or n.startswith("stream ") for n in tracks.values()), f"no stream track: {sorted(tracks.values())}")
    c.equal("flows (launch -> GPU)", len(flows), 16)
    c.equal("flow ends", sorted(ends_of_flows), sorted(flows))


@test
def export_sqlite_nsys_queries(s, c):
    """`cutrace export --format sqlite`: SQL written for Nsight Systems' SQLite export runs on it."""
    import sqlite3
    d = s.tmpdir("sqlite")
    s.record(c, d, [s.prog("routes")])
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    pid = int(re.search(r"\.pid(\d+)\.cutrace$", traces(d)[0]).group(1))
    db = os.path.join(s.tmpdir("sqlite-out"), "x.sqlite")
    argv = [s.cutrace, "export", "--format", "sqlite", "-o", db, d]
    p = s.run(argv)
    c.require(p.returncode == 0, f"`cutrace export --format sqlite` exited {p.returncode}: {tail(p.stderr)}")
    c.require(os.path.isfile(db), f"{db} was not written")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        q = con.execute
        # nsys's cuda_gpu_kern_sum, by demangled name; the graph launches are GRAPH_TRACE rows.
        rows = q("SELECT s.value, count(*), min(k.end - k.start), sum(k.end - k.start) FROM "
                 "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON k.demangledName = s.id GROUP BY 1").fetchall()
        kernels = {name: n for name, n, _, _ in rows}
        c.equal("kernel counts", kernels, {n: k for n, k in ROUTES.items() if n != "CUDA graph #1"})
        # The export carries the trace's GPU times exactly (their accuracy against the fake's
        # 20 us is launch_routes_all_counted's subject, with its descheduling allowance).
        traced = by_name(s.summary(c, d))
        for name, _, lo, total in rows:
            c.equal(f"{name}: exported (min, total) GPU ns", (lo, total),
                    (traced[name]["min_ns"], traced[name]["total_ns"]))
        graphs = q("SELECT count(*), avg(end - start) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()
        c.equal("graph launches", graphs[0], ROUTES["CUDA graph #1"])
        c.timing(graphs[1] is not None and abs(graphs[1] - 60000) <= 3000, f"graph mean {graphs[1]} ns, expected 60 us")
        # Every GPU row's launch is a RUNTIME row with the same correlationId, issued before it ran.
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"):
            orphans = q(f"SELECT count(*) FROM {table} g LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                        "ON r.correlationId = g.correlationId WHERE r.correlationId IS NULL OR r.start > g.start"
                        ).fetchone()[0]
            c.equal(f"{table} rows without a launch before them", orphans, 0)
        launches = dict(q("SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                          "ON r.correlationId = k.correlationId JOIN StringIds s ON s.id = r.nameId GROUP BY 1"))
        by_call = {"cuLaunchKernel": ("k_direct", "k_direct_ptsz", "k_dlsym", "k_proc", "k_proc_self", "k_proc_ptsz"),
                   "cuLaunchKernelEx": ("k_dlsym_ex", "k_proc_ex"), "cuLaunchCooperativeKernel": ("k_coop",)}
        c.equal("launch calls", launches, {call: sum(ROUTES[k] for k in ks) for call, ks in by_call.items()})
        # globalPid packs the pid as nsys does; times are ns since the session start (UTC epoch).
        pids = [r[0] for r in q("SELECT DISTINCT globalPid / 0x1000000 % 0x1000000 FROM CUPTI_ACTIVITY_KIND_KERNEL")]
        c.equal("pids", pids, [pid])
        epoch = q("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()[0]
        first = q("SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
        c.expect(first >= 0 and abs((epoch + first) / 1e9 - time.time()) < 600,
                 f"session start {epoch} + first call {first} ns is not about now")
    finally:
        con.close()
    p = s.run(argv)
    c.expect(p.returncode != 0 and "exists" in p.stderr,
             f"a second export over {db} exited {p.returncode} ({tail(p.stderr)}): expected a refusal")


@test
def export_sqlite_nsys_report_queries_give_the_summary_figures(s, c):
    """The figures of nsys's stats reports, computed with SQL on the SQLite export of sample_app
    (kernels, async copies both ways, memsets, syncs, NVTX push/pop ranges, a graph), equal
    `cutrace summary --json`: cuda_api_sum (calls, count, total), cuda_gpu_kern_sum, cuda_gpu_mem_time_sum
    and cuda_gpu_mem_size_sum (per copy kind and memset), the synchronisations, nvtx_sum (per range
    name). ThreadNames names every thread that made a call (threads: 9 threads)."""
    import sqlite3
    d = s.tmpdir("nsys-reports")
    s.record(c, d, [s.prog("sample_app")])
    j = s.summary(c, d)
    db = os.path.join(s.tmpdir("nsys-reports-out"), "x.sqlite")
    p = s.run([s.cutrace, "export", "--format", "sqlite", "-q", "-o", db, d])
    c.require(p.returncode == 0, f"`cutrace export --format sqlite` exited {p.returncode}: {tail(p.stderr)}")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        q = con.execute
        api = {n: (k, t) for n, k, t in q("SELECT s.value, count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                                          "JOIN StringIds s ON r.nameId = s.id GROUP BY 1")}
        c.equal("cuda_api_sum: calls, count and total ns", api, {a["name"]: (a["count"], a["total_ns"]) for a in j["api"]})
        kern = {n: (k, t, lo, hi) for n, k, t, lo, hi in q(
            "SELECT s.value, count(*), sum(k.end - k.start), min(k.end - k.start), max(k.end - k.start) FROM "
            "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON k.demangledName = s.id GROUP BY 1")}
        graph = {k["name"] for k in j["kernels"] if k["name"].startswith("CUDA graph")}
        c.equal("cuda_gpu_kern_sum: count, total, min, max ns",
                kern, {k["name"]: (k["count"], k["total_ns"], k["min_ns"], k["max_ns"]) for k in j["kernels"]
                       if k["name"] not in graph})
        kinds = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP", 0: "Unknown"}
        mem = {kinds.get(k, str(k)): (n, t, b) for k, n, t, b in q(
            "SELECT copyKind, count(*), sum(end - start), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1")}
        c.equal("cuda_gpu_mem_time_sum / mem_size_sum: copies by kind (count, ns, bytes)", mem,
                {k: (v["count"], v["total_ns"], v["bytes"]) for k, v in j["memcpy"].items() if v["count"]})
        c.equal("memsets (count, ns, bytes)",
                q("SELECT count(*), sum(end - start), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET").fetchone(),
                (j["memset"]["count"], j["memset"]["total_ns"], j["memset"]["bytes"]))
        sync_kinds = {1: "event", 2: "stream_wait", 3: "stream", 4: "context"}
        syncs = {sync_kinds.get(k, str(k)): (n, t) for k, n, t in q(
            "SELECT syncType, count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION GROUP BY 1")}
        c.equal("synchronisations by kind (count, ns)", syncs,
                {k: (v["count"], v["total_ns"]) for k, v in j["syncs"].items() if v["count"]})
        nvtx = {n: (k, t) for n, k, t in q("SELECT coalesce(e.text, s.value), count(*), sum(e.end - e.start) FROM NVTX_EVENTS e "
                                           "LEFT JOIN StringIds s ON e.textId = s.id WHERE e.eventType = 59 GROUP BY 1")}
        c.equal("nvtx_sum: push/pop ranges by name (count, ns)", nvtx,
                {g["name"]: (g["count"], g["cpu_total_ns"]) for g in j["ranges"]})
    finally:
        con.close()

    d = s.tmpdir("nsys-threads")
    s.record(c, d, [s.prog("threads")])
    db = os.path.join(s.tmpdir("nsys-threads-out"), "x.sqlite")
    p = s.run([s.cutrace, "export", "--format", "sqlite", "-q", "-o", db, d])
    c.require(p.returncode == 0, f"`cutrace export --format sqlite` exited {p.returncode}: {tail(p.stderr)}")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        callers = {r[0] for r in con.execute("SELECT DISTINCT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
        named = {r[0] for r in con.execute("SELECT globalTid FROM ThreadNames")}
        c.equal("threads that made a call without a ThreadNames row", sorted(callers - named), [])
        c.equal("threads that made a call", len(callers), 9)
    finally:
        con.close()
