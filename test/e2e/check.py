#!/usr/bin/env python3
"""End-to-end tests of cutrace on the fake CUDA driver (python3 standard library only).

Each test runs programs of test/e2e/ under `cutrace record` in a fresh temporary directory and
asserts exact values of `cutrace summary --json` and the other tools' outputs. One line per test:
`PASS name` or `FAIL name: why`; the last line is `N passed, M failed`; the exit status is 1 if
any failed. The tests live in the area modules listed in AREAS below; harness.py holds the
registry, the Suite and the runner.

    python3 test/e2e/check.py --build build [NAME ...]    (run.sh sets LD_LIBRARY_PATH)
"""
import importlib
import sys

import harness

# Each module registers its tests (harness.test) when imported; they run in this order.
AREAS = ["summary_checks",    # counts and times of `cutrace summary`
         "timing_checks",     # GPU timing modes, CUPTI, --gpu-sample
         "process_checks",    # the profiled process: exit, children, faults
         "python_checks",     # the Python annotations
         "export_checks",     # Chrome, Perfetto, SQLite exports
         "window_checks",     # capture windows
         "stack_checks",      # call stacks (--backtrace)
         "pystack_checks",    # Python call stacks (--python-stacks)
         "serve_checks",      # `cutrace serve`
         "capture_checks",    # lossless capture, bursts, stress
         "nvtx_checks",       # NVTX against the specification's oracle
         "hardening_checks",  # hostile and damaged files
         "job_checks",        # multi-rank jobs
         "hang_checks",       # the hang watchdog and `cutrace hang`
         "diff_checks",       # `cutrace diff` of two runs
         "counter_checks",    # CPU performance counters (perf_event_open)
         "flight_checks"]     # the flight recorder and `cutrace snapshot`

if __name__ == "__main__":
    for area in AREAS:
        importlib.import_module(area)
    sys.exit(harness.main(__doc__))
