"""torch's ``F.pad`` modes that copy the input's own values: ``reflect`` (mirrored without
the edge), ``replicate`` (the edge repeated) and ``circular`` (wrapped around), on the last 1-3
axes of a batched or unbatched input, as torch's; plus ``hardtanh``, ``relu6`` and ``mish``.

Each padded axis is one gather of precomputed indices (``index_select``), so the gradient sums
every copy back onto the cell it came from. tests/kernels/train/core/test_torch_gaps_r26.py
compares values and gradients with torch in float64.
"""

from __future__ import annotations

import numpy as np

from ...autograd import Function, xp_of
from ...tensor import Tensor

__all__ = ["pad_copying", "hardtanh", "relu6", "mish"]

_MODES = ("reflect", "replicate", "circular")


def _source(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """For each output position along an axis of length ``n`` padded by (lo, hi), the input
    position it copies."""
    i = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":
        return np.mod(i, n)
    i = np.abs(i)  # reflect: mirror at 0 and at n - 1, the edge itself not repeated
    return np.where(i > n - 1, 2 * (n - 1) - i, i)


def pad_copying(x, pad, mode):
    """``F.pad(x, pad, mode)`` for ``mode`` in reflect / replicate / circular."""
    if mode not in _MODES:
        raise ValueError(f"pad mode {mode!r}: use 'constant', 'reflect', 'replicate' or "
                         "'circular'")
    if len(pad) % 2:
        raise ValueError(f"pad takes (left, right) pairs from the last axis back, got {pad}")
    k = len(pad) // 2
    if not 1 <= k <= 3 or x.ndim not in (k + 1, k + 2):
        raise ValueError(f"pad mode {mode!r} pads the last 1-3 axes of a batched or unbatched "
                         f"input: {k} pair(s) need a {k + 1}-D or {k + 2}-D input, got "
                         f"{x.ndim}-D {tuple(x.shape)}")
    out = x
    for j in range(k):
        axis = x.ndim - 1 - j
        lo, hi = int(pad[2 * j]), int(pad[2 * j + 1])
        n = out.shape[axis]
        if lo < 0 or hi < 0:  # negative amounts cut first; the rest pads what is left
            out = out[(slice(None),) * axis + (slice(max(-lo, 0), n - max(-hi, 0)),)]
            lo, hi, n = max(lo, 0), max(hi, 0), out.shape[axis]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise ValueError(f"pad mode 'reflect': padding ({lo}, {hi}) must be less than the "
                             f"axis' size {n} (axis {axis})")
        if mode == "circular" and (lo > n or hi > n):
            raise ValueError(f"pad mode 'circular': padding ({lo}, {hi}) may not exceed the "
                             f"axis' size {n} (axis {axis})")
        if lo == 0 and hi == 0:
            continue
        idx = _source(n, lo, hi, mode)
        out = out.index_select(axis, out.xp.asarray(idx))
    return out


class _HardTanh(Function):
    """``clamp(x, lo, hi)`` with torch's gradient: ``g`` strictly inside, 0 at and beyond the
    bounds."""

    def forward(self, x, lo=-1.0, hi=1.0):
        self.save_for_backward(x)
        self.lo, self.hi = lo, hi
        return xp_of(x).clip(x, lo, hi).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved
        return g * ((x > self.lo) & (x < self.hi)).astype(g.dtype)


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} is above max_val {max_val}")
    return _HardTanh.apply(x, lo=min_val, hi=max_val)


def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    return _HardTanh.apply(x, lo=0.0, hi=6.0)


class _Mish(Function):
    """``x * tanh(softplus(x))``; the gradient ``t + x * sigmoid(x) * (1 - t^2)``."""

    def forward(self, x):
        xp = xp_of(x)
        sp = xp.logaddexp(0, x).astype(x.dtype, copy=False)
        t = xp.tanh(sp)
        self.save_for_backward(x, t)
        return x * t

    def backward(self, g):
        x, t = self.saved
        xp = xp_of(x)
        sig = 0.5 * (1 + xp.tanh(0.5 * x))
        return g * (t + x * sig * (1 - t * t))


def mish(x: Tensor, inplace: bool = False) -> Tensor:
    return _Mish.apply(x)
