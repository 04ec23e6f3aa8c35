"""End-to-end tests of lossless capture (imported by check.py, which runs them with the others):
bursts of launches and NVTX ranges far faster than the collector drains them are kept whole
within the buffer budget (CUTRACE_BUFFER_MB, --buffer-mb); past it, every lost record is counted
by kind and the intervals are marked, and every tool says so; calls in progress when the process
ends are either in the trace or counted; the app thread makes no allocation and no system call
per recorded call. docs/RELIABILITY.md names the promises these tests guard."""
import os
import re
import shutil
import struct
import subprocess

from harness import (SAN_PRELOAD, STRESS_SCALE, TIME_SCALE, dump_fields, dump_lines, fault_run, one_trace,
                     preload_env, run_measured, tail, test, trace_meta, traces)


def kernels_and_drops(s, c, d):
    """(kernel launches in the trace, summary JSON) of the only trace in d."""
    _, j, _, launches = one_trace(s, c, d)
    return launches, j


@test
def burst_300k_launches_one_thread_nothing_dropped(s, c):
    """launch_loop 300000 (plus its 2,000 warm-up launches) under default options: every launch is
    in the trace and nothing is dropped. Fails with a fixed 4,096-record ring per thread (37k kept)."""
    n = int(300000 * STRESS_SCALE)
    d = s.tmpdir("burst300k")
    s.record(c, d, [s.prog("launch_loop"), str(n)])
    launches, j = kernels_and_drops(s, c, d)
    c.equal("kernels in the trace", launches, n + 2000)
    c.equal("dropped records", j["dropped_records"], 0)
    c.equal("drops by kind", sum(j["drops"]["by_kind"].values()), 0)


@test
def paced_300k_launches_per_second_for_5s_nothing_dropped(s, c):
    """One thread launching every 3.33 us (300k launches/s) for 5 s, with end-event timing and with
    none: every launch is kept, 0 dropped. Fails when a cap on the collector's pending operations
    stops its draining for 20-40 ms (records lost from about 160k launches/s)."""
    for mode in ("end", "none"):
        d = s.tmpdir("paced-" + mode)
        p = s.record(c, d, [s.prog("paced_launches"), "5000", "1000", "3.33", "0"],
                     ("--gpu-timing", mode, "--sample-hz", "0"))
        m = re.search(r"paced_launches: (\d+) kernels (\d+) memsets", p.stdout)
        c.require(m, f"paced_launches printed {p.stdout!r}")
        launches, j = kernels_and_drops(s, c, d)
        c.equal(f"{mode}: kernels in the trace", launches, int(m.group(1)))
        c.equal(f"{mode}: memsets in the trace", j["memset"]["count"], int(m.group(2)))
        c.equal(f"{mode}: dropped records", j["dropped_records"], 0)
        c.notes.append(f"{mode}: {m.group(1)} launches in 5 s")
        if not SAN_PRELOAD:  # under a sanitizer the loop cannot keep the pace
            c.expect(int(m.group(1)) >= 1200000, f"{mode}: the loop kept only {m.group(1)} launches in 5 s")


@test
def nvtx_million_push_pop_pairs_one_thread_all_kept(s, c):
    """1,000,000 nvtxRangePushA/Pop pairs in a loop on one thread: 1,000,000 ranges, 0 dropped
    (a fixed ring per thread drops 97-99%)."""
    n = int(1000000 * STRESS_SCALE)
    d = s.tmpdir("nvtx1m")
    s.record(c, d, [s.prog("nvtx_burst"), str(n), "1", "0"], ("--sample-hz", "0"))
    _, j = kernels_and_drops(s, c, d)
    ranges = {r["name"]: r["count"] for r in j["ranges"]}
    c.equal("ranges name_0", ranges.get("name_0"), n)
    c.equal("dropped records", j["dropped_records"], 0)


@test
def nvtx_5000_names_and_2000_marks_in_one_burst_all_kept(s, c):
    """5,000 distinct range names (20,000 ranges) and 2,000 marks in one burst: every range under
    its own name and every mark kept (a fixed ring per thread keeps none of the marks)."""
    d = s.tmpdir("nvtxnames")
    s.record(c, d, [s.prog("nvtx_burst"), "20000", "5000", "2000"], ("--sample-hz", "0"))
    _, j = kernels_and_drops(s, c, d)
    ranges = {r["name"]: r["count"] for r in j["ranges"]}
    c.equal("distinct range names", len([n for n in ranges if n.startswith("name_")]), 5000)
    c.expect(all(ranges.get(f"name_{i}") == 4 for i in range(5000)), "every name_<i> 4 times")
    c.equal("marks", sum(n for name, n in j["marks"].items() if name.startswith("mark_")), 2000)
    c.equal("distinct marks", len([n for n in j["marks"] if n.startswith("mark_")]), 2000)
    c.equal("dropped records", j["dropped_records"], 0)


@test
def stress_32_threads_100k_launches_nothing_dropped_memory_within_budget(s, c):
    """32 threads x 100,000 launches at once on two cores (the collector gets a 33rd of the CPU):
    3,200,000 kernels, 0 dropped; without GPU timing (so that the fake driver's events do not
    count) the process's peak RSS stays within the 256 MB buffer budget plus 96 MB."""
    n = int(100000 * STRESS_SCALE)
    for mode in ("end", "none"):
        d = s.tmpdir("stress32-" + mode)
        # No cap on the address space: 32 threads' stacks and malloc arenas are virtual memory.
        run = run_measured(s, [s.prog("stress"), "32", str(n)], timeout=600, cap_memory=False,
                           extra_env={"LD_PRELOAD": s.shim, "CUTRACE_OUTPUT": d, "CUTRACE_SAMPLE_HZ": "0",
                                      "CUTRACE_GPU_TIMING": mode})
        c.require(run is not None, f"{mode}: stress 32 {n} did not finish within 600 s")
        peak_kb = run.rss // 1024
        out = run.out.decode(errors="replace")
        c.equal(f"{mode}: exit status", run.returncode, 0)
        m = re.search(r"launches=(\d+)", out)
        c.require(m, f"stress printed {out!r}")
        launches, j = kernels_and_drops(s, c, d)
        c.equal(f"{mode}: kernels in the trace", launches, int(m.group(1)))
        c.equal(f"{mode}: dropped records", j["dropped_records"], 0)
        c.notes.append(f"{mode}: 32 x {n}: peak RSS {peak_kb} KiB")
        if mode == "none" and not SAN_PRELOAD:  # a sanitizer's shadow memory is not the shim's
            c.expect(peak_kb < (256 + 96) * 1024, f"peak RSS {peak_kb} KiB >= budget + 96 MiB")


@test
def buffer_budget_1mb_drops_counted_marked_and_said_everywhere(s, c):
    """--buffer-mb 1 on launch_loop 300000: records are dropped, and `cutrace record` says so per
    rank, the summary says so in its first lines and marks the kernel count as a lower bound,
    summary --json gives the drops by kind, the file marks each interval (Loss records), and
    kept + dropped = issued for the kernels: a trace missing most of its records must say so
    where it is read, not in one word of the summary header."""
    d = s.tmpdir("budget1")
    p = s.record(c, d, [s.prog("launch_loop"), "300000"], ("--buffer-mb", "1", "--gpu-timing", "none"))
    m = re.search(r"cutrace: rank 0: ([\d,]+) of ([\d,]+) records dropped \(([\d.]+)%\): buffer budget 1 MB reached; "
                  r"raise --buffer-mb", p.stderr)
    c.require(m, f"record's stderr: {tail(p.stderr)}")
    dropped = int(m.group(1).replace(",", ""))
    path, j, rank, launches = one_trace(s, c, d)
    c.expect(dropped > 0, "nothing dropped with a 1 MB budget")
    c.equal("summary dropped_records", j["dropped_records"], dropped)
    c.equal("summary drops.records", j["drops"]["records"], dropped)
    c.equal("kept + dropped kernels", launches + j["drops"]["by_kind"]["kernels"], 302000)
    c.equal("drops.of", j["drops"]["of"], int(m.group(2).replace(",", "")))
    c.equal("per rank drops", rank["drops"]["records"], dropped)
    losses = dump_fields(s, c, path, "Loss")
    c.require(losses, "no Loss record in the trace")
    c.equal("Loss records' kernels", sum(int(x.get("kernels", 0)) for x in losses), j["drops"]["by_kind"]["kernels"])
    c.equal("Loss intervals", len(losses), j["drops"]["intervals"])
    c.expect(all(int(x["begin"]) <= int(x["end"]) for x in losses), "a Loss interval ends before it begins")
    text = s.run([s.cutrace, "summary", d])
    first = text.stdout.splitlines()[:2]
    c.expect(first and first[0].startswith("WARNING: incomplete capture: ") and m.group(1) in first[0],
             f"summary's first line: {first}")
    c.expect(re.search(r"Kernels: >=[\d,]+ launches", text.stdout), "the kernel count is not marked as a lower bound")


def read_progress(path, threads):
    """exit_threads' shared log: per thread (tid, launches returned, {launch index: return ns})."""
    ring = 1 << 20
    size = 16 + 8 * ring
    out = []
    with open(path, "rb") as f:
        data = f.read()
    for t in range(threads):
        base = t * size
        tid, n = struct.unpack_from("<qq", data, base)
        first = max(0, n - ring)
        times = {}
        for i in range(first, n):
            times[i] = struct.unpack_from("<q", data, base + 16 + 8 * (i % ring))[0]
        out.append((tid, n, times))
    return out


@test
def threads_launching_at_exit_or_signal_every_launch_in_the_trace_or_counted(s, c):
    """4 threads launching when the process calls exit() or gets SIGTERM, SIGINT or SIGHUP: every
    launch that had returned before capture ended is in the trace or counted as lost at exit
    (Loss, reason exit), each thread's recorded launches are its first ones with no hole, and the
    trace is complete. Fails when launches in flight at exit are neither recorded nor counted
    (0.35-5.9% of them without the exit accounting)."""
    for how in ("exit", "SIGTERM", "SIGINT", "SIGHUP"):
        d = s.tmpdir("exit-" + how)
        progress = os.path.join(d, "progress.bin")
        # Under a sanitizer the collector drains too slowly to catch up with 4 unpaced threads
        # within the 10 s a fatal signal waits for the flush: the threads pause between launches.
        gap = "50" if SAN_PRELOAD else "0"
        rc, out, err = fault_run(s, [s.prog("exit_threads"), progress, how, "4", "150", gap], d, timeout=60)
        want_rc = 0 if how == "exit" else -getattr(__import__("signal"), how)
        c.equal(f"{how}: exit status", rc, want_rc)
        path = os.path.join(d, traces(d)[0]) if traces(d) else None
        c.require(path, f"{how}: no trace written ({tail(err)})")
        meta = trace_meta(s, c, path)
        c.require("capture_end_ns" in meta, f"{how}: no capture_end_ns meta")
        end_ns = int(meta["capture_end_ns"])
        lost = {}
        for x in dump_fields(s, c, path, "Loss"):
            lost[int(x["tid"])] = lost.get(int(x["tid"]), 0) + int(x.get("kernels", 0))
            c.expect(x["reason"] == "exit", f"{how}: a Loss of reason {x['reason']}")
        recorded = {}
        for line in dump_lines(s, c, path, "Kernel"):
            m = re.search(r"tid=(\d+) .* grid=\((\d+),(\d+),1\)", line)
            if m:
                recorded.setdefault(int(m.group(1)), set()).add(int(m.group(2)) - 1)
        total_missing = 0
        for t, (tid, n, times) in enumerate(read_progress(progress, 4)):
            got = recorded.get(tid, set())
            c.expect(got == set(range(len(got))), f"{how}: thread {t}: recorded launches are not its first {len(got)}")
            before = [i for i, ts in times.items() if ts < end_ns]
            missing = [i for i in before if i not in got]
            total_missing += len(missing)
            c.expect(len(missing) <= lost.get(tid, 0),
                     f"{how}: thread {t}: {len(missing)} launches returned before the end are neither in the trace "
                     f"nor counted ({lost.get(tid, 0)} counted)")
            c.expect(len(got) <= n, f"{how}: thread {t}: {len(got)} recorded, {n} made")
        c.notes.append(f"{how}: {sum(len(v) for v in recorded.values())} launches recorded, "
                       f"{sum(lost.values())} counted lost at exit, {total_missing} returned before the end and not recorded")


@test
def hot_path_no_allocation_no_system_call_per_recorded_call(s, c):
    """100,000 recorded launches and 100,000 NVTX push/pop pairs on one thread: without GPU timing
    the thread makes no malloc/free call and at most a handful of system calls in each loop
    (counted by strace between markers); with CUPTI timing (the fake CUPTI, which asks the shim
    for activity buffers from the launching thread, as CUPTI does) fewer than one allocation per
    100 launches and one system call per 1,000."""
    if SAN_PRELOAD:  # the program's own malloc would replace the sanitizer's
        c.notes.append("not run under a sanitizer: hot_path defines malloc")
        return
    if not shutil.which("strace"):
        c.require(False, "strace is not installed (bash .ci/run --deps-only installs it)")
    for mode, extra in (("none", {}), ("cupti", {"CUTRACE_CUPTI": s.fake_cupti})):
        d = s.tmpdir("hot-" + mode)
        log = os.path.join(d, "strace.log")
        env = dict(s.env)
        env.update({"CUTRACE_OUTPUT": d, "CUTRACE_SAMPLE_HZ": "0", "CUTRACE_GPU_TIMING": mode,
                    "NVTX_INJECTION64_PATH": s.shim, **extra})
        pre = preload_env({"LD_PRELOAD": s.shim})["LD_PRELOAD"]
        p = subprocess.run(["strace", "-f", "-qq", "-o", log, "-E", "LD_PRELOAD=" + pre, s.prog("hot_path"), "100000"],
                           env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=120 * TIME_SCALE)
        c.equal(f"{mode}: exit status", p.returncode, 0)
        m = re.search(r"hot_path: launches (\d+) mallocs (\d+) nvtx (\d+) mallocs (\d+) tid (\d+)", p.stdout)
        c.require(m, f"{mode}: hot_path printed {p.stdout!r} {tail(p.stderr)}")
        if mode == "none":
            c.equal(f"{mode}: allocations in the launch loop", int(m.group(2)), 0)
        else:
            c.expect(int(m.group(2)) < 1000, f"{mode}: {m.group(2)} allocations in 100,000 launches")
        c.equal(f"{mode}: allocations in the NVTX loop", int(m.group(4)), 0)
        tid = m.group(5)
        region, counts = 0, [0, 0, 0, 0]
        with open(log) as f:
            for line in f:
                if not line.startswith(tid + " "):
                    continue
                if "cutrace-hot-path-marker" in line:
                    region += 1
                    continue
                if region < 4 and "resumed>" not in line:
                    counts[region] += 1
        c.equal(f"{mode}: markers seen", region, 3)
        c.expect(counts[1] <= (8 if mode == "none" else 100), f"{mode}: {counts[1]} system calls in 100,000 launches")
        c.expect(counts[2] <= 8, f"{mode}: {counts[2]} system calls in 100,000 NVTX pairs")
        _, j, _, launches = one_trace(s, c, d)
        c.equal(f"{mode}: kernels recorded", launches, 101000)
        c.equal(f"{mode}: dropped", j["dropped_records"], 0)
        c.notes.append(f"{mode}: in the loops: allocations {m.group(2)} and {m.group(4)}, system calls "
                       f"{counts[1]} and {counts[2]}")


@test
def stress_every_launch_recorded_or_counted(s, c):
    """32 threads x 20,000 launches over 64 streams: the collector cannot keep up on 2 cores, so
    records are dropped, but every launch is either in the trace or in the dropped count."""
    d = s.tmpdir("stress")
    p = s.record(c, d, [s.prog("stress"), "32", str(int(20000 * STRESS_SCALE))])
    m = re.search(r"launches=(\d+)", p.stdout)
    c.require(m, f"stress printed {tail(p.stdout)!r}")
    j = s.summary(c, d)
    kernels = sum(k["count"] for k in j["kernels"])
    c.equal("kernels in the trace + dropped records", kernels + j["dropped_records"], int(m.group(1)))
    c.expect(j["ranks"][0]["complete"], "the stress trace is not complete")


@test
def stress_mixed_load_no_deadlock(s, c):
    """The same with NVTX ranges, copies and stream syncs mixed in: finishes, trace complete."""
    d = s.tmpdir("stressmix")
    n = int(10000 * STRESS_SCALE)
    p = s.record(c, d, [s.prog("stress"), "16", str(n), "mixed"])
    c.expect(f"launches={16 * n}" in p.stdout, f"stress mixed printed {tail(p.stdout)!r}")
    j = s.summary(c, d)
    c.expect(j["ranks"][0]["complete"], "the mixed stress trace is not complete")
