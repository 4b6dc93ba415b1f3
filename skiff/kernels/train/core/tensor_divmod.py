"""torch's integer-style division on skiff tensors: ``a // b`` and ``a % b`` (also with a
number on the left, and in place: ``//=``, ``%=``), ``floor_divide``, ``remainder``, ``fmod``,
``div(b, rounding_mode="floor" | "trunc")`` and ``__index__`` (``[10, 20, 30][skiff.tensor(2)]``).

Semantics are torch's (and Python's): ``//`` rounds towards minus infinity, ``%`` takes the sign
of the divisor, ``fmod`` that of the dividend; an integer division by zero raises
``RuntimeError: ZeroDivisionError``. Gradients are torch's: ``remainder`` passes ``g`` to ``a``
and ``-g * floor(a / b)`` to ``b`` (``fmod``: ``trunc``); ``floor_divide`` has none (its
backward raises, as torch's). Installed on ``Tensor`` by :mod:`.tensor`, which gives its type
promotion; tests/kernels/train/core/test_torch_gaps_r26.py compares each with torch.
"""

from __future__ import annotations

import numpy as np

from .autograd import Function, xp_of
from .ops_math import _shape, unbroadcast

_BASE: dict = {}  # Tensor, promote: set by install()


def _xp(a, b):
    return xp_of(a if hasattr(a, "shape") else b)


def _check_int_zero(a, b):
    """torch refuses an integer division by zero (numpy would give 0 and a warning)."""
    if getattr(a, "dtype", np.dtype(float)).kind in "iub" and np.dtype(
            getattr(b, "dtype", type(b))).kind in "iub":
        if bool((_xp(b, a).asarray(b) == 0).any()):
            raise RuntimeError("ZeroDivisionError: integer division or remainder by zero")


class _Floor(Function):
    """``a // b`` (``trunc``: rounded towards zero). ``floor_divide`` has no derivative in torch
    (backward raises); ``div(..., rounding_mode=...)`` has a zero one (``zero_grad``)."""

    def forward(self, a, b, trunc=False, zero_grad=False):
        _check_int_zero(a, b)
        xp = _xp(a, b)
        self.sa, self.sb, self.zero_grad = _shape(a), _shape(b), zero_grad
        q = xp.floor_divide(a, b) if not trunc or q_int(a, b) else xp.trunc(a / b)
        if trunc and q_int(a, b):  # one up where the floor went below a negative quotient
            q = q + ((xp.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(q.dtype)
        return q

    def backward(self, g):
        if not self.zero_grad:
            raise RuntimeError("the derivative of floor_divide (//) is not implemented (torch's "
                               "is not either): detach the input, or use div(a, b, "
                               "rounding_mode='floor') for a zero gradient")
        xp = xp_of(g)
        na, nb = self.needs_input_grad
        return (xp.zeros(self.sa, g.dtype) if na else None,
                xp.zeros(self.sb, g.dtype) if nb else None)


class _Rem(Function):
    """``a - q * b`` with ``q = floor(a / b)`` (remainder) or ``trunc(a / b)`` (fmod)."""

    def forward(self, a, b, trunc=False):
        _check_int_zero(a, b)
        xp = _xp(a, b)
        self.sa, self.sb, self.trunc = _shape(a), _shape(b), trunc
        self.save_for_backward(a if self.needs_input_grad[1] else None, b)
        if trunc:
            return xp.fmod(a, b)
        if np.dtype(getattr(a, "dtype", type(a))).kind != "f" and np.dtype(
                getattr(b, "dtype", type(b))).kind != "f":
            return xp.remainder(a, b)
        r = xp.fmod(a, b)  # torch's float remainder: fmod moved to the divisor's sign
        return xp.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)

    def backward(self, g):
        a, b = self.saved
        na, nb = self.needs_input_grad
        gb = None
        if nb:
            xp = xp_of(g)
            q = xp.trunc(a / b) if self.trunc else xp.floor_divide(a, b)
            gb = unbroadcast(-g * q, self.sb)
        return (unbroadcast(g, self.sa) if na else None), gb


def floor_divide(self, other):
    a, b = _BASE["promote"](self, other)
    return _Floor.apply(a, b)


def rfloor_divide(self, other):
    a, b = _BASE["promote"](other, self)
    return _Floor.apply(a, b)


def remainder(self, other):
    return _Rem.apply(*_BASE["promote"](self, other))


def rremainder(self, other):
    return _Rem.apply(*_BASE["promote"](other, self))


def fmod(self, other):
    return _Rem.apply(*_BASE["promote"](self, other), trunc=True)


def div(self, other, *, rounding_mode=None):
    """torch's ``div``: true division, or ``rounding_mode="floor"`` (``//``) or ``"trunc"``
    (towards zero; integer inputs stay integers)."""
    if rounding_mode is None:
        return self / other
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got "
                         f"{rounding_mode!r}")
    a, b = _BASE["promote"](self, other, True) if not q_int(self, other) else (self, other)
    return _Floor.apply(a, b, trunc=rounding_mode == "trunc", zero_grad=True)


def q_int(a, b) -> bool:
    """Both integer (or bool) arrays or numbers."""
    return all(np.dtype(getattr(x, "dtype", type(x))).kind in "iub" for x in (a, b))


def index(self):
    """``operator.index(t)``: a one-element integer tensor as a Python int (list indexing,
    ``range(t)``); anything else raises torch's TypeError."""
    if self.dtype.kind not in "iu" or self._data.size != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(self.item())


def install(tensor_class, promote, inplace_binary) -> None:
    """Attach the operators and methods to ``tensor_class`` (idempotent); ``promote`` is
    tensor.py's type promotion, ``inplace_binary`` tensor_torch's ``x += y``."""
    _BASE.update(Tensor=tensor_class, promote=promote)
    methods = {
        "__floordiv__": floor_divide, "__rfloordiv__": rfloor_divide,
        "__mod__": remainder, "__rmod__": rremainder,
        "__ifloordiv__": lambda self, o: inplace_binary(self, o, "//="),
        "__imod__": lambda self, o: inplace_binary(self, o, "%="),
        "__index__": index,
        "floor_divide": floor_divide, "remainder": remainder, "fmod": fmod, "div": div,
        "divide": div,
        "floor_divide_": lambda self, o: inplace_binary(self, o, "//="),
        "remainder_": lambda self, o: inplace_binary(self, o, "%="),
    }
    for name, fn in methods.items():
        setattr(tensor_class, name, fn)


__all__ = ["install"]
