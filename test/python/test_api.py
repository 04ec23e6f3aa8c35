"""Tests of the Python module `cutrace` (python/cutrace), standard library unittest only.

    python3 -m unittest discover -s test/python        # e2e scenario python_api_unit
    cutrace record -o DIR -- python3 -m unittest discover -s test/python
                                                       # scenario python_annotations_recorded

Without the shim (the first form) the no-op tests run and the shim tests are skipped; under
`cutrace record` the shim tests run too (on the fake driver when it is first on
LD_LIBRARY_PATH), and leave ranges named "shim_test_*" in the trace for the scenario to check.
"""
import ctypes
import functools
import json
import os
import subprocess
import sys
import threading
import time
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, HERE)

import cutrace  # noqa: E402

SMPROF_NAMES = ["SMProfiler", "Config", "annotate", "annotation_begin", "annotation_end"]
PLAIN_NAMES = ["start", "stop", "range", "mark", "is_active", "range_push", "range_pop", "shim_loaded"]

# Thread and range counts of ShimTests.test_threads_nest_ranges, checked by test/e2e/python_checks.py.
SHIM_THREADS = 8
SHIM_RANGES_PER_THREAD = 500


def run_without_shim(code):
    """Runs `code` in a fresh interpreter without the shim; returns its stdout, parsed as JSON."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LD_PRELOAD", "CUTRACE_", "NVTX_"))}
    env["PYTHONPATH"] = PYTHON_DIR
    p = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("child exited %d: %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout)


WARNING_CHILD = r"""
import json, threading, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as quiet:
    warnings.simplefilter("always")
    import cutrace
    prof = cutrace.SMProfiler.instance()
    config = cutrace.Config()
    config.profiler = {"EnableCuda": "1"}
    prof.configure(config)
    active = cutrace.is_active()
    loaded = cutrace.shim_loaded()
    r = cutrace.annotate("made, not used")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    prof.start_profiling()
    for i in range(3):
        with cutrace.annotate("step_%d" % i):
            with cutrace.range("inner"):
                pass
        h = cutrace.annotation_begin("io")
        cutrace.annotation_end(h)
        cutrace.mark("m")
        cutrace.range_push("p")
        cutrace.range_pop()
    @cutrace.annotate
    def f(x):
        return x + 1
    @cutrace.annotate("named")
    def g(x):
        return x * 2
    ts = [threading.Thread(target=lambda: [f(1), g(2), cutrace.mark("t")]) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    cutrace.start(); cutrace.stop()
    prof.stop_profiling()
print(json.dumps({"quiet": [str(w.message) for w in quiet],
                  "warnings": [[w.category.__name__, str(w.message), w.filename] for w in caught],
                  "active": active, "loaded": loaded, "f": f(1), "g": g(2)}))
"""


class NoShimTests(unittest.TestCase):
    """The module in a process without the shim: everything is a no-op."""

    def test_exactly_one_warning_on_first_use(self):
        out = run_without_shim(WARNING_CHILD)
        self.assertFalse(out["loaded"])
        self.assertFalse(out["active"])
        self.assertEqual(out["quiet"], [], "import, configure, is_active, annotate() warned")
        self.assertEqual(len(out["warnings"]), 1, out["warnings"])
        category, message, filename = out["warnings"][0]
        self.assertEqual(category, "RuntimeWarning")
        self.assertIn("cutrace shim not loaded", message)
        self.assertIn("cutrace record", message)
        self.assertEqual(filename, "<string>", "the warning should point at the caller's line")
        self.assertEqual((out["f"], out["g"]), (2, 4))

    def test_bare_decorator_warns_at_the_decorated_line(self):
        out = run_without_shim(
            "import json, warnings\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import cutrace\n"
            "    @cutrace.annotate\n"
            "    def f(): return 1\n"
            "print(json.dumps([(x.filename, x.lineno) for x in w]))\n")
        self.assertEqual(out, [["<string>", 5]])


@unittest.skipIf(cutrace.shim_loaded(), "the shim is loaded: no-op behaviour not testable here")
class NoOpTests(unittest.TestCase):
    def setUp(self):
        warnings.simplefilter("ignore", RuntimeWarning)

    def tearDown(self):
        warnings.resetwarnings()

    def test_names(self):
        for name in SMPROF_NAMES + PLAIN_NAMES:
            self.assertTrue(callable(getattr(cutrace, name)), name)
            self.assertIn(name, cutrace.__all__)
            self.assertTrue(getattr(cutrace, name).__doc__, name + " has no docstring")
        self.assertIs(cutrace.range, cutrace.annotate)

    def test_profiler_is_a_singleton(self):
        p = cutrace.SMProfiler.instance()
        self.assertIs(p, cutrace.SMProfiler.instance())
        self.assertIs(p, cutrace.SMProfiler())
        c = cutrace.Config()
        self.assertEqual(c.profiler, {})
        c.profiler = {"EnableCuda": "1"}
        self.assertIsNone(p.configure(c))
        self.assertIs(p.config, c)
        p.configure({"EnableCuda": "0"})
        self.assertEqual(p.config.profiler, {"EnableCuda": "0"})
        p.start_profiling()
        self.assertFalse(p.is_profiling())
        p.stop_profiling()

    def test_context_manager(self):
        with cutrace.annotate("outer") as a:
            self.assertEqual(a.name, "outer")
            with cutrace.range("inner"):
                pass
        with self.assertRaises(KeyError):  # exceptions pass through
            with cutrace.annotate("raises"):
                raise KeyError("x")
        self.assertIs(cutrace.annotate("same"), cutrace.annotate("same"))

    def test_decorators(self):
        @cutrace.annotate("fwd")
        def fwd(x, y=1):
            """doc"""
            return x + y

        @cutrace.annotate
        def bare(x):
            return -x

        @cutrace.annotate()
        def empty_call(x):
            return x

        self.assertEqual(fwd(1, y=2), 3)
        self.assertEqual(fwd.__name__, "fwd")
        self.assertEqual(fwd.__doc__, "doc")
        self.assertEqual(bare(3), -3)
        self.assertEqual(bare.__name__, "bare")
        self.assertEqual(empty_call(5), 5)

        class Model(object):
            @cutrace.annotate
            def forward(self, x):
                return x * 10
        self.assertEqual(Model().forward(2), 20)

    def test_start_end_and_marks(self):
        h = cutrace.annotation_begin("io")
        self.assertIsInstance(h, int)
        cutrace.annotation_end(h)
        cutrace.annotation_end(0)
        cutrace.annotation_end(None)
        cutrace.mark("m")
        cutrace.range_push("p")
        cutrace.range_pop()
        cutrace.start()
        self.assertFalse(cutrace.is_active())
        cutrace.stop()

    def test_odd_names_and_bounded_caches(self):
        for name in ["", "ünïcode ✓", b"bytes", 42, None, "x" * 100000, "\udcff", "a\0b"]:
            with cutrace.annotate(name):
                pass
            cutrace.mark(name)
            cutrace.annotation_end(cutrace.annotation_begin(name))
        for i in range(3 * cutrace._CACHE_MAX):
            with cutrace.annotate("step_%d" % i):
                pass
            cutrace.mark("mark_%d" % i)
        self.assertLessEqual(len(cutrace._ranges), cutrace._CACHE_MAX)
        self.assertLessEqual(len(cutrace._encoded), cutrace._CACHE_MAX)
        self.assertEqual(cutrace._encode("ünïcode ✓"), "ünïcode ✓".encode("utf-8"))
        self.assertEqual(cutrace._encode(b"raw"), b"raw")
        self.assertEqual(cutrace._encode(["unhashable"]), b"['unhashable']")

    def test_no_op_is_cheap(self):
        a = cutrace.annotate("cheap")
        n = 200000
        t0 = time.perf_counter()
        for _ in range(n):
            with a:
                pass
        per_call = (time.perf_counter() - t0) / n
        self.assertLess(per_call, 5e-6, "no-op enter+exit took %.0f ns" % (per_call * 1e9))


def _init_cuda():
    """A current context on device 0 when a CUDA driver is reachable (the fake one in the tests),
    so that the shim is recording. False when there is none."""
    try:
        from cuda_ctypes import Driver
        Driver().init_primary()
        return True
    except (OSError, RuntimeError):
        return False


@unittest.skipUnless(cutrace.shim_loaded(), "run under `cutrace record` to test with the shim")
class ShimTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cuda = _init_cuda()

    def test_api_version(self):
        lib = ctypes.CDLL(None)
        self.assertEqual(lib.cutrace_api_version(), cutrace.API_VERSION)

    def test_is_active_with_cuda(self):
        if not self.cuda:
            self.skipTest("no CUDA driver")
        self.assertTrue(cutrace.is_active())

    def test_start_end_across_threads(self):
        if not self.cuda:
            self.skipTest("no CUDA driver")
        handles = [cutrace.annotation_begin("shim_test_start_end") for _ in range(10)]
        self.assertTrue(all(isinstance(h, int) and h != 0 for h in handles), handles)
        self.assertEqual(len(set(handles)), len(handles), "handles are not unique")
        t = threading.Thread(target=lambda: [cutrace.annotation_end(h) for h in handles])
        t.start()
        t.join()

    def test_end_takes_handles_that_do_not_fit_a_c_int(self):
        # annotation_end passes small handles to C without conversion (a C int, widened by libffi)
        # and falls back to a uint64 conversion for the rest: such a handle ends nothing here
        # (no range has it) but must not raise.
        for h in (2**31 - 1, 2**31, 2**32 + 5, 2**64 - 1):
            cutrace.annotation_end(h)
        with self.assertRaises(ctypes.ArgumentError):  # as before: not a handle at all
            cutrace.annotation_end("not a handle")

    def test_threads_nest_ranges(self):
        errors = []

        def work(i):
            try:
                for _ in range(SHIM_RANGES_PER_THREAD):
                    with cutrace.annotate("shim_test_thread"):
                        with cutrace.annotate("shim_test_inner"):
                            pass
                cutrace.mark("shim_test_mark")
            except Exception as e:  # pragma: no cover
                errors.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(SHIM_THREADS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])

    def test_decorator_with_shim(self):
        @cutrace.annotate
        def shim_test_decorated(x):
            """doc"""
            return x + 1
        self.assertEqual(shim_test_decorated(1), 2)
        self.assertEqual(shim_test_decorated.__name__, "shim_test_decorated")
        self.assertEqual(shim_test_decorated.__doc__, "doc")
        self.assertTrue(hasattr(shim_test_decorated, "__wrapped__"))
        with self.assertRaises(ValueError):
            with cutrace.annotate("shim_test_raises"):
                raise ValueError()

    def test_odd_names_with_shim(self):
        for name in ["", "ünïcode ✓", b"bytes", 42, None, "x" * 100000, "\udcff", "a\0b"]:
            with cutrace.annotate(name):
                pass
            cutrace.mark(name)
            cutrace.annotation_end(cutrace.annotation_begin(name))


if __name__ == "__main__":
    unittest.main()
