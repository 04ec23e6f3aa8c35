"""ns per Python stack read by the shim (bench/py_stack_cost.sh builds the library): at Python
depths 10 and 30 (every frame on the stack at the call: the module's, main's, at_depth's)."""
import ctypes
import sys

lib = ctypes.PyDLL(sys.argv[1])
lib.bench_py_stack.restype = ctypes.c_double
lib.bench_py_stack.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]


def at_depth(n):
    """n frames of at_depth, the call in the last."""
    if n > 1:
        return at_depth(n - 1)
    depth = ctypes.c_int()
    ns = lib.bench_py_stack(200000, 7, ctypes.byref(depth))
    return ns, depth.value


def main():
    v = "%d.%d.%d" % sys.version_info[:3]
    for want in (10, 30):
        ns, depth = at_depth(want - 2)  # with main's and the module's frames
        if depth < 0:
            print("CPython %s: not supported" % v)
            return
        print("CPython %s: %.1f ns per stack at Python depth %d (frames read: %d)" % (v, ns, want, depth))


main()
