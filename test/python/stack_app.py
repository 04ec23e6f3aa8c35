"""Python call stacks on the fake driver (test/e2e/pystack_checks.py): blocking syncs from nested
functions, a method, a generator, a coroutine, a threading thread, a lambda and exec'd code,
through ctypes.CDLL (the GIL released around the call) and ctypes.PyDLL (the GIL held), and
kernel launches from two lines. Each sync records the stack Python itself sees at the call (file,
line, qualified name, innermost first); the stacks are written as JSON to argv[1].

Usage: stack_app.py OUT.json [DEPTH_BENCH_ITERS]"""
import asyncio
import ctypes
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakefw  # noqa: E402
from cuda_ctypes import Driver  # noqa: E402

EXPECTED = []  # (scenario, stack)
CDLL = ctypes.CDLL("libcuda.so.1")  # releases the GIL around each call
PYDLL = ctypes.PyDLL("libcuda.so.1")  # keeps it
for lib in (CDLL, PYDLL):
    lib.cuCtxSynchronize.restype = ctypes.c_int
    lib.cuCtxSynchronize.argtypes = []


def stack_of(frame):
    out = []
    while frame is not None:
        code = frame.f_code
        out.append([code.co_filename, frame.f_lineno, getattr(code, "co_qualname", code.co_name)])
        frame = frame.f_back
    return out


def sync_via(lib, scenario):
    """The sync: the innermost Python frame is this one, at the line of the ctypes call."""
    frame = sys._getframe()
    want = stack_of(frame)
    want[0][1] = frame.f_lineno + 1  # the call below
    r = lib.cuCtxSynchronize()
    assert r == 0, r
    EXPECTED.append((scenario, want))


def outer():
    def middle():
        def inner():
            sync_via(CDLL, "nested")
        inner()
    middle()


def outer_held():
    def inner_held():
        sync_via(PYDLL, "nested, GIL held")
    inner_held()


class Model:
    def step(self):
        sync_via(CDLL, "method")


def gen():
    sync_via(CDLL, "generator")
    yield 1


async def coro():
    await asyncio.sleep(0)
    sync_via(CDLL, "coroutine")


def in_thread(drv):
    drv.init_primary()  # the context current on this thread too
    sync_via(CDLL, "thread")


def main():
    drv = Driver()
    drv.init_primary()
    fns = drv.fake_module({"k_py_a": 2000, "k_py_b": 5000})
    outer()
    outer_held()
    Model().step()
    next(gen())
    asyncio.run(coro())
    t = threading.Thread(target=in_thread, args=(drv,), name="py-stack-thread")
    t.start()
    t.join()
    (lambda: sync_via(CDLL, "lambda"))()
    # Kept alive to the end: the collector reads a code object after the call, and one already
    # freed may be named only in part (docs/USAGE.md).
    global MADE
    MADE = compile("def made():\n    sync_via(CDLL, 'exec')\nmade()\n", "<made>", "exec")
    made_globals = {"sync_via": sync_via, "CDLL": CDLL}
    exec(MADE, made_globals)
    for _ in range(3):
        fakefw.launch(drv, fns["k_py_a"])  # launch site A
    for _ in range(2):
        fakefw.launch(drv, fns["k_py_b"])  # launch site B
    drv.cuCtxSynchronize()
    with open(sys.argv[1], "w") as f:
        json.dump({"stacks": EXPECTED, "version": list(sys.version_info[:2])}, f)
    print("stack_app: OK")
    # The collector names code objects as it drains (every 1 ms); the interpreter frees them at
    # exit, before the shim's last drain. A loaded machine can delay the drain past that point.
    time.sleep(0.3)


main()
