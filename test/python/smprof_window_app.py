"""A script written for SageMaker Profiler, with `import cutrace as smppy`, on the fake driver, for
the e2e test smprof_start_stop_are_the_windows (test/e2e/python_checks.py): the profiler is made
first, as smprof's examples do, and the kernels before, between and after its start/stop pairs
have names of their own.

    k_before x2, start_profiling, k_in x3, stop_profiling, k_after x4, start_profiling, k_again x1,
    stop_profiling, k_end x5
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "python"))  # the package, uninstalled

import cutrace as smppy  # noqa: E402
from cuda_ctypes import Driver  # noqa: E402


def main():
    prof = smppy.SMProfiler.instance()
    config = smppy.Config()
    config.profiler = {"EnableCuda": "1"}
    prof.configure(config)
    cuda = Driver()
    cuda.init_primary()
    k = cuda.fake_module({n: 10000 for n in ("k_before", "k_in", "k_after", "k_again", "k_end")})

    def run(name, n):
        for _ in range(n):
            cuda.launch(k[name])
        cuda.cuCtxSynchronize()

    run("k_before", 2)
    prof.start_profiling()
    run("k_in", 3)
    prof.stop_profiling()
    run("k_after", 4)
    prof.start_profiling()
    run("k_again", 1)
    prof.stop_profiling()
    run("k_end", 5)
    print("smprof_window_app: OK")


if __name__ == "__main__":
    main()
