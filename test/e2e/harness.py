"""The shared harness of the end-to-end tests (python3 standard library only): the test registry
(@test), Checks (one test's mismatches), Suite (the build's binaries, a temporary directory per
test, running programs and `cutrace record`/`summary`), the readers of `cutrace dump` output, the
peak-RSS measurement, and the runner (main) that check.py calls."""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MiB = 1 << 20
TESTS = []

# Sanitizer runs (test/sanitize/run.sh): the runtime libraries to preload ahead of the shim in every
# process the tests start, a factor on the timeouts, and a smaller stress load.
SAN_PRELOAD = os.environ.get("CUTRACE_TEST_SAN_PRELOAD", "")
TIME_SCALE = float(os.environ.get("CUTRACE_TEST_TIME_SCALE", "1"))
STRESS_SCALE = float(os.environ.get("CUTRACE_TEST_STRESS_SCALE", "1"))
# Under a sanitizer every call is several times slower and the fake driver's timing (its kernels
# "run" for a fixed time from the launch) no longer matches what the shim sees: the checks of GPU
# durations become notes. Counts, contents, exit statuses and outputs are still checked.
TIMING_CHECKED = not SAN_PRELOAD

# Launches per kernel of test/e2e/routes.cpp and test/e2e/threads.cpp.
ROUTES = {"k_direct": 7, "k_direct_ptsz": 5, "k_dlsym": 6, "k_dlsym_ex": 4, "k_proc": 8,
          "k_proc_self": 3, "k_proc_ptsz": 4, "k_proc_ex": 9, "k_coop": 2, "CUDA graph #1": 4}
THREADS_COUNTS = {"k_thread0": 4000, "k_thread1": 4000, "k_thread2": 4000, "k_thread3": 4000, "k_ptds": 800}


def preload_env(env):
    """Puts the sanitizer runtime (if any) first in env's LD_PRELOAD; returns env."""
    if SAN_PRELOAD:
        env["LD_PRELOAD"] = SAN_PRELOAD + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    return env


def env_of(s, extra=None):
    """The suite's environment (s.env) with extra set, the sanitizer runtime (if any) preloaded."""
    env = dict(s.env)
    env.update(extra or {})
    return preload_env(env)


def test(fn):
    TESTS.append(fn)
    return fn


class Failed(Exception):
    pass


class Checks:
    """Collects every mismatch of a test, so that one FAIL line names all of them."""

    def __init__(self):
        self.errors = []
        self.notes = []  # printed to stderr: tolerated, but worth knowing

    def expect(self, cond, msg):
        if not cond:
            self.errors.append(msg)
        return cond

    def equal(self, what, got, want):
        return self.expect(got == want, f"{what} = {got!r}, expected {want!r}")

    def timing(self, cond, msg):
        """A check of measured GPU time: a failure is a note under a sanitizer (TIMING_CHECKED)."""
        if not cond:
            (self.errors if TIMING_CHECKED else self.notes).append(msg + ("" if TIMING_CHECKED else " (timing not checked under a sanitizer)"))
        return cond

    def require(self, cond, msg):  # stops the test: what follows depends on it
        if not cond:
            self.errors.append(msg)
            raise Failed()

    strict_known_bugs = False  # --strict-known-bugs

    def known_bug(self, cond, msg):
        """The correct behaviour of a reported, not yet fixed bug: when it does not hold, a note
        "KNOWN BUG: msg" (the suite stays green) or, with --strict-known-bugs, a failure."""
        if not cond:
            (self.errors if self.strict_known_bugs else self.notes).append("KNOWN BUG: " + msg)
        return cond


class Suite:
    # Launcher variables that set the rank: scrubbed so that only rank_from_launcher_env sets one.
    RANK_VARS = re.compile(r"^(RANK|LOCAL_RANK|WORLD_SIZE|OMPI_COMM_WORLD_\w+|PMI_\w+|PMIX_\w+|"
                           r"MPI_LOCALRANKID|SLURM_\w+|CUTRACE_\w+)$")

    def __init__(self, build, keep, strict_means):
        self.strict_means = strict_means
        self.build = os.path.abspath(build)
        self.cutrace = os.path.join(self.build, "bin", "cutrace")
        self.shim = os.path.join(self.build, "lib", "libcutrace.so")
        self.fake_dir = os.path.join(self.build, "test", "fake_cuda")
        self.fake_cupti = os.path.join(self.build, "test", "fake_cupti", "libcupti.so")
        self.e2e = os.path.join(self.build, "test", "e2e")
        self.keep = keep
        self.root = tempfile.mkdtemp(prefix="cutrace-e2e-")
        self.env = {k: v for k, v in os.environ.items() if not self.RANK_VARS.match(k)}
        ld = self.env.get("LD_LIBRARY_PATH", "")
        if self.fake_dir not in ld.split(":"):
            self.env["LD_LIBRARY_PATH"] = self.fake_dir + (":" + ld if ld else "")
        self.env.pop("LD_PRELOAD", None)

    def prog(self, name):
        return os.path.join(self.e2e, name)

    def tmpdir(self, name):
        return tempfile.mkdtemp(prefix=name + "-", dir=self.root)

    def run(self, argv, extra_env=None, timeout=60, cwd=None):
        return subprocess.run(argv, env=env_of(self, extra_env), cwd=cwd, timeout=timeout * TIME_SCALE, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              errors="replace")

    def record(self, c, out, argv, opts=(), extra_env=None):
        """`cutrace record -o out [opts] -- argv`; requires exit status 0."""
        p = self.run([self.cutrace, "record", "-o", out, *opts, "--", *argv], extra_env)
        what = " ".join(argv).replace(self.e2e + "/", "")
        c.require(p.returncode == 0, f"`cutrace record -- {what}` exited {p.returncode}: {tail(p.stderr)}")
        return p

    def summary(self, c, path):
        """`cutrace summary --json path`; requires exit status 0 and a JSON document."""
        p = self.run([self.cutrace, "summary", "--json", path])
        c.require(p.returncode == 0, f"`cutrace summary --json` exited {p.returncode}: {tail(p.stderr)}")
        try:
            return json.loads(p.stdout)
        except ValueError as e:
            c.require(False, f"`cutrace summary --json` printed no JSON ({e}): {tail(p.stdout)}")


# ---- helpers: outputs, traces, `cutrace dump` -------------------------------------------------

def tail(text, n=300):
    text = " | ".join(line for line in text.strip().splitlines() if line.strip())
    return text if len(text) <= n else "..." + text[-n:]


def traces(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".cutrace")) if os.path.isdir(d) else []


def by_name(j):
    return {k["name"]: k for k in j["kernels"]}


def check_counts(c, kernels, want):
    c.equal("kernel names", sorted(kernels), sorted(want))
    for name, n in want.items():
        if name in kernels:
            c.equal(f"{name} count", kernels[name]["count"], n)


def dump_kernels(s, c, trace):
    """(name, stream, cpu_begin, cpu_end, gpu_start, gpu_end) of each Kernel record (`cutrace dump`)."""
    p = s.run([s.cutrace, "dump", "--type", "Kernel", trace])
    c.require(p.returncode == 0, f"`cutrace dump` exited {p.returncode}: {tail(p.stderr)}")
    pat = re.compile(r'stream=(\d+) .*?cpu=\[(-?\d+)\.\.(-?\d+)\].*? gpu=\[(-?\d+)\.\.(-?\d+)\]'
                     r'.*? name=#\d+ "([^"]*)"')
    recs = []
    for line in p.stdout.splitlines():
        m = pat.search(line)
        if m:
            recs.append((m.group(6), *(int(m.group(i)) for i in range(1, 6))))
    c.require(recs, f"no Kernel record understood in `cutrace dump` output: {tail(p.stdout)}")
    return recs


def trace_meta(s, c, trace):
    """The trace's meta entries, {key: value} (the last one of a key wins)."""
    p = s.run([s.cutrace, "dump", "--type", "Meta", trace])
    c.require(p.returncode == 0, f"`cutrace dump --type Meta` exited {p.returncode}: {tail(p.stderr)}")
    return dict(re.findall(r'Meta +key=#\d+ "([^"]*)" value=#\d+ "([^"]*)"', p.stdout))


def dump_ops(s, c, trace, rec_type):
    """(cpu_begin, gpu_start, gpu_end, flags) of each rec_type record (Kernel, Memcpy, Memset),
    read line by line from `cutrace dump`, so that a dump of millions of records is never held whole."""
    env = preload_env(dict(s.env))
    pat = re.compile(r" cpu=\[(-?\d+)\.\.-?\d+\].*? gpu=\[(-?\d+)\.\.(-?\d+)\].*? flags=(\S+)")
    ops = []
    with subprocess.Popen([s.cutrace, "dump", "--type", rec_type, trace], env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace") as p:
        for line in p.stdout:
            m = pat.search(line) if f" {rec_type} " in line else None
            if m:
                ops.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)))
    c.require(p.returncode == 0, f"`cutrace dump --type {rec_type}` exited {p.returncode}")
    return ops


def dump_fields(s, c, trace, rec_type):
    """key=value fields of each `cutrace dump --type rec_type` line (names: the quoted text)."""
    p = s.run([s.cutrace, "dump", "--type", rec_type, trace])
    c.require(p.returncode == 0, f"`cutrace dump --type {rec_type}` exited {p.returncode}: {tail(p.stderr)}")
    out = []
    for line in p.stdout.splitlines():
        if f" {rec_type} " not in line:
            continue
        f = {k: v for k, v in re.findall(r'(\w+)=(\[[^\]]*\]|#\d+ "(?:[^"\\]|\\.)*"|\S+)', line)}
        for k, v in list(f.items()):
            m = re.match(r'#\d+ "(.*)"$', v)
            if m:
                f[k] = m.group(1)
            m = re.match(r"\[(-?\d+)\.\.(-?\d+)\]$", v)
            if m:
                f[k] = (int(m.group(1)), int(m.group(2)))
        out.append(f)
    return out


def ranges_by_name(j):
    return {r["name"]: r for r in j.get("ranges", [])}


def fault_popen(s, argv, d, **kw):
    """argv with the shim preloaded, writing into d; no sampling (so no NVML warning on stderr)."""
    env = dict(s.env)
    env.update({"LD_PRELOAD": s.shim, "CUTRACE_OUTPUT": d, "CUTRACE_SAMPLE_HZ": "0"})
    preload_env(env)
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, text=True, errors="replace", **kw)


def fault_run(s, argv, d, timeout=30, **kw):
    """Runs argv with the shim preloaded: (returncode, stdout, stderr)."""
    p = fault_popen(s, argv, d, **kw)
    try:
        out, err = p.communicate(timeout=timeout * TIME_SCALE)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out, err


def one_trace(s, c, d):
    """The only trace file in d: (path, summary JSON, rank entry, kernel launches)."""
    c.require(len(traces(d)) == 1, f"trace files {traces(d)}, expected 1")
    path = os.path.join(d, traces(d)[0])
    j = s.summary(c, path)
    return path, j, j["ranks"][0], sum(k["count"] for k in j["kernels"])


def dump_lines(s, c, trace, rec_type):
    """The field text of each record of one type (`cutrace dump --type T`)."""
    p = s.run([s.cutrace, "dump", "--type", rec_type, trace])
    c.require(p.returncode == 0, f"`cutrace dump --type {rec_type}` exited {p.returncode}: {tail(p.stderr)}")
    return [line for line in p.stdout.splitlines() if re.match(rf"^\s*\d+\s+\S*\s+{rec_type}\s", line)]


# ---- peak RSS -------------------------------------------------------------------------------

class Measured:
    """A finished command: returncode, stdout, stderr (bytes), peak RSS in bytes, wall seconds."""

    def __init__(self, argv, returncode, out, err, rss, secs):
        self.argv, self.returncode, self.out, self.err, self.rss, self.secs = argv, returncode, out, err, rss, secs

    def text(self):
        return (self.out + self.err).decode(errors="replace")


# Runs argv in a fresh, small python3 that forks it and reports its peak RSS (wait4): a child
# forked from this suite would count the suite's own resident memory as its peak (the peak of
# the image before exec is kept). Writes "rss status" to the file argv[2]. The command's
# LD_PRELOAD comes in MEASURE_LD_PRELOAD, so that the python3 itself runs without it.
MEASURE = r"""
import os, resource, sys
cap, out = int(sys.argv[1]), sys.argv[2]
pid = os.fork()
if pid == 0:
    try:
        if "MEASURE_LD_PRELOAD" in os.environ:
            os.environ["LD_PRELOAD"] = os.environ.pop("MEASURE_LD_PRELOAD")
        if cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        os.execvp(sys.argv[3], sys.argv[3:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(f"{ru.ru_maxrss * 1024} {os.waitstatus_to_exitcode(status)}")
"""


def run_measured(s, argv, timeout=30, cap_memory=True, extra_env=None):
    """Runs argv (in env_of(s, extra_env)) with its own peak RSS; None when it ran past timeout
    (then killed). Outside a sanitizer run, with cap_memory, its address space is capped at 2 GiB,
    so that a tool that sizes a table by a hostile id fails (bad_alloc) instead of taking the
    machine's memory."""
    cap = 2 << 30 if cap_memory and not SAN_PRELOAD else 0
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as res:
        t0 = time.monotonic()
        env = env_of(s, extra_env)
        if "LD_PRELOAD" in env:
            env["MEASURE_LD_PRELOAD"] = env.pop("LD_PRELOAD")
        p = subprocess.Popen([sys.executable, "-c", MEASURE, str(cap), res.name, *argv], env=env,
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


# ---- runner -----------------------------------------------------------------------------------

def run_test(t, s):
    c = Checks()
    try:
        t(s, c)
    except Failed:
        pass
    except subprocess.TimeoutExpired as e:
        c.errors.append(f"timed out after {e.timeout} s: {e.cmd}")
    except Exception as e:  # a bug in the test or an unexpected output shape
        c.errors.append(f"{type(e).__name__}: {e}")
    return c


def sanitizer_reports():
    """The report files of the sanitizer run (test/sanitize/run.sh sets log_path), if any."""
    m = re.search(r"log_path=(\S+)", os.environ.get("ASAN_OPTIONS", "") if SAN_PRELOAD else "")
    return set(glob.glob(m.group(1) + ".*")) if m else set()


def lsan_internal_crash(reports):
    """The first line of a report in which LeakSanitizer's tracer itself crashed (GCC 12's
    runtime, in CI: "Tracer caught signal 11", then "LeakSanitizer has encountered a
    fatal error"), else None. Such a report holds no finding."""
    for path in sorted(reports):
        with open(path, errors="replace") as f:
            text = f.read()
        if "LeakSanitizer has encountered a fatal error" in text and "Tracer caught signal" in text \
                and "ERROR:" not in text:
            return text.splitlines()[0]
    return None


def main(doc):
    """Runs the registered tests (or those named on the command line); doc: the --help text."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"), help="build directory")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--strict-means", action="store_true",
                    help="threads: the summary means alone decide (see check_means)")
    ap.add_argument("--strict-known-bugs", action="store_true",
                    help="a known bug (Checks.known_bug) fails its test instead of printing a note")
    ap.add_argument("names", nargs="*", help="run only these tests")
    a = ap.parse_args()
    unknown = set(a.names) - {t.__name__ for t in TESTS}
    if unknown:
        sys.exit(f"check.py: unknown test(s) {sorted(unknown)}; known: {[t.__name__ for t in TESTS]}")
    s = Suite(a.build, a.keep, a.strict_means)
    Checks.strict_known_bugs = a.strict_known_bugs
    passed = failed = 0
    # name=reason,...: tests a sanitizer run cannot run (test/sanitize/run.sh says why)
    skip = dict(x.split("=", 1) for x in os.environ.get("CUTRACE_TEST_SKIP", "").split(",") if "=" in x)
    try:
        for t in TESTS:
            if a.names and t.__name__ not in a.names:
                continue
            if t.__name__ in skip:
                print(f"SKIP {t.__name__}: {skip[t.__name__]}", flush=True)
                continue
            before = sanitizer_reports()
            c = run_test(t, s)
            crash = lsan_internal_crash(sanitizer_reports() - before)
            reruns = 0
            while c.errors and crash and reruns < 3:
                # LeakSanitizer's own tracer crashed at exit (not a leak: it found nothing, it
                # could not look) and the program exited 1: run the test again, up to 3 times
                # (it can crash in a test and in a rerun of it, at the same address).
                reruns += 1
                before = sanitizer_reports()
                c = run_test(t, s)
                c.notes.append(f"run again ({reruns}) after LeakSanitizer failed internally ({crash})")
                crash = lsan_internal_crash(sanitizer_reports() - before)
            if c.errors:
                failed += 1
                print(f"FAIL {t.__name__}: " + "; ".join(c.errors), flush=True)
            else:
                passed += 1
                print(f"PASS {t.__name__}", flush=True)
            for note in c.notes:
                print(f"note {t.__name__}: {note}", file=sys.stderr, flush=True)
    finally:
        if a.keep:
            print(f"(temporary files kept in {s.root})", file=sys.stderr)
        else:
            shutil.rmtree(s.root, ignore_errors=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0
