"""A tiny numpy-backed stand-in for the parts of cupy a kernel *launcher* touches.

It does not run kernels: a ``RawModule`` here hands out launchers that check each call's
grid, block and arguments against the kernel's C signature (what cupy passes: a
``cupy.ndarray`` as its device pointer, a numpy scalar by value in its own dtype, a Python
``int``/``float`` as int64/float64) and record it. Device arrays are :class:`DeviceArray`
(an ``ndarray`` subclass) so that a host array handed to a kernel is caught, as cupy would
refuse it with ``TypeError: Unsupported type <class 'numpy.ndarray'>``.
"""

from __future__ import annotations

import numbers
import types

import numpy as np

from . import cudacheck


class DeviceArray(np.ndarray):
    """Stands for a ``cupy.ndarray``."""


def dev(a, dtype=None) -> DeviceArray:
    return np.array(a, dtype=dtype).view(DeviceArray)


class LaunchError(AssertionError):
    pass


class Launch:
    def __init__(self, name, grid, block, args, shared_mem):
        self.name, self.grid, self.block, self.args = name, grid, block, args
        self.shared_mem = shared_mem

    @property
    def threads(self) -> int:
        return int(np.prod(self.grid)) * int(np.prod(self.block))


def _dims(what, value):
    if isinstance(value, numbers.Integral):
        value = (value,)
    if not isinstance(value, tuple) or not 1 <= len(value) <= 3:
        raise LaunchError(f"{what} must be an int or a tuple of 1-3 ints, got {value!r}")
    for v in value:
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or int(v) < 1:
            raise LaunchError(f"{what} entries must be positive ints, got {value!r}")
        if not isinstance(v, int):
            raise LaunchError(f"{what} entries should be Python ints, got {type(v)} in {value!r}")
    return tuple(int(v) for v in value)


def check_arg(name, k, arg, dtype, pointer):
    where = f"{name} argument {k}"
    if isinstance(arg, np.ndarray) and not isinstance(arg, DeviceArray):
        raise LaunchError(f"{where}: a host numpy array (cupy raises TypeError on it)")
    if isinstance(arg, DeviceArray):
        if not pointer:
            raise LaunchError(f"{where}: an array passed where the kernel takes a {dtype} value")
        if arg.dtype != dtype:
            raise LaunchError(f"{where}: {arg.dtype} array for a {dtype}* parameter")
        if not arg.flags.c_contiguous:
            raise LaunchError(f"{where}: non-contiguous array (strides {arg.strides}) for a "
                              "flat pointer")
        return
    if pointer:
        raise LaunchError(f"{where}: {type(arg).__name__} {arg!r} for a {dtype}* parameter")
    if isinstance(arg, np.generic):
        got = arg.dtype
    elif isinstance(arg, bool):
        got = np.dtype(np.bool_)
    elif isinstance(arg, int):
        got = np.dtype(np.int64)
    elif isinstance(arg, float):
        got = np.dtype(np.float64)
    else:
        raise LaunchError(f"{where}: cupy cannot pass {type(arg).__name__}")
    if got != dtype:
        raise LaunchError(f"{where}: passed as {got}, the kernel reads {dtype}")


class Function:
    def __init__(self, module, name):
        self.module, self.name = module, name
        self.signature = module.signatures[name]

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None):
        grid, block = _dims("grid", grid), _dims("block", block)
        if int(np.prod(block)) > 1024:
            raise LaunchError(f"{self.name}: block {block} has more than 1024 threads")
        if not isinstance(args, tuple):
            raise LaunchError(f"{self.name}: args must be a tuple, got {type(args).__name__}")
        if len(args) != len(self.signature):
            raise LaunchError(f"{self.name}: {len(args)} arguments, the kernel takes "
                              f"{len(self.signature)}")
        for k, (arg, (dtype, pointer)) in enumerate(zip(args, self.signature)):
            check_arg(self.name, k, arg, dtype, pointer)
        self.module.launches.append(Launch(self.name, grid, block, args, shared_mem))


class RawModule:
    instances: list[RawModule] = []

    def __init__(self, code=None, *, options=(), name_expressions=None, **kw):
        self.code, self.options = code, tuple(options)
        self.signatures = cudacheck.c_signatures(code)
        self.launches: list[Launch] = []
        RawModule.instances.append(self)

    def get_function(self, name):
        if name not in self.signatures:
            raise LaunchError(f"no kernel {name!r} in the module (has "
                              f"{', '.join(sorted(self.signatures))})")
        return Function(self, name)


def _wrap(fn):
    def call(*a, **kw):
        out = fn(*a, **kw)
        return out.view(DeviceArray) if isinstance(out, np.ndarray) else out

    return call


def make() -> types.SimpleNamespace:
    """A fresh fake cupy module."""
    RawModule.instances = []
    ns = types.SimpleNamespace(
        ndarray=DeviceArray, RawModule=RawModule,
        float16=np.float16, float32=np.float32, float64=np.float64, int32=np.int32,
        int64=np.int64, uint8=np.uint8,
        asnumpy=lambda a: np.array(a).view(np.ndarray),
    )
    for name in ("asarray", "ascontiguousarray", "empty", "empty_like", "zeros", "zeros_like",
                 "ones", "full", "concatenate", "arange"):
        setattr(ns, name, _wrap(getattr(np, name)))
    return ns


class _Pointer:
    def __init__(self, ptr):
        self.ptr = ptr


def _device_pointer(self):
    """``a.data.ptr`` as on a cupy array (the address of the first element)."""
    return _Pointer(self.__array_interface__["data"][0])


DeviceArray.data = property(_device_pointer)
