#!/usr/bin/env python3
"""Runs a Python script inside torch.autograd.profiler.emit_nvtx(), so that PyTorch emits an NVTX
range per operator:  python3 under_emit_nvtx.py SCRIPT [ARGS...]"""
import runpy
import sys

import torch

sys.argv = sys.argv[1:]
with torch.autograd.profiler.emit_nvtx():
    runpy.run_path(sys.argv[0], run_name="__main__")
