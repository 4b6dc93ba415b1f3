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
import operator

import numpy as np

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan

# torch.dtype: skiff's dtypes (``skiff.float32``, ``x.dtype``) are numpy dtypes
dtype = np.dtype


class _SizeMeta(type):
    def __instancecheck__(cls, obj):
        # skiff's ``x.size()``/``x.shape`` are plain tuples of ints: taken as a Size
        # (torch's ``isinstance((2, 3), torch.Size)`` is False: the one difference)
        return type.__instancecheck__(cls, obj) or (
            isinstance(obj, tuple) and all(type(d) is int for d in obj))


class Size(tuple, metaclass=_SizeMeta):
    """torch's ``Size``: a tuple of ints (equal to and hashing as the plain tuple)."""

    def __new__(cls, sizes=()):
        return super().__new__(cls, (operator.index(d) for d in sizes))

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def numel(self) -> int:
        return math.prod(self)


class memory_format:  # noqa: N801 - torch's name
    """torch's ``memory_format``: skiff's arrays have one layout, so each is accepted and
    changes nothing."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


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
    return _LegacyMeta(name, (), {"dtype": np.dtype(dt), "__module__": "torch"})


FloatTensor = _legacy("FloatTensor", np.float32)
DoubleTensor = _legacy("DoubleTensor", np.float64)
LongTensor = _legacy("LongTensor", np.int64)

__all__ = ["Size", "dtype", "pi", "e", "inf", "nan", "memory_format", "contiguous_format",
           "channels_last", "channels_last_3d", "preserve_format", "FloatTensor",
           "DoubleTensor", "LongTensor"]

# the creators that take torch's ``memory_format=`` and skiff's did not
LIKE_CREATORS = ("empty", "empty_like", "full_like", "randn_like", "rand_like")


def install(tensor_class) -> None:
    """``contiguous(memory_format=)`` and ``clone(memory_format=)``, torch's keyword."""
    for name in ("contiguous", "clone"):
        fn = getattr(tensor_class, name)
        if getattr(fn, "_takes_memory_format", False):
            continue

        def method(self, memory_format=None, *, _fn=fn):
            _check_format(memory_format)
            return _fn(self)

        method.__name__ = name
        method._takes_memory_format = True
        setattr(tensor_class, name, method)
