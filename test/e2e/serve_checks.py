"""End-to-end tests of `cutrace serve` (imported by check.py, which runs them with the others):
the HTTP server started on a directory of jobs recorded on the fake driver, queried with the
standard library only (http.client / raw sockets: urllib would normalise the hostile paths away).
docs/RELIABILITY.md names the promises these tests guard."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time

from harness import test


def job_id(name):
    """tools/serve/job_dir.cpp job_id(): FNV-1a 64 of the job's name, 16 hex digits."""
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


class Server:
    """`cutrace serve ROOT --port 0 [args]`, stopped (SIGTERM) on exit."""

    def __init__(self, s, c, root, *args):
        self.c = c
        self.p = subprocess.Popen([s.cutrace, "serve", root, "--port", "0", *args], env=s.env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, errors="replace")
        line = self.p.stdout.readline()
        m = re.match(r"cutrace serve: http://([^/]+):(\d+)/\?token=([0-9a-f]{48}) serving (.*)$", line.strip())
        if not m:
            self.stop()
            c.require(False, f"cutrace serve printed {line!r}, stderr {self.p.stderr.read()[:300]!r}")
        self.host, self.port, self.token = m.group(1), int(m.group(2)), m.group(3)
        self.auth = f"Authorization: Bearer {self.token}\r\n".encode()  # for raw requests

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                self.c.expect(False, "cutrace serve did not stop within 15 s of SIGTERM")

    def request(self, method, path, headers=None, body=None, token=True):
        """(status, headers dict, body bytes); the path is sent exactly as given, with the token
        (Authorization header) unless token=False."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        if method == "POST" and body is None:
            body = b""  # Content-Length: 0, as browsers send
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            hdrs = {"Host": f"127.0.0.1:{self.port}"}
            if token:
                hdrs["Authorization"] = f"Bearer {self.token}"
            hdrs.update(headers or {})
            for k, v in hdrs.items():
                conn.putheader(k, v)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def get_json(self, path, method="GET"):
        status, _, body = self.request(method, path)
        self.c.require(status == 200, f"{method} {path}: HTTP {status}: {body[:300]!r}")
        return json.loads(body)

    def raw(self, data, read=True):
        """Sends bytes on a fresh connection; the first response line ('' if the server closed the
        connection before answering, as it may while the client is still sending)."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=15)
        try:
            try:
                sock.sendall(data)
            except OSError:
                pass
            try:
                return sock.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
            except OSError:
                return ""
        finally:
            sock.close()

    def rss_kib(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def record_exit(s, c, d, n=200):
    """fault_app exit N under `cutrace record`: one complete trace."""
    s.record(c, d, [s.prog("fault_app"), "exit", str(n)], extra_env={"CUTRACE_SAMPLE_HZ": "0"})


def jobs_by_name(srv, query=""):
    return {j["name"]: j for j in srv.get_json("/api/jobs" + query)["jobs"]}


@test
def serve_binds_loopback_and_lists_jobs(s, c):
    """Without --host the server listens on 127.0.0.1 only (/proc/net/tcp); the job list has each
    job directory with its rank count, total size and creation time, and filters by name, status
    and time."""
    root = s.tmpdir("serve-list")
    t_before = time.time_ns()
    record_exit(s, c, os.path.join(root, "exp", "RunA"))
    s.record(c, os.path.join(root, "exp", "run_b"), ["sh", "-c", f"{s.prog('routes')} && {s.prog('copies')}"])
    t_after = time.time_ns()
    with Server(s, c, root) as srv:
        c.equal("printed address", srv.host, "127.0.0.1")
        listening = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            if os.path.exists(table):
                for line in open(table).read().splitlines()[1:]:
                    f = line.split()
                    addr, port = f[1].rsplit(":", 1)
                    if int(port, 16) == srv.port and f[3] == "0A":
                        listening.append(addr)
        c.equal("listening sockets on the port", listening, ["0100007F"])
        jobs = jobs_by_name(srv)
        c.equal("job names", sorted(jobs), ["exp/RunA", "exp/run_b"])
        for name, ranks in (("exp/RunA", 1), ("exp/run_b", 2)):
            j = jobs.get(name, {})
            d = os.path.join(root, name)
            files = [f for f in os.listdir(d) if f.endswith(".cutrace")]
            c.equal(f"{name} ranks", j.get("ranks"), ranks)
            c.equal(f"{name} size_bytes", j.get("size_bytes"), sum(os.path.getsize(os.path.join(d, f)) for f in files))
            c.equal(f"{name} status", j.get("status"), "completed")
            c.equal(f"{name} id", j.get("id"), job_id(name))
            c.expect(t_before <= j.get("created_ns", 0) <= t_after,
                     f"{name} created_ns {j.get('created_ns')} outside the recording [{t_before}, {t_after}]")
        c.equal("name filter (case-insensitive)", sorted(jobs_by_name(srv, "?name=runa")), ["exp/RunA"])
        c.equal("status filter completed", len(jobs_by_name(srv, "?status=completed")), 2)
        c.equal("status filter failed,running", len(jobs_by_name(srv, "?status=failed,running")), 0)
        c.require(len(jobs) == 2, "two jobs needed for the time filters")
        older, newer = sorted(jobs, key=lambda n: jobs[n]["created_ns"])
        split_ms = jobs[newer]["created_ns"] // 1_000_000  # recordings are much more than 1 ms apart
        c.equal("from filter", sorted(jobs_by_name(srv, f"?from={split_ms}")), [newer])
        c.equal("to filter", sorted(jobs_by_name(srv, f"?to={split_ms - 1}")), [older])
        for bad in ("?status=bogus", "?from=12abc", "?to=99999999999999999999999"):
            status, _, _ = srv.request("GET", "/api/jobs" + bad)
            c.equal(f"/api/jobs{bad} status", status, 400)


@test
def serve_job_list_notes_separate_runs(s, c):
    """A directory holding two `cutrace record -o DIR` runs is not listed as one job without a
    word: the job list carries the notes the summary and the report give of separate runs (and
    the page marks the job "mixed runs"); one run with two CUDA processes has none."""
    root = s.tmpdir("serve-runs")
    loop = s.prog("launch_loop")
    s.record(c, os.path.join(root, "one"), ["sh", "-c", f"{loop} 30 & {loop} 40; wait"])
    for n in ("30", "40"):
        s.record(c, os.path.join(root, "two"), [loop, n])
    with Server(s, c, root) as srv:
        jobs = jobs_by_name(srv)
        c.equal("job names", sorted(jobs), ["one", "two"])
        c.equal("one: ranks", jobs.get("one", {}).get("ranks"), 2)
        c.equal("one: notes", jobs.get("one", {}).get("notes"), [])
        notes = jobs.get("two", {}).get("notes", [])
        c.expect(len(notes) == 1 and notes[0].startswith("traces of 2 separate runs"), f"two: notes {notes}")


@test
def serve_job_status_from_files(s, c):
    """running: a traced process still alive; completed: clean End; failed: End written from a
    signal handler (SIGTERM); stopped: no End and the process gone (SIGKILL), file not touched
    since. The running job turns failed once it is terminated. Each says why ("reason")."""
    root = s.tmpdir("serve-status")
    record_exit(s, c, os.path.join(root, "done"))
    env = dict(s.env, LD_PRELOAD=s.shim, CUTRACE_SAMPLE_HZ="0")
    killed = subprocess.Popen([s.prog("fault_app"), "loop", "1.5"], env=dict(env, CUTRACE_OUTPUT=os.path.join(root, "killed")),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    live = subprocess.Popen([s.prog("fault_app"), "wait", "100"], env=dict(env, CUTRACE_OUTPUT=os.path.join(root, "live")),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        c.require([live.stdout.readline(), live.stdout.readline()][1] == "ready\n", "fault_app wait did not get ready")
        time.sleep(1.2)
        killed.kill()
        killed.wait()
        d = os.path.join(root, "killed")
        for f in os.listdir(d):  # older than the 5 s grace for files still being written
            old = time.time() - 60
            os.utime(os.path.join(d, f), (old, old))
        with Server(s, c, root) as srv:
            jobs = jobs_by_name(srv)
            got = {n: j["status"] for n, j in jobs.items()}
            c.equal("statuses", got, {"done": "completed", "killed": "stopped", "live": "running"})
            reasons = {n: j.get("reason", "") for n, j in jobs.items()}
            c.equal("done's reason", reasons["done"], "exit status 0")
            c.expect(reasons["killed"].startswith("no end record and no longer written"), f"killed's reason {reasons['killed']!r}")
            c.expect(re.fullmatch(r"recording, .+ written so far", reasons["live"]), f"live's reason {reasons['live']!r}")
            live.send_signal(signal.SIGTERM)
            live.wait(timeout=10)
            after = jobs_by_name(srv).get("live", {})
            c.equal("live after SIGTERM", after.get("status"), "failed")
            c.equal("live's reason after SIGTERM", after.get("reason"), "killed by SIGTERM")
            c.equal("status filter stopped", sorted(jobs_by_name(srv, "?status=stopped")), ["killed"])
    finally:
        for p in (killed, live):
            if p.poll() is None:
                p.kill()
                p.wait()


@test
def serve_refuses_paths_outside_dir(s, c):
    """Nothing outside DIR is served: `..` and its encodings, absolute paths and URLs, a
    directory symlink out of DIR (not listed), a job whose trace is a symlink out (refused);
    every one answers 4xx without a byte of the outside files."""
    base = s.tmpdir("serve-jail")
    root, outside = os.path.join(base, "root"), os.path.join(base, "outside")
    record_exit(s, c, os.path.join(root, "good"))
    record_exit(s, c, os.path.join(outside, "secret_job"))
    marker = "SECRET-MARKER-7f3a"
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write(marker + "\n")
    os.symlink(os.path.join(outside, "secret_job"), os.path.join(root, "linked_dir"))
    os.makedirs(os.path.join(root, "mixed"))
    record_exit(s, c, os.path.join(root, "mixed"))
    secret_trace = [f for f in os.listdir(os.path.join(outside, "secret_job")) if f.endswith(".cutrace")][0]
    os.symlink(os.path.join(outside, "secret_job", secret_trace), os.path.join(root, "mixed", "zz.rank1.pid1.cutrace"))
    with open(os.path.join(outside, "secret_job", secret_trace), "rb") as f:
        secret_head = f.read(64)
    good = job_id("good")
    with Server(s, c, root) as srv:
        c.equal("listed jobs", sorted(jobs_by_name(srv)), ["good"])
        paths = ["/../outside/secret.txt", "/..%2foutside%2fsecret.txt", "/%2e%2e/outside/secret.txt",
                 "/%2E%2E%2Foutside%2Fsecret.txt", "/..%5coutside%5csecret.txt", "//etc/passwd",
                 "/etc/passwd", f"/job/{good}/../../outside/secret.txt",
                 f"/job/{good}/%2e%2e/%2e%2e/outside/secret.txt", f"/job/{good}/..%2f..%2foutside%2fsecret.txt",
                 "/job/../../outside/secret_job/", "/api/jobs/..%2f..%2foutside/dashboard",
                 f"http://127.0.0.1:{srv.port}/../outside/secret.txt", f"/job/{good}/%00../secret.txt",
                 f"/job/{good}/style.css/../../../outside/secret.txt", f"/{outside}/secret.txt",
                 f"/job/{job_id('linked_dir')}/", f"/api/jobs/{job_id('linked_dir')}/dashboard",
                 f"/api/jobs/{job_id('mixed')}/dashboard", f"/job/{job_id('mixed')}/timeline.json?t0=0&t1=9&px=9",
                 f"/job/{job_id('mixed')}/", f"/api/jobs/{job_id('../outside/secret_job')}/dashboard"]
        for path in paths:
            status, _, body = srv.request("GET", path)
            c.expect(400 <= status < 500, f"GET {path}: HTTP {status}, expected 4xx")
            c.expect(marker.encode() not in body and secret_head not in body, f"GET {path}: outside bytes in the answer")
        for path in (f"/api/jobs/{job_id('mixed')}/load", f"/api/jobs/{job_id('linked_dir')}/load"):
            status, _, _ = srv.request("POST", path)
            c.equal(f"POST {path}", status, 404)
        status, _, _ = srv.request("GET", f"/api/jobs/{good}/dashboard")
        c.equal("the job inside DIR still loads", status, 200)


@test
def serve_bounds_request_sizes(s, c):
    """An over-long request line (414), header line (400), too many header lines (431), a body
    over 4 KiB (413), a chunked body (411) and a flood of headers (connection closed at 64 KiB)
    are refused without the server's memory growing; it keeps answering."""
    root = s.tmpdir("serve-limits")
    record_exit(s, c, os.path.join(root, "a"))
    with Server(s, c, root) as srv:
        host = f"Host: 127.0.0.1:{srv.port}\r\n".encode()
        unload = f"POST /api/jobs/{job_id('a')}/unload HTTP/1.1\r\n".encode()
        rss0 = srv.rss_kib()
        cases = [
            ("request line", b"GET /" + b"a" * 10000 + b" HTTP/1.1\r\n" + host + b"\r\n", "414"),
            ("header line", b"GET / HTTP/1.1\r\n" + host + b"X-Long: " + b"a" * 10000 + b"\r\n\r\n", "400"),
            ("header count", b"GET / HTTP/1.1\r\n" + host + b"".join(b"X-%d: a\r\n" % i for i in range(100)) + b"\r\n", "431"),
            ("body", unload + host + b"Content-Length: 1000000\r\n\r\n" + b"a" * 5000, "413"),
            ("chunked body", unload + host + b"Transfer-Encoding: chunked\r\n\r\n", "411"),
        ]
        for what, data, want in cases:
            line = srv.raw(data)
            c.expect(line.split(" ")[1:2] == [want], f"{what}: answered {line!r}, expected {want}")
        # 50 MB of header lines: httplib 0.11 alone would buffer them all.
        sock = socket.create_connection(("127.0.0.1", srv.port), timeout=15)
        sent = 0
        try:
            sock.sendall(b"GET / HTTP/1.1\r\n" + host)
            chunk = b"".join(b"X-%d: %s\r\n" % (i, b"a" * 1000) for i in range(1000))
            for _ in range(50):
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        finally:
            sock.close()
        c.expect(sent < 50 * len(chunk), "the server read 50 MB of headers without closing the connection")
        grown = srv.rss_kib() - rss0
        if not os.environ.get("CUTRACE_TEST_SAN_PRELOAD"):  # a sanitizer's own memory is not the server's
            c.expect(grown < 8 * 1024, f"server memory grew by {grown} KiB while refusing requests")
        status, _, _ = srv.request("GET", "/api/jobs")
        c.equal("still answering", status, 200)
        c.notes.append(f"header flood: connection closed after {sent} bytes sent; RSS {rss0} -> {srv.rss_kib()} KiB")


@test
def serve_checks_host_header(s, c):
    """Bound to loopback, only requests addressed to a loopback name are answered (a page on
    another site cannot read the jobs through DNS rebinding); answers carry the security headers."""
    root = s.tmpdir("serve-host")
    record_exit(s, c, os.path.join(root, "a"))
    with Server(s, c, root) as srv:
        for host, want in ((f"127.0.0.1:{srv.port}", 200), (f"localhost:{srv.port}", 200),
                           (f"evil.example:{srv.port}", 421), ("evil.example", 421), (f"127.0.0.1:{srv.port + 1}", 421)):
            status, headers, _ = srv.request("GET", "/api/jobs", {"Host": host})
            c.equal(f"Host {host}", status, want)
        status, headers, _ = srv.request("GET", "/")
        c.equal("GET / status", status, 200)
        c.equal("nosniff", headers.get("x-content-type-options"), "nosniff")
        c.expect("script-src 'self'" in headers.get("content-security-policy", ""),
                 f"CSP {headers.get('content-security-policy')!r}")
        c.equal("frame options", headers.get("x-frame-options"), "DENY")


@test
def serve_job_ids_never_reach_a_shell(s, c):
    """Job ids that would be shell commands are unknown ids (404) and run nothing."""
    root = s.tmpdir("serve-shell")
    record_exit(s, c, os.path.join(root, "a"))
    canary = os.path.join(s.tmpdir("serve-canary"), "pwned")
    with Server(s, c, root) as srv:
        for evil in (f"$(touch%20{canary})", f";touch%20{canary}", f"|touch%20{canary}", f"`touch%20{canary}`",
                     f"a%0atouch%20{canary}", f"&&touch%20{canary}"):
            for path in (f"/api/jobs/{evil}/dashboard", f"/job/{evil}/", f"/api/jobs/{evil}/timeline?t0=0&t1=1&px=1"):
                status, _, _ = srv.request("GET", path)
                c.equal(f"GET {path}", status, 404)
            status, _, _ = srv.request("POST", f"/api/jobs/{evil}/load")
            c.equal(f"POST load {evil}", status, 404)
        c.expect(not os.path.exists(canary), "a request created the canary file")


def strings_in(doc):
    """Every string (keys and values) of a JSON document."""
    out = []
    stack = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            out.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, str):
            out.append(x)
    return out


HOSTILE_KERNELS = ["<img/src=x/onerror=alert(1)>", "</script><script>alert(2)</script>", "\"quoted'\\name`${alert(3)}`"]
HOSTILE_RANGES = ["<img src=x onerror=alert(4)>", "</script><svg onload=alert(5)>"]
HOSTILE_JOB = "<img src=x onerror=alert(9)>"


@test
def serve_hostile_names_escaped(s, c):
    """Kernel, NVTX and job names that are HTML/JS/JSON (test/e2e/hostile_names.cpp, a job
    directory named like an <img> tag) come back intact in valid JSON (strict parser; the
    byte that is not UTF-8 as U+FFFD), and never appear in the HTML the server sends."""
    root = s.tmpdir("serve-hostile")
    d = os.path.join(root, HOSTILE_JOB)
    s.record(c, d, [s.prog("hostile_names")], extra_env={"CUTRACE_SAMPLE_HZ": "0"})
    jid = job_id(HOSTILE_JOB)
    with Server(s, c, root) as srv:
        status, headers, body = srv.request("GET", "/api/jobs")
        c.equal("list content type", headers.get("content-type"), "application/json; charset=utf-8")
        listed = [j["name"] for j in json.loads(body.decode("utf-8"))["jobs"]]
        c.equal("hostile job name listed intact", listed, [HOSTILE_JOB])
        docs = {}
        for what, path in (("dashboard", f"/api/jobs/{jid}/dashboard"),
                           ("timeline", f"/job/{jid}/timeline.json?t0=0&t1=9223372036854775807&px=4000")):
            status, headers, body = srv.request("GET", path)
            c.require(status == 200, f"{what}: HTTP {status}: {body[:300]!r}")
            try:
                docs[what] = json.loads(body.decode("utf-8", errors="strict"))
            except ValueError as e:
                c.require(False, f"{what}: not valid UTF-8 JSON: {e}")
        found = set(strings_in(docs["dashboard"])) | set(strings_in(docs["timeline"]))
        blob = "\n".join(found)
        for name in HOSTILE_KERNELS + HOSTILE_RANGES:
            c.expect(name in blob, f"{name!r} not found intact in the dashboard or timeline JSON")
        c.expect("bad utf8 \ufffd\ufffd end" in blob or "bad utf8 \ufffd end" in blob,
                 "the range name with bytes that are not UTF-8 is not in the JSON with U+FFFD")
        for path in ("/", f"/job/{jid}/", "/jobs.js", f"/job/{jid}/app.js"):
            status, _, body = srv.request("GET", path)
            c.equal(f"GET {path}", status, 200)
            for name in HOSTILE_KERNELS + HOSTILE_RANGES + [HOSTILE_JOB]:
                c.expect(name.encode() not in body, f"GET {path} contains {name!r} unescaped")


@test
def serve_load_unload_and_eviction(s, c):
    """POST load marks a job loaded in the list, unload frees it; with --max-loaded 1, loading a
    second job drops the first; a POST without Content-Length is answered at once; malformed
    timeline queries are 400."""
    root = s.tmpdir("serve-load")
    record_exit(s, c, os.path.join(root, "a"))
    record_exit(s, c, os.path.join(root, "b"))
    a, b = job_id("a"), job_id("b")
    with Server(s, c, root, "--max-loaded", "1") as srv:
        loaded = lambda: {n: j["loaded"] for n, j in jobs_by_name(srv).items()}
        c.equal("nothing loaded at start", loaded(), {"a": False, "b": False})
        r = srv.get_json(f"/api/jobs/{a}/load", "POST")
        c.equal("load answer", (r.get("loaded"), r.get("job", {}).get("name")), (True, "a"))
        c.equal("a loaded", loaded(), {"a": True, "b": False})
        srv.get_json(f"/api/jobs/{b}/dashboard")
        c.equal("b loaded by its dashboard, a dropped", loaded(), {"a": False, "b": True})
        r = srv.get_json(f"/api/jobs/{b}/unload", "POST")
        c.equal("unload answer", (r.get("loaded"), r.get("was_loaded")), (False, True))
        c.equal("nothing loaded after unload", loaded(), {"a": False, "b": False})
        # A POST without Content-Length (curl -X POST) is answered at once, not after the read
        # timeout (httplib would wait for a body).
        t = time.monotonic()
        line = srv.raw(f"POST /api/jobs/{a}/load HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n".encode() + srv.auth + b"\r\n")
        took = time.monotonic() - t
        c.expect(line.startswith("HTTP/1.1 200") and took < 3, f"POST without Content-Length: {line!r} after {took:.1f} s")
        for q in ("t0=5&t1=5&px=10", "t0=0&t1=10&px=0", "t0=0&t1=10&px=100000", "t0=x&t1=10&px=10"):
            status, _, _ = srv.request("GET", f"/api/jobs/{a}/timeline?{q}")
            c.equal(f"timeline?{q}", status, 400)


@test
def serve_requires_the_token(s, c):
    """The URL the server prints carries a token (48 hex digits, new each start), as Jupyter's
    does; every route but /favicon.ico refuses a request without it (API and POST: 401 JSON; a
    page: a 401 HTML page saying to use the printed URL), and with a wrong one. The token is
    accepted as ?token=, as `Authorization: Bearer|token`, or as the cookie that opening a page
    with ?token= sets (HttpOnly, SameSite=Strict) while redirecting to the address without it.
    Fails (200 to everyone: a process of another user read a 0700 directory served by root)
    without the token check."""
    root = s.tmpdir("serve-token")
    record_exit(s, c, os.path.join(root, "a"))
    a = job_id("a")
    with Server(s, c, root) as srv, Server(s, c, root) as other:
        c.expect(srv.token != other.token, "two servers printed the same token")
        wrong = "0" * 48
        for method, path in (("GET", "/api/jobs"), ("GET", f"/api/jobs/{a}/dashboard"), ("POST", f"/api/jobs/{a}/load"),
                             ("POST", f"/api/jobs/{a}/unload"), ("GET", f"/job/{a}/timeline.json"), ("GET", "/"),
                             ("GET", f"/job/{a}/"), ("GET", "/jobs.js"), ("GET", f"/job/{a}/dashboard.json")):
            for what, hdrs in (("no token", {}), ("a wrong token", {"Authorization": f"Bearer {wrong}"}),
                               ("a wrong cookie", {"Cookie": f"cutrace_token={wrong}"}),
                               ("the other server's token", {"Authorization": f"Bearer {other.token}"})):
                status, headers, body = srv.request(method, path, hdrs, token=False)
                c.equal(f"{method} {path} with {what}", status, 401)
                if path.startswith("/api/") or method == "POST":
                    c.expect(b"token" in body and headers.get("content-type", "").startswith("application/json"),
                             f"{method} {path}: 401 body {body[:200]!r}")
                else:
                    c.expect(b"<h1>401" in body and b"?token=" in body and b"<script" not in body,
                             f"{method} {path}: 401 page {body[:300]!r}")
        status, _, _ = srv.request("GET", "/favicon.ico", token=False)
        c.equal("favicon without the token", status, 204)
        status, _, _ = srv.request("GET", f"/api/jobs?token={srv.token}", token=False)
        c.equal("?token= on an API call", status, 200)
        status, _, _ = srv.request("GET", "/api/jobs", {"Authorization": f"token {srv.token}"}, token=False)
        c.equal("Authorization: token", status, 200)
        status, headers, _ = srv.request("GET", f"/?token={srv.token}", token=False)
        c.equal("the printed URL: redirect", (status, headers.get("location")), (303, "/"))
        cookie = headers.get("set-cookie", "")
        c.expect(cookie.startswith(f"cutrace_token={srv.token};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie,
                 f"Set-Cookie {cookie!r}")
        for method, path in (("GET", "/"), ("GET", f"/job/{a}/"), ("POST", f"/api/jobs/{a}/load"), ("GET", "/api/jobs")):
            status, _, _ = srv.request(method, path, {"Cookie": f"x=1; cutrace_token={srv.token}"}, token=False)
            c.equal(f"{method} {path} with the cookie", status, 200)


@test
def serve_refuses_cross_origin_state_changes(s, c):
    """POST load and unload (with the token: the browser sends its cookie) are refused (403) when
    Origin is another origin or "null", or Sec-Fetch-Site says another site; from the server's
    own pages (Origin http://127.0.0.1:PORT, Sec-Fetch-Site same-origin), and from a client that
    sends no Origin (curl), they work. Fails (200: load and unload accepted Origin
    http://evil.example and null) without the Origin check."""
    root = s.tmpdir("serve-origin")
    record_exit(s, c, os.path.join(root, "a"))
    a = job_id("a")
    with Server(s, c, root) as srv:
        for action in ("load", "unload"):
            path = f"/api/jobs/{a}/{action}"
            for hdrs in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Origin": f"http://127.0.0.1:{srv.port + 1}"},
                         {"Origin": f"https://127.0.0.1:{srv.port}"}, {"Sec-Fetch-Site": "cross-site"},
                         {"Sec-Fetch-Site": "same-site"}, {"Origin": f"http://127.0.0.1:{srv.port}", "Sec-Fetch-Site": "cross-site"}):
                status, _, body = srv.request("POST", path, hdrs)
                c.expect(status == 403 and b"origin" in body, f"POST {action} with {hdrs}: HTTP {status} {body[:120]!r}")
            for hdrs in ({"Origin": f"http://127.0.0.1:{srv.port}", "Sec-Fetch-Site": "same-origin"}, {}):
                status, _, body = srv.request("POST", path, hdrs)
                c.equal(f"POST {action} with {hdrs}", status, 200)
        c.equal("loaded after the refused loads and the last unload", jobs_by_name(srv)["a"]["loaded"], False)


@test
def serve_idle_and_slow_clients_do_not_starve_others(s, c):
    """200 connections that send nothing and 16 that send a request head one byte every 0.3 s do
    not keep another client waiting: it is answered within 1 s, and again while they go on; the
    idle ones are closed once they have held their connection 10 s without a request. Fails (16
    slow or 200 idle connections: every worker taken, the request timed out) when a worker
    thread waits on each connection."""
    root = s.tmpdir("serve-idle")
    record_exit(s, c, os.path.join(root, "a"))
    with Server(s, c, root) as srv:
        idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(200)]
        head = f"GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n".encode() + srv.auth + b"\r\n"
        slow = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(16)]
        opened = time.monotonic()
        try:
            sent = 0
            for round_ in range(6):
                for sk in slow:
                    try:
                        sk.sendall(head[sent:sent + 1])
                    except OSError:
                        pass
                sent += 1
                t = time.monotonic()
                status, _, _ = srv.request("GET", "/api/jobs")
                took = time.monotonic() - t
                c.expect(status == 200 and took < 1.0, f"round {round_}: HTTP {status} after {took:.2f} s")
                time.sleep(0.3)
            time.sleep(max(0.0, opened + 11.5 - time.monotonic()))
            closed = 0
            for sk in idle:
                sk.settimeout(2)
                try:
                    closed += sk.recv(1) == b""
                except OSError:
                    closed += 1
            c.equal("idle connections closed after 10 s", closed, len(idle))
            status, _, _ = srv.request("GET", "/api/jobs")
            c.equal("still answering", status, 200)
        finally:
            for sk in idle + slow:
                sk.close()


@test
def serve_unreadable_job_is_a_clear_error(s, c):
    """A job whose every trace is unreadable (an empty file, a text file): its dashboard and
    timeline answer 422 with the reason, naming the files, as JSON; its page loads (and shows the
    reason, browser test); an unknown job's page is a 404 HTML page, not JSON."""
    root = s.tmpdir("serve-unreadable")
    d = os.path.join(root, "broken")
    os.makedirs(d)
    open(os.path.join(d, "empty.rank0.pid1.cutrace"), "w").close()
    with open(os.path.join(d, "text.rank1.pid2.cutrace"), "w") as f:
        f.write("not a trace\n")
    b = job_id("broken")
    with Server(s, c, root) as srv:
        for path in (f"/api/jobs/{b}/dashboard", f"/job/{b}/dashboard.json", f"/job/{b}/timeline.json"):
            status, headers, body = srv.request("GET", path)
            c.equal(f"GET {path}", status, 422)
            try:
                msg = json.loads(body)["error"]
            except (ValueError, KeyError):
                msg = ""
            c.expect("broken" in msg and ("empty" in msg or "not a cutrace trace" in msg), f"GET {path}: {body[:300]!r}")
        status, headers, body = srv.request("GET", f"/job/{b}/")
        c.equal("the job's page", status, 200)
        status, headers, body = srv.request("GET", "/job/0123456789abcdef/")
        c.expect(status == 404 and headers.get("content-type", "").startswith("text/html") and b"no such job" in body,
                 f"unknown job page: HTTP {status} {headers.get('content-type')} {body[:200]!r}")


def report_timeline(s, c, d, work):
    """The timeline document `cutrace report` embeds: every event of the job, from a full read."""
    page = os.path.join(work, "report.html")
    p = s.run([s.cutrace, "report", d, "-o", page], timeout=300)
    c.require(p.returncode == 0, f"cutrace report exited {p.returncode}: {p.stderr[-300:]}")
    with open(page, encoding="utf-8") as f:
        m = re.search(r'<script type="application/json" id="cutrace-timeline">(.*?)</script>', f.read(), re.S)
    c.require(m, "no timeline document in the report page")
    return json.loads(m.group(1))


def piece_events(doc, t0, t1):
    """{track id: sorted [(start, dur, name, kind, row)]} of the events overlapping [t0, t1)
    (relative ns, as the documents give them)."""
    out = {}
    for t in doc["tracks"]:
        names = doc["strings"]
        ev = [(s_, d_, names[n], k, r) for s_, d_, n, k, r in zip(t["s"], t["d"], t["n"], t["k"], t["r"])
              if s_ + d_ >= t0 and s_ < t1]
        out[t["id"]] = sorted(ev)
    return out


@test
def serve_timeline_piece_reads_only_its_blocks(s, c):
    """A job of 300,000 launches: a timeline piece holding a twentieth of its events decodes at most
    a fifth of the job's blocks (the per-job index built at load: each block's time span), and holds
    exactly the events of that range that `cutrace report` (a full read) has, on the same track
    ids; every thread and stream track is in the piece. Fails (blocks_read absent: every piece
    reads the whole job) without the index."""
    root = s.tmpdir("serve-index")
    d = os.path.join(root, "big")
    s.record(c, d, [s.prog("launch_loop"), "300000"], extra_env={"CUTRACE_SAMPLE_HZ": "0"})
    full = report_timeline(s, c, d, s.tmpdir("serve-index-report"))
    jid = job_id("big")
    with Server(s, c, root) as srv:
        dash = srv.get_json(f"/api/jobs/{jid}/dashboard")
        origin, extent = dash["origin_ns"], dash["extent_ns"]
        c.equal("report and serve origin", full["origin_ns"], origin)
        starts = sorted(x for t in full["tracks"] for x in t["s"])
        c.require(len(starts) > 100000, f"{len(starts)} events in the report's timeline")
        n = len(starts)
        for k, q in enumerate((0.1, 0.5, 0.85)):  # three ranges of a twentieth of the events each
            t0, t1 = starts[int(n * q)], starts[int(n * q) + n // 20]
            piece = srv.get_json(f"/api/jobs/{jid}/timeline?t0={origin + t0}&t1={origin + t1}&px=16384")
            c.require("blocks_read" in piece, f"the piece does not say what it read: {list(piece)}")
            read, total = piece["blocks_read"], piece["blocks_indexed"]
            c.require(total >= 20, f"{total} blocks in the job, need >= 20")
            c.expect(0 < read <= total // 5, f"piece {k}: {read} of {total} blocks decoded, expected 1..{total // 5}")
            c.expect(not any(t.get("lod") for t in piece["tracks"]), f"piece {k} is aggregated: pick a narrower range")
            want, got = piece_events(full, t0, t1), piece_events(piece, t0, t1)
            c.equal(f"piece {k}: track ids", sorted(got), sorted(want))
            for tid in want:
                c.expect(want[tid] == got.get(tid), f"piece {k}, track {tid}: {len(got.get(tid, []))} events, "
                         f"the full read has {len(want[tid])} in the range")
            c.expect(sum(len(v) for v in want.values()) > 1000, f"piece {k}: too few events to compare")
