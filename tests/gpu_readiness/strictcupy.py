"""A strict stand-in for cupy on the CPU: device arrays that refuse to become numpy arrays.

:mod:`.fakecupy` device arrays are ``ndarray`` subclasses, so ``np.asarray(a)`` on them quietly
works; on a GPU it raises. Here a device array is :class:`StrictArray`, a wrapper around a
numpy array that behaves as a ``cupy.ndarray`` does where skiff could go wrong:

* ``np.asarray``/``np.array``/``__array__`` raise cupy's ``TypeError`` ("Implicit conversion
  to a NumPy array is not allowed"); ``.get()`` is the explicit way out;
* ``isinstance(a, np.ndarray)`` is False; ``get_array_module(a)`` is the fake ``cupy``;
* numpy ufuncs and functions called on it dispatch to "cupy" (``__array_ufunc__``,
  ``__array_function__``) only where the installed cupy has that name, else ``TypeError``
  as cupy's dispatch gives; a host numpy array among the operands raises ("Unsupported
  type"), as cupy refuses them; numpy scalars and Python numbers pass;
* reductions and integer indexing return 0-d device arrays (never numpy scalars); there is no
  ``__index__`` (cupy has none), while ``float``/``int``/``bool``/``.item()`` sync and work;
* ``__module__`` is ``cupy`` for code that tests ``type(a).__module__``.

The numbers are numpy's, so a run on :class:`StrictArray` must equal the plain numpy run.
:func:`install` makes skiff see this module as its cupy (``backend.cupy()``, ``import cupy``,
``import cupyx``) and a GPU ``cuda:0`` among its devices.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
            "construct a NumPy array explicitly.")


@functools.cache
def _real_cupy():
    """The installed cupy (imports without a GPU), to know which names cupy has."""
    real = sys.modules.get("cupy")
    if real is not None and not isinstance(real, _Namespace):
        return real
    try:
        import cupy  # noqa: PLC0415

        return cupy
    except Exception:  # pragma: no cover - no cupy: allow numpy's names
        return None


def _cupy_has(path: str, root=None) -> bool:
    real = _real_cupy() if root is None else root
    if real is None:
        return True
    obj = real
    for part in path.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


class StrictError(TypeError):
    """What cupy raises where skiff moved a device array to the host or mixed in a host one."""


def _unwrap(x, where):
    """A StrictArray's numpy array; a host ndarray is refused (cupy raises on it)."""
    if isinstance(x, StrictArray):
        return x._a
    if isinstance(x, np.ndarray):
        raise StrictError(f"Unsupported type {type(x)} (a host numpy array in {where})")
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v, where) for v in x)
    return x


UPLOADS: list[tuple] = []  # host arrays cupy copies over by itself (indices, assigned values)


def _unwrap_loose(x):
    """For indices and assigned values, which cupy converts from host arrays itself (each
    such array is a host-to-device copy, recorded in UPLOADS)."""
    if isinstance(x, StrictArray):
        return x._a
    if isinstance(x, np.ndarray):
        UPLOADS.append(x.shape)
        return x
    if isinstance(x, tuple):
        return tuple(_unwrap_loose(v) for v in x)
    return x


def wrap(x):
    if isinstance(x, np.ndarray) and not isinstance(x, StrictArray):
        return StrictArray(x)
    if isinstance(x, np.generic):
        return StrictArray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(wrap(v) for v in x)
    if isinstance(x, list) and x and all(isinstance(v, np.ndarray) for v in x):
        return [wrap(v) for v in x]
    return x


class _Device:
    id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass

    def use(self):
        return self


SYNCS: list[str] = []  # each device-to-host read (a GPU waits for its queue there), by kind


def _sync(kind):
    SYNCS.append(kind)


class StrictArray(NDArrayOperatorsMixin):
    """Stands for a ``cupy.ndarray``: see the module docstring."""

    __slots__ = ("_a", "__weakref__")  # cupy.ndarray takes weak references
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, a):
        self._a = a

    # ---- the conversions cupy refuses or allows ---------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise StrictError(IMPLICIT)

    def get(self, stream=None, order="C", out=None):
        _sync("get")
        return np.array(self._a, order=order)

    def set(self, arr, stream=None):
        self._a[...] = arr

    def __float__(self):
        _sync("float")
        return float(self._a)

    def __int__(self):
        _sync("int")
        return int(self._a)

    def __bool__(self):
        _sync("bool")
        return bool(self._a)

    def __complex__(self):
        _sync("complex")
        return complex(self._a)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        for row in self._a:
            yield wrap(row)

    def __repr__(self):
        return "strict" + repr(self._a)

    def __copy__(self):
        return StrictArray(self._a.copy())

    def __deepcopy__(self, memo):
        return StrictArray(self._a.copy())

    def __reduce__(self):
        return (StrictArray, (self._a,))

    # ---- attributes ---------------------------------------------------------------------------
    shape = property(lambda s: s._a.shape)
    dtype = property(lambda s: s._a.dtype)
    ndim = property(lambda s: s._a.ndim)
    size = property(lambda s: s._a.size)
    strides = property(lambda s: s._a.strides)
    itemsize = property(lambda s: s._a.itemsize)
    nbytes = property(lambda s: s._a.nbytes)
    flags = property(lambda s: s._a.flags)
    T = property(lambda s: StrictArray(s._a.T))
    mT = property(lambda s: StrictArray(np.swapaxes(s._a, -1, -2)))
    device = property(lambda s: _Device())
    base = property(lambda s: None if s._a.base is None else StrictArray(s._a.base))

    @property
    def real(self):
        return StrictArray(self._a.real)

    @property
    def imag(self):
        return StrictArray(self._a.imag)

    def __getattr__(self, name):
        if name.startswith("_") or not _cupy_has(f"ndarray.{name}"):
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")
        attr = getattr(self._a, name)
        if not callable(attr):
            return wrap(attr)

        def method(*args, **kwargs):
            args = _unwrap(args, f"ndarray.{name}")
            kwargs = {k: _unwrap(v, f"ndarray.{name}") for k, v in kwargs.items()}
            if "out" in kwargs:
                out = kwargs["out"]
                attr(*args, **kwargs)
                return out if isinstance(out, StrictArray) else wrap(out)
            return wrap(attr(*args, **kwargs))

        return method

    def view(self, dtype=None):
        return StrictArray(self._a if dtype is None else self._a.view(dtype))

    def item(self, *args):
        _sync("item")
        return self._a.item(*args)

    def tolist(self):
        _sync("tolist")
        return self._a.tolist()

    # ---- indexing -----------------------------------------------------------------------------
    def __getitem__(self, key):
        return wrap(self._a[_unwrap_loose(key)])

    def __setitem__(self, key, value):
        self._a[_unwrap_loose(key)] = _unwrap_loose(value)

    # ---- numpy's protocols, as cupy answers them ----------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if not _cupy_has(ufunc.__name__) or (method != "__call__"
                                             and not _cupy_has(f"{ufunc.__name__}.{method}")):
            return NotImplemented
        where = f"np.{ufunc.__name__}.{method}"
        if method == "at":
            target = inputs[0]
            if not isinstance(target, StrictArray):
                raise StrictError(f"{where} on a {type(target).__name__}")
            rest = [_unwrap(v, where) if not isinstance(v, tuple) else _unwrap_loose(v)
                    for v in inputs[1:]]
            rest[0] = _unwrap_loose(inputs[1])
            getattr(ufunc, method)(target._a, *rest, **kwargs)
            return None
        arrays = _unwrap(inputs, where)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = _unwrap(out, where)
        result = getattr(ufunc, method)(*arrays, **kwargs)
        if out is not None:
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        module = func.__module__ or "numpy"
        sub = module.split(".")[1:] if module.startswith("numpy") else []
        sub = [s for s in sub if not s.startswith("_")]
        if not _cupy_has(".".join([*sub, func.__name__])):
            return NotImplemented
        where = f"np.{'.'.join([*sub, func.__name__])}"
        result = func(*_unwrap(args, where),
                      **{k: _unwrap(v, where) for k, v in kwargs.items()})
        return wrap(result)


StrictArray.__module__ = "cupy"
StrictArray.__name__ = StrictArray.__qualname__ = "ndarray"


# ---- the fake cupy module ---------------------------------------------------------------------
class _Ufunc:
    def __init__(self, uf):
        self._uf = uf
        self.__name__ = uf.__name__

    def __call__(self, *args, **kwargs):
        return _run(self._uf, f"cupy.{self.__name__}", args, kwargs)

    def __getattr__(self, method):
        if not _cupy_has(f"{self.__name__}.{method}"):
            raise AttributeError(method)
        if method == "at":  # the index is converted as cupy's indexing converts it
            return lambda a, index, *rest: _run(
                lambda a_, *r: self._uf.at(a_, _unwrap_loose(index), *r),
                f"cupy.{self.__name__}.at", (a, *rest), {})
        return lambda *a, **kw: _run(getattr(self._uf, method),
                                     f"cupy.{self.__name__}.{method}", a, kw)


def _run(fn, where, args, kwargs):
    """``fn`` (numpy's) on the device arrays' numpy arrays; host arrays refused; the result
    (or ``out``) as device arrays."""
    _device_args(args, where)
    out = kwargs.get("out")
    result = fn(*_unwrap_loose(tuple(args)),
                **{k: _unwrap_loose(v) for k, v in kwargs.items()})
    return out if out is not None else wrap(result)


def _device_args(args, where):
    """cupy functions refuse host arrays; StrictArrays dispatch through numpy's protocols."""
    for a in args:
        if isinstance(a, np.ndarray):
            raise StrictError(f"Unsupported type {type(a)} (a host numpy array in {where})")
    return args


def _real_signature(path, root=None):
    """The installed cupy's signature of ``path`` (``"indices"``, ``"linalg.solve"``), or None
    where it has none to read (a compiled function) or cupy is absent."""
    obj = _real_cupy() if root is None else root
    for part in path.split(".") if obj is not None else ():
        obj = getattr(obj, part, None)
    try:
        return inspect.signature(obj) if obj is not None else None
    except (TypeError, ValueError):
        return None


def _function(name, fn, real=None):
    sig = _real_signature(name, real)
    short = name.rsplit(".", 1)[-1]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if sig is not None:  # numpy's keywords cupy lacks (indices(sparse=)) raise as cupy's
            try:
                sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{short}() {e} (cupy's signature {sig})") from None
        args = _unwrap(args, f"cupy.{name}")
        kwargs = {k: _unwrap(v, f"cupy.{name}") for k, v in kwargs.items()}
        return wrap(fn(*args, **kwargs))

    return call


def _asarray(a, dtype=None, order=None, *, blocking=False, copy=None):
    if isinstance(a, StrictArray):
        return a if dtype is None or a.dtype == dtype else StrictArray(a._a.astype(dtype))
    return StrictArray(np.array(_unwrap_loose(a), dtype=dtype, order=order or "K"))


def _array(a, dtype=None, copy=True, order="K", ndmin=0):
    base = a._a if isinstance(a, StrictArray) else a
    return StrictArray(np.array(base, dtype=dtype, copy=True, order=order, ndmin=ndmin))


def _asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if isinstance(a, StrictArray):
        _sync("asnumpy")
        return np.array(a._a, order=order)
    return np.asarray(a, order=order)


def _get_array_module(*args):
    return sys.modules["cupy"] if any(isinstance(a, StrictArray) for a in args) else np


class _Namespace(types.ModuleType):
    def __init__(self, name, numpy_part, real=None):
        super().__init__(name)
        self._np = numpy_part
        self._path = name.split(".")[1:]
        self._real = real

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if not (_cupy_has(name, self._real) if self._real is not None
                else _cupy_has(".".join([*self._path, name]))):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        obj = getattr(self._np, name)
        if isinstance(obj, np.ufunc):
            value = _Ufunc(obj)
        elif isinstance(obj, type) or not callable(obj):
            value = obj
        else:
            value = _function(".".join([*self._path, name]) if self._real is None else name,
                              obj, self._real)
        setattr(self, name, value)
        return value


class _RandomState:
    """cupy.random.RandomState's calls (a 64-bit seed; ``dtype=`` on the samplers) on numpy's
    generator: the numbers differ from a GPU's, the calls and the device arrays do not."""

    def __init__(self, seed=None):
        self._rs = np.random.RandomState(None if seed is None else int(seed) % 2**32)

    def __getattr__(self, name):
        if not _cupy_has(f"random.RandomState.{name}"):
            raise AttributeError(name)
        fn = getattr(self._rs, name)

        def call(*args, dtype=None, **kwargs):
            _device_args(args, f"cupy.random.RandomState.{name}")
            out = fn(*args, **kwargs)
            return wrap(out if dtype is None else np.asarray(out).astype(dtype))

        return call


def _scatter_add(a, slices, value):
    np.add.at(a._a, _unwrap_loose(slices), _unwrap_loose(value))


def _scatter_max(a, slices, value):
    np.maximum.at(a._a, _unwrap_loose(slices), _unwrap_loose(value))


def _scatter_min(a, slices, value):
    np.minimum.at(a._a, _unwrap_loose(slices), _unwrap_loose(value))


def make() -> types.ModuleType:
    """A fresh fake ``cupy`` module (and its ``cupyx``)."""
    _real_cupy()  # before the fake takes cupy's place in sys.modules
    cp = _Namespace("cupy", np)
    cp.linalg = _Namespace("cupy.linalg", np.linalg)
    cp.fft = _Namespace("cupy.fft", np.fft)
    cp.ndarray = StrictArray
    cp.random = types.SimpleNamespace(RandomState=_RandomState)
    cp.asarray = _asarray
    cp.array = _array
    cp.ascontiguousarray = lambda a, dtype=None: StrictArray(np.ascontiguousarray(
        _unwrap_loose(a), dtype))
    cp.asnumpy = _asnumpy
    cp.get_array_module = _get_array_module
    pool = types.SimpleNamespace(used_bytes=lambda: 0, total_bytes=lambda: 0,
                                 free_all_blocks=lambda: None)
    cp.get_default_memory_pool = lambda: pool
    cp.get_default_pinned_memory_pool = lambda: pool
    cuda = types.SimpleNamespace(Device=lambda index=0: _Device(),
                                 is_available=lambda: True,
                                 runtime=types.SimpleNamespace(
                                     getDeviceCount=lambda: 1,
                                     memGetInfo=lambda: (1 << 34, 1 << 34)),
                                 get_current_stream=lambda: types.SimpleNamespace(
                                     synchronize=lambda: None, ptr=0))
    cp.cuda = cuda
    cupyx = types.ModuleType("cupyx")
    cupyx.__path__ = []
    cupyx.scatter_add = _scatter_add
    cupyx.scatter_max, cupyx.scatter_min = _scatter_max, _scatter_min
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.__path__ = []
    import scipy.special  # noqa: PLC0415

    try:
        import cupyx.scipy.special as real_special  # noqa: PLC0415
    except Exception:  # pragma: no cover
        real_special = None
    cupyx.scipy.special = _Namespace("cupyx.scipy.special", scipy.special, real_special)
    cp._cupyx = cupyx
    return cp


def install(monkeypatch) -> types.ModuleType:
    """Make skiff's cupy this fake: ``backend.cupy()``, ``import cupy``/``cupyx``, and a
    ``cuda:0`` among the devices. Returns the fake module."""
    from skiff.kernels.backend import arrays, devices  # noqa: PLC0415

    cp = make()
    cpu = devices.resolve_device("cpu")
    monkeypatch.setattr(devices, "_cupy", lambda: cp)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    x = cp._cupyx
    for name, mod in (("cupyx", x), ("cupyx.scipy", x.scipy),
                      ("cupyx.scipy.special", x.scipy.special)):
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setenv("SKIFF_REFERENCE_OPS", "1")  # the CUDA twins are checked elsewhere
    gpu = devices.Device(name="cuda:0", kind="gpu", vendor="NVIDIA", model="strict fake",
                         index=0, total_memory=1 << 34, free_memory=1 << 34, cores=1)
    monkeypatch.setattr(devices, "_gpu_devices", lambda: [gpu])
    arrays._known_device.cache_clear()
    monkeypatch.setattr(arrays, "_known_device",
                        lambda name: gpu if name.startswith("cuda") else cpu)
    return cp
