#!/usr/bin/env python3
"""Time and peak RSS of `cutrace serve` timeline piece requests on one job (fake driver, no GPU).

    python3 bench/serve_pieces.py JOB_DIR [--cutrace build/bin/cutrace] [--pieces 5] [--px 1024]

JOB_DIR is a directory of one job's traces (e.g. `cutrace record -o /tmp/big/job
build/test/e2e/launch_loop 2000000`). Serves JOB_DIR's parent, loads the job (dashboard: time and
the server's RSS after it), then asks for --pieces distinct pieces, each a fiftieth of the job's
extent spread over it; per piece: wall time of the request and the server's peak RSS during it
(VmHWM, reset through /proc/PID/clear_refs before each request), and blocks_read of
blocks_indexed when the server says them."""
import argparse
import http.client
import json
import os
import re
import subprocess
import time


def fnv1a(name):
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(key + r":\s+(\d+)", f.read()).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("job")
    ap.add_argument("--cutrace", default="build/bin/cutrace")
    ap.add_argument("--pieces", type=int, default=5)
    ap.add_argument("--px", type=int, default=1024)
    a = ap.parse_args()
    job = os.path.abspath(a.job)
    root, name = os.path.dirname(job), os.path.basename(job)
    p = subprocess.Popen([a.cutrace, "serve", root, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    try:
        m = re.search(r"http://[^:]+:(\d+)/\?token=([0-9a-f]+)", p.stdout.readline())
        port, token = int(m.group(1)), m.group(2)

        def get(path):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            t0 = time.monotonic()
            c.request("GET", path, headers={"Authorization": f"Bearer {token}", "Host": f"127.0.0.1:{port}"})
            r = c.getresponse()
            body = r.read()
            c.close()
            return r.status, body, time.monotonic() - t0

        jid = fnv1a(name)
        st, body, secs = get(f"/api/jobs/{jid}/dashboard")
        assert st == 200, body[:300]
        d = json.loads(body)
        origin, extent = d["origin_ns"], d["extent_ns"]
        print(f"load (dashboard): {secs:.2f} s, server RSS after it {status_kib(p.pid, 'VmRSS') / 1024:.0f} MiB, "
              f"events {d['events']}")
        for k in range(a.pieces):
            t0 = origin + extent * (1 + 2 * k) // (2 * a.pieces)
            t1 = t0 + extent // 50
            with open(f"/proc/{p.pid}/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current RSS
            st, body, secs = get(f"/api/jobs/{jid}/timeline?t0={t0}&t1={t1}&px={a.px}")
            assert st == 200, body[:300]
            doc = json.loads(body)
            blocks = f", blocks {doc['blocks_read']} of {doc['blocks_indexed']}" if "blocks_read" in doc else ""
            print(f"piece {k}: {secs:.3f} s, peak RSS {status_kib(p.pid, 'VmHWM') / 1024:.0f} MiB, "
                  f"{len(body) / 1024:.0f} KiB{blocks}")
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
