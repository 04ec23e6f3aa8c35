#!/usr/bin/env python3
"""Per-launch cost after a capture window has closed (issue 6, "outside capture windows"): like
tiny_kernels.py, but a manual window (cutrace.start()/stop()) is opened and closed around 2,000
launches first, and the timed launches come 1 s after it closed. Under
`cutrace record --capture-range manual`, CUPTI collected in that window and its driver callbacks
stay on afterwards (collector/cupti_source.cpp); without cutrace, start()/stop() do nothing.
  python3 after_window.py [--n 20000] [--no-window]   -> {"launches": N, "us_per_launch": ...}"""
import argparse, json, os, sys, time
import torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import cutrace  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=20000)
ap.add_argument("--no-window", action="store_true", help="never open the window (preloaded, idle)")
a = ap.parse_args()
x = torch.ones(256, device="cuda")
for _ in range(2000): x.add_(1.0)
torch.cuda.synchronize()
if not a.no_window:
    cutrace.start()
    for _ in range(2000): x.add_(1.0)
    torch.cuda.synchronize()
    cutrace.stop()
time.sleep(1.0)
t = time.perf_counter()
for _ in range(a.n): x.add_(1.0)
torch.cuda.synchronize()
print(json.dumps({"launches": a.n, "us_per_launch": (time.perf_counter() - t) * 1e6 / a.n}), flush=True)
