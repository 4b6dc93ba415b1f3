"""torch's ``Size`` (round 43 h16, its own module since round 44 h7): ``x.size()`` returns one,
so ``tensor.py`` imports it; numpy-free, no skiff import."""

from __future__ import annotations

import math
import operator

_new = tuple.__new__
_getitem = tuple.__getitem__


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
        if key.__class__ is slice:
            return _new(Size, _getitem(self, key))
        return _getitem(self, key)

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
