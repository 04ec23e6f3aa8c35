"""CPU performance counters: recorded by the collector's sampler on this machine, named with the
reason where the PMU or perf_event_paranoid forbids them, and shown by summary and the exports;
the GPU sampler's clock, power and temperature on the fake NVML, shown as report tracks."""
import json
import os
import re
import shutil
import subprocess

from harness import one_trace, tail, test, trace_meta

HW = ["cycles", "instructions", "cache-misses", "branch-misses", "itlb-misses", "dtlb-misses"]
SYSFS = "/sys/bus/event_source/devices"


def has_cpu_pmu():
    return any(d == "cpu" or d.startswith(("cpu_", "armv", "arm_")) for d in os.listdir(SYSFS))


def paranoid():
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        return int(f.read())


def counters_of(rank):
    return {(x["name"], x["scope"]): x for x in rank["cpu_counters"]["counters"]}


def missing_of(rank):
    return {(x["name"], x["scope"]): x for x in rank["cpu_counters"]["missing"]}


def check_software(c, rank, how):
    got = counters_of(rank)
    for name in ("task-clock", "context-switches", "page-faults"):
        c.expect((name, "process") in got, f"{how}: software counter {name} not recorded: {sorted(got)}")
    tc = got.get(("task-clock", "process"))
    if tc:
        c.expect(tc["total"] > 0 and tc["samples"] >= 3, f"{how}: task-clock {tc}")
    c.expect(rank["cpu_counters"]["samples"] >= 3, f"{how}: {rank['cpu_counters']['samples']} counter samples")


@test
def cpu_counters_recorded(s, c):
    d = s.tmpdir("counters")
    p = s.record(c, d, [s.prog("paced_launches"), "800"], opts=["--sample-hz", "50"])
    path, j, rank, _ = one_trace(s, c, d)
    check_software(c, rank, "default counters")
    got, miss = counters_of(rank), missing_of(rank)
    for hw in HW:
        c.expect(((hw, "process") in got) != ((hw, "process") in miss),
                 f"{hw}: neither recorded nor named missing (or both)")
        if not has_cpu_pmu():
            c.expect(miss.get((hw, "process"), {}).get("reason", "").startswith("no hardware PMU"),
                     f"{hw} on a machine without a CPU PMU: {miss.get((hw, 'process'))}")
    lines = [x for x in p.stderr.splitlines() if "CPU counters missing:" in x]
    meta = trace_meta(s, c, path)
    if miss:
        c.equal("warning lines about missing counters", len(lines), 1)
        c.expect(all(n in lines[0] for n, _ in miss) if lines else False, f"warning names them all: {lines}")
        c.expect(meta.get("cpu_counters_missing", "") in (lines[0] if lines else ""),
                 f"meta cpu_counters_missing {meta.get('cpu_counters_missing')!r} is the warning's text")
    else:
        c.equal("warning lines", len(lines), 0)
    c.expect("task-clock" in meta.get("cpu_counters", ""), f"meta cpu_counters {meta.get('cpu_counters')!r}")
    if not has_cpu_pmu():
        c.expect(rank["cpu_counters"]["ipc"] is None, "no IPC without cycles and instructions")
    # The text summary's table and the Chrome/Perfetto counter tracks.
    t = s.run([s.cutrace, "summary", path])
    c.expect("CPU counters (perf_event_open" in t.stdout and "task-clock" in t.stdout, f"summary: {tail(t.stdout)}")
    out = os.path.join(d, "t.json")
    e = s.run([s.cutrace, "export", path, "--format", "chrome", "-o", out])
    c.require(e.returncode == 0, f"export chrome: {tail(e.stderr)}")
    with open(out) as f:
        ev = json.load(f)
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    tc = [x for x in ev if x.get("ph") == "C" and x.get("name") == "CPU counter task-clock"]
    c.equal("Chrome task-clock counter events", len(tc), got[("task-clock", "process")]["samples"])
    c.expect(all(x["args"]["CPUs"] >= 0 for x in tc), "task-clock values are CPUs busy")
    pf = os.path.join(d, "t.perfetto")
    e = s.run([s.cutrace, "export", path, "--format", "perfetto", "-o", pf])
    c.require(e.returncode == 0, f"export perfetto: {tail(e.stderr)}")
    with open(pf, "rb") as f:
        c.expect(b"CPU counter task-clock (CPUs)" in f.read(), "Perfetto track CPU counter task-clock")


@test
def cpu_counters_named_events(s, c):
    """--cpu-counters: a sysfs-listed event where this machine has one, and an unknown name."""
    d = s.tmpdir("counters_named")
    asked = ["no_such_event.xyz"]
    sysfs_event = None
    for pmu in sorted(os.listdir(SYSFS)):
        ev = os.path.join(SYSFS, pmu, "events")
        if os.path.isdir(ev):
            names = [n for n in sorted(os.listdir(ev)) if "." not in n]
            if names:
                sysfs_event = f"{pmu}/{names[0]}"
                break
    if sysfs_event:
        asked.append(sysfs_event)
    p = s.record(c, d, [s.prog("paced_launches"), "500"], opts=["--sample-hz", "50", "--cpu-counters", ",".join(asked)])
    _, _, rank, _ = one_trace(s, c, d)
    check_software(c, rank, "--cpu-counters")
    got, miss = counters_of(rank), missing_of(rank)
    c.expect(miss.get(("no_such_event.xyz", "process"), {}).get("reason", "").startswith("no such event"),
             f"unknown name: {miss.get(('no_such_event.xyz', 'process'))}")
    if sysfs_event:
        c.expect((sysfs_event, "process") in got or (sysfs_event, "process") in miss,
                 f"{sysfs_event}: neither recorded nor named missing")
    for hw in HW:
        c.expect((hw, "process") not in got and (hw, "process") not in miss, f"{hw} read though not asked for")
    bad = s.run([s.cutrace, "record", "-o", d, "--cpu-counters", "cycles,,instructions", "--", "true"])
    c.expect(bad.returncode != 0 and "comma-separated" in bad.stderr, f"empty name refused: {tail(bad.stderr)}")


@test
def cpu_counters_unprivileged(s, c):
    """As an unprivileged user (perf_event_paranoid applies): per-CPU counters named missing with
    the paranoid setting, the software counters still recorded."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        c.expect(True, "needs root and setpriv to drop privileges: not run")
        return
    d = s.tmpdir("counters_nobody")
    os.chmod(d, 0o777)
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
            s.cutrace, "record", "-o", d, "--sample-hz", "50", "--", s.prog("paced_launches"), "600"]
    p = s.run(argv)
    if p.returncode != 0 and "Permission denied" in p.stderr:
        c.expect(True, f"the build tree is not readable by nobody: not run ({tail(p.stderr)})")
        return
    c.require(p.returncode == 0, f"record as nobody exited {p.returncode}: {tail(p.stderr)}")
    path, j, rank, _ = one_trace(s, c, d)
    check_software(c, rank, "unprivileged")
    got, miss = counters_of(rank), missing_of(rank)
    level = paranoid()
    if level >= 1:
        per_cpu = [m for (n, scope), m in miss.items() if scope == "cpu"]
        c.expect(per_cpu and all(f"perf_event_paranoid is {level}" in m["reason"] for m in per_cpu),
                 f"per-CPU counters missing with the paranoid level: {per_cpu}")
        c.expect(not any(x["scope"] == "cpu" for x in rank["cpu_counters"]["counters"]), "no per-CPU counter read")
    if level >= 2:
        cs = got.get(("context-switches", "process"), {})
        c.equal("context-switches source (user-mode-only perf cannot count them)", cs.get("source"), "getrusage")
        c.expect(("cpu-migrations", "process") in miss, "cpu-migrations named missing")
        c.equal("counting mode", trace_meta(s, c, path).get("cpu_counters_mode"), "user")
    lines = [x for x in p.stderr.splitlines() if "CPU counters missing:" in x]
    c.equal("warning lines", len(lines), 1 if miss else 0)


@test
def nvml_clock_power_temperature_tracks(s, c):
    """The GPU sampler on the fake NVML (test/fake_nvml: call k answers SM clock 1400 + 10 k MHz,
    power 200 + k W, temperature 50 + k % 30 C): the report's GPU tracks carry those values."""
    d = s.tmpdir("nvml")
    nvml = os.path.join(s.build, "test", "fake_nvml")
    ld = nvml + ":" + s.env.get("LD_LIBRARY_PATH", "")
    s.record(c, d, [s.prog("paced_launches"), "400"], opts=["--sample-hz", "50"], extra_env={"LD_LIBRARY_PATH": ld})
    html = os.path.join(d, "r.html")
    p = s.run([s.cutrace, "report", d, "-o", html, "-q"])
    c.require(p.returncode == 0, f"report: {tail(p.stderr)}")
    with open(html) as f:
        page = f.read()
    series = {}
    for m in re.finditer(r'"device":(\d+),"series":"(gpu_sm_clock|gpu_power|gpu_temp)","unit":"[^"]*",'
                         r'"ts":\[[^\]]*\],"value":\[([^\]]*)\]', page):
        series[(int(m.group(1)), m.group(2))] = [float(v) for v in m.group(3).split(",") if v]
    c.require((0, "gpu_sm_clock") in series, f"no SM clock track for GPU 0: {sorted(series)}")
    clock, power, temp = (series.get((0, k), []) for k in ("gpu_sm_clock", "gpu_power", "gpu_temp"))
    c.expect(len(clock) >= 5 and len(clock) == len(power) == len(temp), f"samples: {len(clock)}, {len(power)}, {len(temp)}")
    ks = [(v - 1400) / 10 for v in clock]
    c.expect(all(b > a for a, b in zip(ks, ks[1:])), f"SM clock ramps up: {clock}")
    c.expect(all(pw == 200 + k for pw, k in zip(power, ks)), f"power W follows the same calls: {power} vs {ks}")
    c.expect(all(t == 50 + k % 30 for t, k in zip(temp, ks)), f"temperature: {temp} vs {ks}")
