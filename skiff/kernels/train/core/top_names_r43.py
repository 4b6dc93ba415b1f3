"""Round 43 (h16): torch's top-level names that a script run by ``import skiff as torch``
uses and skiff lacked: ``Size``, ``dtype``, ``pi``/``e``/``inf``/``nan``, the memory formats
(``channels_last``, ``contiguous_format``, ...: accepted, values unchanged: skiff's arrays
have no layout to choose) and the legacy dense types ``FloatTensor``/``DoubleTensor``/
``LongTensor`` (torch's top-level ones build a dense tensor: ``skiff.sparse``'s take
``(indices, values, size)``, another call, so they are not reused here).

``install(Tensor)`` lets ``contiguous``/``clone`` take ``memory_format=``; ``accept_memory_format``
wraps the ``*_like``/``empty`` creators (torch's take the keyword)."""

from __future__ import annotations

import functools
import math

import numpy as np

from .autograd import Function
from .torch_size import Size  # (round 44: its own module, tensor.py uses it)

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan

# torch.dtype: skiff's dtypes (``skiff.float32``, ``x.dtype``) are numpy dtypes
dtype = np.dtype





class _Named:
    """A torch constant known by its name (``torch.channels_last``, ``torch.strided``): its
    repr is torch's and it pickles as the module-level name."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


class memory_format(_Named):  # noqa: N801 - torch's name
    """torch's ``memory_format``: ``contiguous``/``clone``/``to`` lay a tensor out in it
    (channels-last strides as torch's) and ``is_contiguous`` checks it (round 44)."""


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


def _check_format(fmt):
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be torch.memory_format, not "
                        f"{type(fmt).__name__}")


def accept_memory_format(fn):
    """``fn`` also taking torch's ``memory_format=`` keyword (checked, then dropped)."""
    @functools.wraps(fn)
    def wrapped(*args, memory_format=None, **kwargs):
        _check_format(memory_format)
        return fn(*args, **kwargs)

    return wrapped


class _LegacyMeta(type):
    @property
    def dtype(cls):
        dt = cls.__dict__["_dt"]
        if isinstance(dt, str):  # bfloat16: ml_dtypes loads on first use (~0.6 s)
            from .tensor import _as_dtype

            dt = _as_dtype(dt)
            type.__setattr__(cls, "_dt", dt)
        return dt

    def __instancecheck__(cls, obj):
        from .tensor import Tensor

        return isinstance(obj, Tensor) and np.dtype(obj.dtype) == cls.dtype

    def __call__(cls, *args):
        """torch's legacy constructor: ``()`` -> shape (0,); ints or a Size -> that shape
        (zeros: skiff hands out no uninitialised memory); else data, as ``tensor``."""
        from .tensor import Tensor

        if not args:
            args = (0,)
        if len(args) == 1 and isinstance(args[0], Size) and type(args[0]) is Size:
            args = tuple(args[0])
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            shape = tuple(int(a) for a in args)
            return Tensor(np.zeros(shape, dtype=cls.dtype), dtype=cls.dtype)
        if len(args) != 1:
            raise TypeError(f"{cls.__name__}(): expected sizes or one data argument")
        data = args[0]
        if isinstance(data, Tensor):
            if np.dtype(data.dtype) != cls.dtype:
                raise TypeError(f"expected {cls.dtype.name} tensor (got {data.dtype})")
            return data
        return Tensor(np.asarray(data, dtype=cls.dtype), dtype=cls.dtype)


def _legacy(name, dt):
    return _LegacyMeta(name, (), {"_dt": dt if isinstance(dt, str) else np.dtype(dt),
                                  "__module__": "torch"})


FloatTensor = _legacy("FloatTensor", np.float32)
DoubleTensor = _legacy("DoubleTensor", np.float64)
LongTensor = _legacy("LongTensor", np.int64)
# round 44 (h7): the other legacy dense types torch 2.13 has
IntTensor = _legacy("IntTensor", np.int32)
ShortTensor = _legacy("ShortTensor", np.int16)
CharTensor = _legacy("CharTensor", np.int8)
ByteTensor = _legacy("ByteTensor", np.uint8)
BoolTensor = _legacy("BoolTensor", np.bool_)
HalfTensor = _legacy("HalfTensor", np.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", "bfloat16")  # the dtype made on first use


class layout(_Named):  # noqa: N801 - torch's name
    """torch's ``layout``: ``x.layout`` is ``strided`` for skiff's (dense) tensors,
    ``sparse_coo`` for ``skiff.sparse``'s."""


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")

__all__ = ["Size", "dtype", "pi", "e", "inf", "nan", "memory_format", "contiguous_format",
           "channels_last", "channels_last_3d", "preserve_format", "FloatTensor",
           "DoubleTensor", "LongTensor",
           # round 44 (h7)
           "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor", "HalfTensor",
           "BFloat16Tensor", "layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc",
           "sparse_bsr", "sparse_bsc"]

# the creators that take torch's ``memory_format=`` and skiff's did not
LIKE_CREATORS = ("empty", "empty_like", "full_like", "randn_like", "rand_like")


# round 44 (h7): torch's channels-last layouts, as strides (numpy keeps any): the order in
# which torch's ``is_contiguous(memory_format=)`` walks the axes, innermost first
_LAST_ORDER = {"channels_last": (4, (1, 3, 2, 0)), "channels_last_3d": (5, (1, 4, 3, 2, 0))}


def is_contiguous(t, memory_format=None) -> bool:
    """torch's ``is_contiguous``: row-major strides (``contiguous_format``, the default), or
    the strides of ``channels_last`` (4-D) / ``channels_last_3d`` (5-D); axes of length 1
    are not looked at, as torch's. Another rank is not channels-last (False)."""
    _check_format(memory_format)
    a = t._data
    name = getattr(memory_format, "_name", "contiguous_format")
    if name not in _LAST_ORDER:
        flags = getattr(a, "flags", None)
        return True if flags is None else bool(flags.c_contiguous)
    rank, order = _LAST_ORDER[name]
    if a.ndim != rank:
        return False
    strides = getattr(a, "strides", None)
    if strides is None:  # a meta array: made row-major
        return False
    expected = 1
    for d in order:
        if a.shape[d] != 1:
            if strides[d] // a.itemsize != expected:
                return False
            expected *= a.shape[d]
    return True


class _Clone(Function):
    """A row-major copy (numpy's ``copy()``), the gradient passed as it is."""

    def forward(self, a):
        return a.copy()

    def backward(self, g):
        return g


def _dense_order(a):
    """The axes of ``a`` from the outermost stride in, when ``a`` is dense (its elements fill
    one block with no gaps or overlaps) but not row-major; else None (torch's
    ``preserve_format`` keeps such strides; a row-major or gapped array is copied row-major)."""
    flags = getattr(a, "flags", None)
    if flags is None or flags.c_contiguous or a.ndim < 2 or not a.size:
        return None
    perm = sorted(range(a.ndim), key=lambda d: -a.strides[d])
    expected = a.itemsize
    for d in reversed(perm):
        if a.shape[d] != 1:
            if a.strides[d] != expected:
                return None
            expected *= a.shape[d]
    return perm


def _to_format(t, fmt, copy: bool):
    """``t`` laid out as ``fmt`` asks (a differentiable copy where it is not already;
    ``copy``: always one, as ``clone``)."""
    _check_format(fmt)
    name = getattr(fmt, "_name", "contiguous_format")
    if name == "preserve_format":
        return _Clone.apply(t) if copy else t
    if name in _LAST_ORDER:
        rank, _ = _LAST_ORDER[name]
        if t.ndim != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {name} format")
        if not copy and is_contiguous(t, fmt):
            return t
        last = (0, *range(2, rank), 1)  # N, spatial..., C: made row-major, then put back
        back = (0, rank - 1, *range(1, rank - 1))
        return _Clone.apply(t.permute(*last)).permute(*back)
    if not copy and is_contiguous(t):
        return t
    return _Clone.apply(t)


def install(tensor_class) -> None:
    """``contiguous(memory_format=)``, ``clone(memory_format=)``, ``to(memory_format=)`` and
    ``is_contiguous(memory_format=)`` as torch's (round 44: the layouts as strides;
    ``contiguous()`` of a strided view is a row-major copy); ``x.layout``."""
    tensor_class.is_contiguous = is_contiguous
    tensor_class.layout = strided
    if not getattr(tensor_class.contiguous, "_takes_memory_format", False):
        def contiguous(self, memory_format=None):
            return _to_format(self, memory_format, copy=False)

        def clone(self, memory_format=None, *, _fn=tensor_class.clone):
            _check_format(memory_format)
            if memory_format is None or memory_format._name == "preserve_format":
                perm = None if getattr(self, "_batched", False) else _dense_order(self._data)
                if perm is None:
                    return _fn(self)
                # round 44 (h12): torch keeps a dense tensor's strides (a channels-last
                # clone stays channels-last, a transposed one transposed): copied in that order
                return _fn(self.permute(*perm)).permute(*np.argsort(perm).tolist())
            return _to_format(self, memory_format, copy=True)

        to = tensor_class.to

        def to_(self, *args, memory_format=None, _to=to, **kwargs):
            out = _to(self, *args, **kwargs)
            if memory_format is None:
                return out
            _check_format(memory_format)
            if memory_format._name in ("preserve_format", "contiguous_format"):
                return out if memory_format._name == "preserve_format" else out.contiguous()
            return _to_format(out, memory_format, copy=False)

        to_.__name__, to_.__doc__ = "to", to.__doc__
        for fn in (contiguous, clone, to_):
            fn._takes_memory_format = True
        tensor_class.contiguous, tensor_class.clone, tensor_class.to = contiguous, clone, to_

