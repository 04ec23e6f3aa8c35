#!/usr/bin/env python3
"""Runs a Python script under torch.profiler for its whole run and writes the Chrome trace JSON
torch.profiler exports (the file users of torch.profiler keep), for bench/suite.py.

    python3 bench/gpu/under_torch_profiler.py cuda|cpu+cuda OUT.json SCRIPT [ARGS...]
"""
import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile

mode, out, script = sys.argv[1], sys.argv[2], sys.argv[3]
sys.argv = [script] + sys.argv[4:]
activities = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if mode == "cpu+cuda" else [])
with profile(activities=activities) as prof:
    runpy.run_path(script, run_name="__main__")
torch.cuda.synchronize()
prof.export_chrome_trace(out)
