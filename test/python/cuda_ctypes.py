"""The few CUDA driver calls the Python tests need, through ctypes (standard library only).

On the fake driver (test/fake_cuda, first on LD_LIBRARY_PATH in the tests) a module image is
text, one line per kernel: ``kernel <name> <duration_ns>``; on a real GPU use another loader.
"""
import ctypes

CUresult = ctypes.c_int


class CudaError(RuntimeError):
    pass


class Driver(object):
    def __init__(self, name="libcuda.so.1"):
        self.lib = ctypes.CDLL(name)
        p = ctypes.c_void_p
        self._fn("cuInit", ctypes.c_uint)
        self._fn("cuDeviceGet", ctypes.POINTER(ctypes.c_int), ctypes.c_int)
        self._fn("cuDeviceGetName", ctypes.c_char_p, ctypes.c_int, ctypes.c_int)
        self._fn("cuDevicePrimaryCtxRetain", ctypes.POINTER(p), ctypes.c_int)
        self._fn("cuCtxSetCurrent", p)
        self._fn("cuCtxSynchronize")
        self._fn("cuModuleLoadData", ctypes.POINTER(p), ctypes.c_char_p)
        self._fn("cuModuleGetFunction", ctypes.POINTER(p), p, ctypes.c_char_p)
        u = ctypes.c_uint
        self._fn("cuLaunchKernel", p, u, u, u, u, u, u, u, p, p, p)

    def _fn(self, name, *argtypes):
        f = getattr(self.lib, name)
        f.restype = CUresult
        f.argtypes = argtypes

        def call(*args):
            r = f(*args)
            if r != 0:
                raise CudaError("%s failed: CUresult %d" % (name, r))
        setattr(self, name, call)

    def init_primary(self, ordinal=0):
        self.cuInit(0)
        dev = ctypes.c_int()
        self.cuDeviceGet(ctypes.byref(dev), ordinal)
        ctx = ctypes.c_void_p()
        self.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev.value)
        self.cuCtxSetCurrent(ctx)
        name = ctypes.create_string_buffer(256)
        self.cuDeviceGetName(name, 256, dev.value)
        return name.value.decode("utf-8", "replace")

    def fake_module(self, kernels):
        """{name: duration_ns} -> {name: CUfunction} (fake driver image format)."""
        image = "".join("kernel %s %d\n" % (k, ns) for k, ns in kernels.items()).encode()
        mod = ctypes.c_void_p()
        self.cuModuleLoadData(ctypes.byref(mod), image)
        out = {}
        for k in kernels:
            f = ctypes.c_void_p()
            self.cuModuleGetFunction(ctypes.byref(f), mod, k.encode())
            out[k] = f
        return out

    def launch(self, f, stream=None):
        self.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, None, None)
