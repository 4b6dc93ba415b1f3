"""Fake quantization for quantization-aware training: a tensor rounded to the integer grid an
int8 graph will hold it on, and back to float, in one autograd node.

``fake_quant(x, scale, zero_point, qmin, qmax, axis)`` is what onnxruntime's
``QuantizeLinear`` then ``DequantizeLinear`` compute (round half to even, saturate, scale
back): per tensor with scalar ``scale``/``zero_point``, per channel with 1-D ones along
``axis`` (a convolution's weight: axis 0, one scale per output channel, zero point 0). The
gradient is the straight-through estimator: it passes unchanged where ``x`` lies on the
grid's range and is zero where it was saturated (the clipped values do not move the output).
Scales and zero points are fixed (calibrated ranges), not learned.

The node keeps the boolean mask of the range, nothing else.
"""

from __future__ import annotations

import numpy as np

from ..core.autograd import Function, xp_of
from ..core.tensor import Tensor

__all__ = ["FakeQuantFn", "fake_quant", "INT8", "UINT8"]

INT8 = (-128, 127)
UINT8 = (0, 255)


def _shaped(v, x, axis):
    xp = xp_of(x)
    v = xp.asarray(v, dtype=x.dtype)
    if v.ndim == 0 or axis is None:
        return v
    shape = [1] * x.ndim
    shape[axis] = -1
    return v.reshape(shape)


class FakeQuantFn(Function):
    """``(clip(round(x / s) + z, qmin, qmax) - z) * s``; the gradient passes where the
    rounded value was not saturated."""

    def forward(self, x, scale=1.0, zero_point=0, qmin=-128, qmax=127, axis=None):
        xp = xp_of(x)
        s = _shaped(scale, x, axis)
        z = _shaped(zero_point, x, axis)
        q = xp.rint(x / s) + z
        mask = (q >= qmin) & (q <= qmax)
        self.save_for_backward(mask)
        return ((xp.clip(q, qmin, qmax) - z) * s).astype(x.dtype, copy=False)

    def backward(self, g):
        (mask,) = self.saved
        return g * mask


def fake_quant(x: Tensor, scale, zero_point=0, qmin: int = -128, qmax: int = 127,
               axis: int | None = None) -> Tensor:
    """``x`` through an int grid and back (see the module docstring). ``scale`` and
    ``zero_point`` are scalars, or 1-D along ``axis`` (per channel)."""
    scale_arr = np.asarray(scale, np.float64)
    if np.any(scale_arr <= 0):
        raise ValueError("fake_quant: every scale must be positive (a calibrated range of "
                         "width 0 gives scale 0: widen it, e.g. max(scale, 1e-8))")
    if scale_arr.ndim > 0 and axis is None:
        raise ValueError("fake_quant: per-channel scales need the channel axis (axis=0 for "
                         "a convolution's weight)")
    if qmin >= qmax:
        raise ValueError(f"fake_quant: qmin {qmin} must be below qmax {qmax}")
    return FakeQuantFn.apply(x, scale=scale, zero_point=zero_point, qmin=qmin, qmax=qmax,
                             axis=axis)
