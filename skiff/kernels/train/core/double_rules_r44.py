"""Round 44 (h12): double-backward rules of ``cumprod``, ``atan2`` and of the round-32
``special`` functions (``entr``, ``log_ndtr``, ``ndtri``, ``erfcx``, ``i0``/``i0e``/``i1``/
``i1e``): each derivative written again on tensors (the input from the graph, the output bound
to the node itself), so gradients of gradients through them match torch's to any order."""

from __future__ import annotations

import math

import numpy as np

from . import special_r32 as SP
from . import tensor_math_more as TM
from .double_helpers import input_t, output_t, unbroadcast_t
from .double_rules import rule
from .tensor import where

__all__: list[str] = []


def _safe(a_t, a, ok, fill=1.0):
    """``a_t`` where ``ok`` holds, ``fill`` elsewhere (so a formula's other branch stays
    finite and its gradient there is zero)."""
    return where(ok, a_t, np.asarray(fill, dtype=a.dtype))


@rule(SP._Unary)
def _special_unary(self, want, g):
    if not want[0]:
        return (None,)
    a, out = self.saved
    a_t, o_t, k = input_t(self, 0, a), output_t(self, 0, out), self.kind
    if k == "entr":  # -(1 + log x) for x > 0; +inf at 0, nan below (constants there)
        pos = a > 0
        d = where(pos, -(_safe(a_t, a, pos).log() + 1),
                  np.where(a == 0, np.inf, np.nan).astype(a.dtype))
    elif k == "log_ndtr":
        d = (-0.5 * a_t * a_t - 0.5 * math.log(2 * math.pi) - o_t).exp()
    elif k == "ndtri":
        d = math.sqrt(2 * math.pi) * (0.5 * o_t * o_t).exp()
    elif k == "erfcx":
        d = 2 * a_t * o_t - 2 / math.sqrt(math.pi)
    elif k == "i0":
        d = SP._Unary.apply(a_t, kind="i1")
    elif k == "i0e":
        d = SP._Unary.apply(a_t, kind="i1e") - a_t.sign() * o_t
    else:  # i1, i1e: 1/2 at 0 (the limit)
        nz = a != 0
        s = _safe(a_t, a, nz)
        if k == "i1":
            d = SP._Unary.apply(a_t, kind="i0") - o_t / s
        else:
            d = SP._Unary.apply(a_t, kind="i0e") - o_t * (a_t.sign() + 1 / s)
        d = where(nz, d, np.asarray(0.5, dtype=a.dtype))
    return (g * d,)


@rule(TM._Cumprod)
def _cumprod(self, want, g):
    """``rev_cumsum(g * out) / x`` when no input on the axis is zero; else each input's
    running products with itself set to 1 (row i of an (n, n) stack), multiplied out by
    ``cumprod`` itself and summed from i on: exact at zeros, differentiable again."""
    if not want[0]:
        return (None,)
    a, out = self.saved
    ax = self.axis % a.ndim
    a_t = input_t(self, 0, a)
    if not bool((a == 0).any()):
        return ((g * output_t(self, 0, out)).flip(ax).cumsum(ax).flip(ax) / a_t,)
    n = a.shape[ax]
    xm = a_t.movedim(ax, -1)  # (..., n)
    rows = xm.unsqueeze(-2).expand(*xm.shape[:-1], n, n).masked_fill(np.eye(n, dtype=bool), 1.0)
    prods = TM._Cumprod.apply(rows, axis=-1)  # row i: prod_{k <= j, k != i} x_k at j
    later = np.triu(np.ones((n, n), dtype=bool))  # j >= i
    gm = g.movedim(ax, -1).unsqueeze(-2)  # (..., 1, n)
    gx = (gm * prods).masked_fill(~later, 0.0).sum(-1)
    return (gx.movedim(-1, ax),)


@rule(TM._Atan2)
def _atan2(self, want, g):
    """``g b / (a^2 + b^2)`` and ``-g a / (a^2 + b^2)``, 0 where both are 0 (torch's)."""
    a, b = self.saved
    a_t, b_t = input_t(self, 0, a), input_t(self, 1, b)
    zero = (a == 0) & (b == 0)  # a is an array (atan2's self), b maybe a number
    den = a_t * a_t + b_t * b_t
    if bool(zero.any()):
        den = where(zero, np.asarray(1.0, dtype=den.dtype), den)
        d = where(zero, np.asarray(0.0, dtype=den.dtype), g / den)
    else:
        d = g / den
    return (unbroadcast_t(d * b_t, self.sa) if want[0] else None,
            unbroadcast_t(-d * a_t, self.sb) if want[1] else None)
