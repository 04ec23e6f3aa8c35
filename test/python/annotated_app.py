"""An annotated "training loop" on the fake CUDA driver, for the e2e scenario
python_annotations_recorded (test/e2e/python_checks.py), which records it with `cutrace record` and
checks the summary. Uses the SageMaker-Profiler-style names, as a script ported from smprof does.

    5 steps, each `with smprof.annotate("step_<i>")`: 3 launches of k_step (20 us) + cuCtxSynchronize
    annotation_begin("io") on the main thread, annotation_end on another thread
    loss_fn, decorated with bare @smprof.annotate, called twice (CPU only)
    one mark("checkpoint")

Prints one line: "annotated_app: OK shim=<0|1> active=<0|1>".
"""
import os
import sys
import threading

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "python"))  # the package, uninstalled

import cutrace as smprof  # noqa: E402  (the one line a smprof user changes)
from cuda_ctypes import Driver  # noqa: E402

STEPS = 5
LAUNCHES_PER_STEP = 3
KERNEL_NS = 20000


@smprof.annotate
def loss_fn(x):
    return sum(i * i for i in range(x))


def main():
    cuda = Driver()
    cuda.init_primary()
    k = cuda.fake_module({"k_step": KERNEL_NS})["k_step"]

    prof = smprof.SMProfiler.instance()
    config = smprof.Config()
    config.profiler = {"EnableCuda": "1"}
    prof.configure(config)
    prof.start_profiling()
    active = smprof.is_active()

    for i in range(STEPS):
        with smprof.annotate("step_" + str(i)):
            for _ in range(LAUNCHES_PER_STEP):
                cuda.launch(k)
            cuda.cuCtxSynchronize()

    io = smprof.annotation_begin("io")
    loss_fn(1000)
    loss_fn(1000)
    ender = threading.Thread(target=smprof.annotation_end, args=(io,))
    ender.start()
    ender.join()
    smprof.mark("checkpoint")
    prof.stop_profiling()
    print("annotated_app: OK shim=%d active=%d" % (smprof.shim_loaded(), active))


if __name__ == "__main__":
    main()
