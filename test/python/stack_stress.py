"""Python stacks under load (test/e2e/pystack_checks.py): THREADS threading threads launch
LAUNCHES kernels each through ctypes.CDLL (the GIL released in each call) while the main thread
synchronises the context in a loop through ctypes.PyDLL (the GIL held).

Usage: stack_stress.py THREADS LAUNCHES"""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_ctypes import Driver  # noqa: E402


def main():
    threads, launches = int(sys.argv[1]), int(sys.argv[2])
    drv = Driver()
    drv.init_primary()
    f = drv.fake_module({"k_stress": 1000})["k_stress"]
    held = ctypes.PyDLL("libcuda.so.1")
    held.cuCtxSynchronize.restype = ctypes.c_int
    launch = drv.lib.cuLaunchKernel

    def worker():
        for _ in range(launches):
            launch(f, 1, 1, 1, 32, 1, 1, 0, None, None, None)  # stress launch site

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    syncs = 0
    while any(t.is_alive() for t in ts):
        held.cuCtxSynchronize()  # stress sync site
        syncs += 1
    for t in ts:
        t.join()
    held.cuCtxSynchronize()  # stress sync site (last)
    print("stack_stress: OK")


main()
