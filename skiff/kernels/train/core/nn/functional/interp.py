"""torch's ``interpolate`` beyond whole-factor nearest upsampling: ``nearest`` by any size or
factor, ``linear`` (N, C, L), ``bilinear`` (N, C, H, W) and ``trilinear``, with torch's
``align_corners`` and source-index rules, and ``bicubic`` (torch's A = -0.75, taps clamped
at the edges). Each axis is two gathers of precomputed indices
and a weighted sum, so the gradient is torch's. tests/kernels/train/core/test_torch_gaps_r26.py
compares values and gradients with torch in float64.
"""

from __future__ import annotations

import math

import numpy as np

from ...tensor import Tensor

__all__ = ["interpolate_general"]

_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _sizes(x, size, scale_factor, k):
    """Output sizes of the last ``k`` axes, and the scale each source index uses (torch's:
    1 / scale_factor when a factor is given, else in / out)."""
    ins = x.shape[-k:]
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate takes either size or scale_factor, exactly one")
    if size is not None:
        outs = (size,) * k if isinstance(size, int) else tuple(size)
        if len(outs) != k:
            raise ValueError(f"interpolate: size {size} for {k} spatial axes")
        return tuple(int(o) for o in outs), [n / o for n, o in zip(ins, outs)]
    sf = (scale_factor,) * k if not isinstance(scale_factor, (tuple, list)) else scale_factor
    if len(sf) != k:
        raise ValueError(f"interpolate: scale_factor {scale_factor} for {k} spatial axes")
    return tuple(int(math.floor(n * f)) for n, f in zip(ins, sf)), [1.0 / f for f in sf]


def _along(x, axis, idx):
    return x.index_select(axis, x.xp.asarray(idx))


def _weights(x, axis, lam):
    shape = [1] * x.ndim
    shape[axis] = lam.size
    return Tensor._make(x.xp.asarray(lam.reshape(shape).astype(x.dtype)), False, None, 0)


def interpolate_general(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                        recompute_scale_factor=None):
    if mode in _LINEAR:
        k = _LINEAR[mode]
    elif mode == "bicubic":
        k = 2
    elif mode in ("nearest", "nearest-exact", "area"):
        k = x.ndim - 2
        if align_corners is not None:
            raise ValueError("align_corners only goes with the linear modes (torch's rule)")
    else:
        raise ValueError(f"interpolate mode {mode!r}: 'nearest', 'nearest-exact', 'area', "
                         "'linear', 'bilinear', 'bicubic' or 'trilinear' here")
    if x.ndim != k + 2:
        raise ValueError(f"interpolate mode {mode!r} expects a {k + 2}-D input (N, C, ...), "
                         f"got {tuple(x.shape)}")
    outs, scales = _sizes(x, size, scale_factor, k)
    if recompute_scale_factor:
        scales = [n / o for n, o in zip(x.shape[-k:], outs)]
    if mode == "area":  # torch's: adaptive average pooling to the output size
        from ..conv3d import _bins

        out = x
        for j in range(k):
            a = Tensor._make(_bins(x.xp, x.shape[2 + j], outs[j], x.dtype), False, None, 0)
            out = (out.swapaxes(2 + j, -1) @ a).swapaxes(2 + j, -1)
        return out
    out = x
    for j in range(k):
        axis = x.ndim - k + j
        n, m, scale = x.shape[axis], outs[j], scales[j]
        dst = np.arange(m, dtype=np.float64)
        if mode == "nearest":
            out = _along(out, axis, np.minimum(np.floor(dst * scale).astype(np.int64), n - 1))
            continue
        if mode == "nearest-exact":  # torch's: the source pixel whose centre is nearest
            out = _along(out, axis, np.minimum(np.floor((dst + 0.5) * scale).astype(np.int64),
                                               n - 1))
            continue
        if mode == "bicubic":
            out = _cubic(out, axis, n, m, scale, align_corners)
            continue
        if align_corners:
            src = dst * ((n - 1) / (m - 1)) if m > 1 else np.zeros(m)
        else:
            src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
        i1 = np.minimum(i0 + 1, n - 1)
        lam = src - i0
        out = (_along(out, axis, i0) * _weights(out, axis, 1.0 - lam)
               + _along(out, axis, i1) * _weights(out, axis, lam))
    return out


_A = -0.75  # torch's (and OpenCV's) cubic convolution constant


def _cubic(x, axis, n, m, scale, align_corners):
    """torch's bicubic along one axis: four taps at ``floor(src) - 1 .. + 2`` clamped to the
    edge, Keys' cubic convolution weights (A = -0.75); the source index is not clamped at 0
    (torch's ``area_pixel_compute_source_index`` for cubic)."""
    dst = np.arange(m, dtype=np.float64)
    if align_corners:
        src = dst * ((n - 1) / (m - 1)) if m > 1 else np.zeros(m)
    else:
        src = (dst + 0.5) * scale - 0.5
    i0 = np.floor(src).astype(np.int64)
    t = src - i0

    def near(d):  # |d| <= 1
        return ((_A + 2) * d - (_A + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((_A * d - 5 * _A) * d + 8 * _A) * d - 4 * _A

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    out = None
    for k, w in enumerate(weights):
        term = _along(x, axis, np.clip(i0 - 1 + k, 0, n - 1)) * _weights(x, axis, w)
        out = term if out is None else out + term
    return out
