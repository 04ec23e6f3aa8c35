"""cutrace annotations for Python: mark up a training script so that ``cutrace summary`` reports
the time (CPU and GPU) of each part of it.

The module is a drop-in for the SageMaker Profiler Python module (``smprof``, formerly
``smppy``): a script that uses it only changes its import::

    import cutrace as smprof          # was: import smprof  (or: import smppy as smprof)

    prof = smprof.SMProfiler.instance()
    config = smprof.Config()
    config.profiler = {"EnableCuda": "1"}
    prof.configure(config)
    prof.start_profiling()
    for i, batch in enumerate(loader):
        with smprof.annotate("step_" + str(i)):
            with smprof.annotate("Forward"):
                loss = model(batch)
            h = smprof.annotation_begin("Backward")
            loss.backward()
            smprof.annotation_end(h)
    prof.stop_profiling()

and runs under the profiler: ``cutrace record -o DIR -- python train.py``.

smprof name                          cutrace behaviour
-----------------------------------  ---------------------------------------------------------
``SMProfiler.instance()``            the one profiler object of the process
``Config()``, ``config.profiler``    accepted and kept (``prof.config``); cutrace needs no settings
``SMProfiler.configure(config)``     stores the config
``SMProfiler.start_profiling()``     ``start()``: opens a capture window (``cutrace_capture_start``)
``SMProfiler.stop_profiling()``      ``stop()``: closes it (``cutrace_capture_stop``)
``annotate(name)``                   a push/pop range, as a context manager or a decorator
``annotation_begin(name)``           starts a start/end range, returns its handle
``annotation_end(handle)``           ends it (on any thread)

cutrace's own names: ``start()``, ``stop()``, ``is_active()``, ``range(name)`` (= ``annotate``),
``range_push(name)``/``range_pop()``, ``mark(name)``.

Annotations become Range and Mark records of the trace, like NVTX ranges: each range records
its CPU span and the GPU projection of the work launched inside it (first GPU start to last GPU
end), shown by ``cutrace summary`` under "NVTX ranges and annotations" and as ``"ranges"`` in
``cutrace summary --json``.

The module is pure Python (standard library only). It binds, through ctypes, to the C API that
the preloaded shim libcutrace.so exports (``nvtx_bridge/cutrace_api.h``). When the shim is not
loaded (the script runs without ``cutrace record``), every function is a cheap no-op and the
first call issues one ``RuntimeWarning``. ``start_profiling``/``start`` matter when the run was
recorded with ``cutrace record --capture-range manual``; with the default (the whole process is
captured) they change nothing.

Cost per call: ``python3 bench/annotate_cost.py`` measures every form with and without the shim
and next to torch.cuda.nvtx's same form; BENCHMARKS.md has the figures. Under the shim a range
costs about a microsecond on the H200 host: ``annotate`` less than half of torch.cuda.nvtx's
``range``, the one-call forms a little more than torch's (ctypes against a C++ extension);
negligible for ranges of a millisecond and more (a training step, a forward pass), not for a
per-element loop.
Without the shim, ``with`` costs what any Python context manager costs, and a decorated function
is the function itself. Most of the shim's cost is ctypes calling into C (two calls per range).
"""
import ctypes
import functools
import sys
import threading
import warnings

__all__ = [
    "SMProfiler", "Config", "annotate", "annotation_begin", "annotation_end",
    "start", "stop", "is_active", "range", "range_push", "range_pop", "mark", "shim_loaded",
]
__version__ = "0.1.0"

API_VERSION = 1  # the version of cutrace_api.h this module speaks
_CACHE_MAX = 4096  # distinct names kept encoded (and annotate() objects kept); then cleared

NOT_LOADED_MESSAGE = ("cutrace shim not loaded: run under `cutrace record -o DIR -- python ...` "
                      "(or LD_PRELOAD=libcutrace.so); cutrace annotations do nothing in this process")


def _bind():
    """The shim's C functions when libcutrace.so is loaded in this process, else None."""
    try:
        # Every library of the process (a preloaded shim is among them). PyDLL: the calls are
        # short and never block, so they keep the GIL instead of releasing and retaking it.
        lib = ctypes.PyDLL(None)
        version = lib.cutrace_api_version
    except (OSError, AttributeError, TypeError, ValueError):
        return None
    version.restype = ctypes.c_int
    version.argtypes = ()
    try:
        if version() < API_VERSION:
            return None
    except Exception:  # pragma: no cover - a broken shim: behave as if absent
        return None

    def fn(name, restype, *argtypes):
        f = lib[name]  # a new function object: getattr(lib, name) would share one per name
        f.restype = restype
        f.argtypes = argtypes
        return f

    def fast(name):
        # No argtypes: ctypes passes bytes as char* without the per-call type check. Only ever
        # called with bytes from _encode() (or nothing), so the check would never fail.
        f = lib[name]  # a new function object: getattr(lib, name) would share one per name
        f.restype = None
        return f

    u64 = ctypes.c_uint64
    start = fast("cutrace_range_start")
    start.restype = u64  # the handle: a Python int
    return {
        "push": fast("cutrace_range_push"),
        "pop": fast("cutrace_range_pop"),
        "start": start,
        # Without argtypes ctypes passes an int as a C int, which libffi widens with its sign to
        # the 64-bit argument register (x86-64 and AArch64): exact for handles below 2**31, the
        # only ones annotation_end passes this way (others take the converting binding).
        "end": fast("cutrace_range_end"),
        "end_u64": fn("cutrace_range_end", None, u64),
        "mark": fast("cutrace_mark"),
        "capture_start": fn("cutrace_capture_start", None),
        "capture_stop": fn("cutrace_capture_stop", None),
        "capturing": fn("cutrace_capturing", ctypes.c_int),
        # Optional: a shim without it keeps the whole-process window under SMProfiler.
        "capture_by_api": fn("cutrace_capture_by_api", ctypes.c_int) if hasattr(lib, "cutrace_capture_by_api") else None,
    }


try:
    _C = _bind()
except AttributeError:  # a shim that lacks one of the functions: too old or too new
    _C = None
_LOADED = _C is not None


def shim_loaded():
    """True when the cutrace shim is loaded in this process (annotations are recorded)."""
    return _LOADED


# ---- names -----------------------------------------------------------------------------------

_encoded = {}


def _encode_new(name):
    if isinstance(name, bytes):
        b = name
    elif name is None:
        b = b"(unnamed)"
    else:
        b = str(name).encode("utf-8", "replace")
    if len(_encoded) >= _CACHE_MAX:
        _encoded.clear()
    try:
        _encoded[name] = b
    except TypeError:  # unhashable: not cached
        pass
    return b


def _encode(name, _get=_encoded.get):
    """The UTF-8 bytes of a name (str, bytes, None for "(unnamed)", or anything str() takes),
    cached per name. The shim copies names up to its own length limit; a NUL ends a name."""
    try:
        b = _get(name)
    except TypeError:
        b = None
    return b if b is not None else _encode_new(name)


# ---- the not-loaded warning ------------------------------------------------------------------

_warned = False  # set once the not-loaded warning has been issued
_warn_lock = threading.Lock()


def _first_use():
    """Issues the one warning of a process without the shim, attributed to the caller's line."""
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    level, f = 1, sys._getframe(0)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
        level += 1
    warnings.warn(NOT_LOADED_MESSAGE, RuntimeWarning, stacklevel=level)


# ---- ranges ----------------------------------------------------------------------------------

def _qualname(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


class _Range(object):
    """A named push/pop range: ``with`` it, or decorate a function with it.

    Objects are shared (``annotate(name)`` returns the same object for the same name) and hold
    no state but the name, so one may be entered on several threads and re-entered at once."""
    __slots__ = ("name", "_b")

    def __init__(self, name):
        self.name = name
        self._b = _encode(name)

    def __repr__(self):
        return "cutrace.annotate(%r)" % (self.name,)

    if _LOADED:
        def __enter__(self, _push=_C["push"]):
            _push(self._b)
            return self

        def __exit__(self, exc_type, exc, tb, _pop=_C["pop"]):
            _pop()
            return False

        def __call__(self, fn):
            if self.name is None:
                return annotate(fn)
            b = self._b
            push, pop = _C["push"], _C["pop"]

            @functools.wraps(fn)
            def annotated(*args, **kwargs):
                push(b)
                try:
                    return fn(*args, **kwargs)
                finally:
                    pop()
            return annotated
    else:
        def __enter__(self):
            if not _warned:
                _first_use()
            return self

        def __exit__(self, exc_type, exc, tb):
            return False

        def __call__(self, fn):  # nothing to record: the function itself, at no cost
            if not _warned:
                _first_use()
            return fn


_ranges = {}


def annotate(name=None, *, _get=_ranges.get):
    """A push/pop range named ``name``, nested per thread (smprof: ``annotate``; NVTX:
    ``nvtxRangePush``/``Pop``). Use it as a context manager::

        with cutrace.annotate("Forward"):
            out = model(x)

    or as a decorator, ``@cutrace.annotate("fwd")``, or ``@cutrace.annotate`` with no argument
    to name the range after the function's ``__qualname__``. The range's GPU time in the summary
    is the span of the GPU work launched inside it."""
    try:
        r = _get(name)
    except TypeError:
        r = None
    if r is not None:
        return r
    if callable(name) and not isinstance(name, (str, bytes)):  # bare @annotate
        return _Range(_qualname(name))(name)
    r = _Range(name)
    if len(_ranges) >= _CACHE_MAX:
        _ranges.clear()
    try:
        _ranges[name] = r
    except TypeError:
        pass
    return r


# ``range`` shadows the builtin inside this module: the module does not use the builtin below.
range = annotate  # noqa: A001


# ---- the other calls -------------------------------------------------------------------------

if _LOADED:
    _push, _pop, _start, _end = _C["push"], _C["pop"], _C["start"], _C["end"]
    _end_u64, _mark, _capturing = _C["end_u64"], _C["mark"], _C["capturing"]
    _capture_start, _capture_stop = _C["capture_start"], _C["capture_stop"]

    # The calls below look the name up in the cache themselves instead of calling _encode: one
    # Python call less per annotation (about a fifth of its cost; bench/annotate_cost.py).
    def range_push(name, *, _get=_encoded.get, _push=_push):
        """Opens a push/pop range on this thread (NVTX: ``nvtxRangePush``)."""
        try:
            b = _get(name)
        except TypeError:
            b = None
        _push(b if b is not None else _encode_new(name))

    def range_pop(*, _pop=_pop):
        """Closes this thread's innermost push/pop range (NVTX: ``nvtxRangePop``)."""
        _pop()

    def annotation_begin(name, *, _get=_encoded.get, _start=_start):
        """Starts a start/end range and returns its handle, for ``annotation_end`` (smprof:
        ``annotation_begin``; NVTX: ``nvtxRangeStart``). The range may end on another thread
        and need not nest. Returns 0 when nothing is being recorded."""
        try:
            b = _get(name)
        except TypeError:
            b = None
        return _start(b if b is not None else _encode_new(name))

    def annotation_end(handle, *, _end=_end, _int=int):
        """Ends the range that ``annotation_begin`` returned (smprof: ``annotation_end``; NVTX:
        ``nvtxRangeEnd``). A handle of 0 or None is ignored."""
        if handle:
            if handle.__class__ is _int and handle < 0x80000000:
                _end(handle)  # passed as a C int, unconverted (see _bind)
            else:
                _end_u64(handle)

    def mark(name, *, _get=_encoded.get, _mark=_mark):
        """An instant event named ``name`` (NVTX: ``nvtxMark``); ``"marks"`` in the summary."""
        try:
            b = _get(name)
        except TypeError:
            b = None
        _mark(b if b is not None else _encode_new(name))

    def start():
        """Opens a capture window: records are taken from now on (``cuProfilerStart`` does the
        same; smprof: ``SMProfiler.start_profiling``)."""
        _capture_start()

    def stop():
        """Closes the capture window (``cuProfilerStop``; smprof: ``stop_profiling``)."""
        _capture_stop()

    def is_active():
        """True while the shim is taking records (inside a capture window)."""
        return _capturing() != 0
else:
    def range_push(name):
        """Opens a push/pop range on this thread (NVTX: ``nvtxRangePush``)."""
        if not _warned:
            _first_use()

    def range_pop():
        """Closes this thread's innermost push/pop range (NVTX: ``nvtxRangePop``)."""
        if not _warned:
            _first_use()

    def annotation_begin(name):
        """Starts a start/end range and returns its handle, for ``annotation_end`` (smprof:
        ``annotation_begin``; NVTX: ``nvtxRangeStart``). The range may end on another thread
        and need not nest. Returns 0 when nothing is being recorded."""
        if not _warned:
            _first_use()
        return 0

    def annotation_end(handle):
        """Ends the range that ``annotation_begin`` returned (smprof: ``annotation_end``; NVTX:
        ``nvtxRangeEnd``). A handle of 0 or None is ignored."""
        if not _warned:
            _first_use()

    def mark(name):
        """An instant event named ``name`` (NVTX: ``nvtxMark``); ``"marks"`` in the summary."""
        if not _warned:
            _first_use()

    def start():
        """Opens a capture window: records are taken from now on (``cuProfilerStart`` does the
        same; smprof: ``SMProfiler.start_profiling``)."""
        if not _warned:
            _first_use()

    def stop():
        """Closes the capture window (``cuProfilerStop``; smprof: ``stop_profiling``)."""
        if not _warned:
            _first_use()

    def is_active():
        """True while the shim is taking records (inside a capture window). Without the shim:
        False, and no warning (this is how a script asks)."""
        return False


# ---- SageMaker Profiler compatibility --------------------------------------------------------

class Config(object):
    """smprof ``Config``: ``config.profiler`` is a dict of settings (``{"EnableCuda": "1"}``).
    cutrace records everything ``cutrace record`` was told to; the settings are kept, not used."""

    def __init__(self):
        self.profiler = {}

    def __repr__(self):
        return "cutrace.Config(profiler=%r)" % (self.profiler,)


class SMProfiler(object):
    """smprof ``SMProfiler``: one per process, from ``SMProfiler.instance()`` (or
    ``SMProfiler()``, the same object). ``start_profiling``/``stop_profiling`` open and close a
    capture window (``cutrace.start``/``stop``). Under plain ``cutrace record`` (no capture range
    chosen), making it hands the windows to these calls, as with smprof: the process is recorded
    between each start and stop (CUDA work from before it was made is a window of its own);
    ``--capture-range process`` records the whole process and the calls change nothing."""

    _instance = None
    _lock = threading.Lock()

    def __new__(cls):
        with cls._lock:
            if cls._instance is None:
                obj = super(SMProfiler, cls).__new__(cls)
                obj.config = Config()
                # As with smprof, the process is recorded between start_profiling and
                # stop_profiling; `cutrace record --capture-range process` keeps all of it.
                by_api = _C.get("capture_by_api") if _LOADED else None
                obj._windows = by_api() != 0 if by_api else True
                cls._instance = obj
        return cls._instance

    @classmethod
    def instance(cls):
        """The process's profiler (smprof: ``SMProfiler.instance()``)."""
        inst = cls._instance
        return inst if inst is not None else cls()

    def configure(self, config):
        """Keeps ``config`` (a ``Config``, or a dict of profiler settings) as ``self.config``."""
        if isinstance(config, dict):
            c = Config()
            c.profiler = dict(config)
            config = c
        self.config = config

    def start_profiling(self):
        """Opens a capture window (``cutrace.start()``); nothing under ``--capture-range process``."""
        if self._windows:
            start()

    def stop_profiling(self):
        """Closes the capture window (``cutrace.stop()``); nothing under ``--capture-range process``."""
        if self._windows:
            stop()

    def is_profiling(self):
        """True while records are being taken (``cutrace.is_active()``)."""
        return is_active()
