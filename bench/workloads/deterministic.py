#!/usr/bin/env python3
"""Runs a PyTorch script with deterministic algorithms on (for bench/gpu/same_loss.sh): the same
seed then gives the same loss to the last bit, run after run, unless something changes the work.
    CUBLAS_WORKSPACE_CONFIG=:4096:8 python3 bench/workloads/deterministic.py SCRIPT [ARGS...]"""
import runpy
import sys

import torch

torch.use_deterministic_algorithms(True, warn_only=True)
torch.backends.cudnn.benchmark = False
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
