"""Round 47 (h5): ``leaky_relu``, ``hardshrink``, ``softshrink``, ``threshold`` (and ``rrelu``
out of training, torch's ``leaky_relu`` at the mean slope) as one node whose gradient stays in
the graph, as torch's: torch's ``leaky_relu_backward``, ``hardshrink_backward``,
``softshrink_backward`` and ``threshold_backward`` read ``self``, so ``grad`` of the gradient is
a tensor that requires grad (zeros, constant) and a third ``grad`` gives zeros; written with
``where`` the gradient was a constant and that third ``grad`` raised. Gradients at the kinks are
torch's (``x > 0`` for leaky_relu, ``|x| > lambd`` for the shrinks, ``x > threshold``).

A tensor that needs no gradient (and a ``vmap``'d one) keeps the ``where`` forms, so batching
rules and first-order programs see what they saw before.
"""

from __future__ import annotations

from ...autograd import Function, is_grad_enabled, xp_of
from ...double_helpers import input_t, tie_t
from ...tensor import Tensor, where

__all__ = ["piecewise_linear"]


def _zero(x):
    return x.xp.zeros((), dtype=x.dtype)


def _where_form(x, kind, a, b):
    if kind == "leaky":
        return where(x > 0, x, x * a)
    if kind == "hardshrink":
        return where(abs(x._data) > a, x, _zero(x))
    if kind == "softshrink":
        return where(x._data > a, x - a, where(x._data < -a, x + a, _zero(x)))
    return where(x._data > a, x, b)  # threshold


class PiecewiseLinearFn(Function):
    """``x * scale(x) + shift(x)`` with ``scale``/``shift`` constant between the kinks."""

    def forward(self, x, kind="leaky", a=0.0, b=0.0):
        xp = xp_of(x)
        self.save_for_backward(x)
        self.kind, self.a = kind, a
        if kind == "leaky":
            y = xp.where(x > 0, x, x * a)
        elif kind == "hardshrink":
            y = xp.where(xp.abs(x) > a, x, 0)
        elif kind == "softshrink":
            y = xp.where(x > a, x - a, xp.where(x < -a, x + a, 0))
        else:
            y = xp.where(x > a, x, b)
        return y.astype(x.dtype, copy=False)

    def _scale(self, x):
        xp, a = xp_of(x), self.a
        if self.kind == "leaky":
            return xp.where(x > 0, 1, a).astype(x.dtype, copy=False)
        keep = xp.abs(x) > a if self.kind in ("hardshrink", "softshrink") else x > a
        return keep.astype(x.dtype)

    def backward(self, g):
        return g * self._scale(self.saved[0])

    def backward_t(self, want, g):
        (x,) = self.saved  # tied to the input: torch's ``*_backward(grad, self)``
        return tie_t(g * self._scale(x), input_t(self, 0, x))


def piecewise_linear(x: Tensor, kind: str, a: float, b: float = 0.0) -> Tensor:
    """``kind``: "leaky" (slope ``a``), "hardshrink"/"softshrink" (``lambd`` ``a``), "threshold"
    (``a``, value ``b``)."""
    if not (x.requires_grad and is_grad_enabled()) or hasattr(x, "_phys") \
            or x.dtype.kind != "f":
        return _where_form(x, kind, a, b)
    return PiecewiseLinearFn.apply(x, kind=kind, a=a, b=b)
