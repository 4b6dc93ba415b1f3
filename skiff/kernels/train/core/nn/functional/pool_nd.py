"""Pooling over any number of trailing spatial axes, torch's window rules: ``PoolNdFn``
(max and average; padding, dilation, ``count_include_pad``, ``divisor_override``;
``ceil_mode`` for max), ``max_pool_nd`` with torch's ``return_indices`` (flat indices into
each input plane), and ``max_unpool_nd`` (``MaxUnpoolFn``: the values put back at those
indices; its gradient gathers them). Windows are strided slices, one per kernel offset; every
step is an ``xp`` expression (no host reads)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from ...autograd import Function, xp_of
from ...tensor import Tensor

__all__ = ["PoolNdFn", "MaxUnpoolFn", "max_pool_nd", "max_unpool_nd", "window_max",
           "padded_windows", "nd_pool_args", "avg_pool_nd"]


def _tuple(v, n, name):
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    if isinstance(v, (tuple, list)) and len(v) == n:
        return tuple(int(a) for a in v)
    raise ValueError(f"{name} must be an int or {n} ints, got {v!r}")


def _out_sizes(sizes, k, s, d):
    out = tuple((n - dd * (kk - 1) - 1) // ss + 1 for n, kk, ss, dd in zip(sizes, k, s, d))
    if min(out) < 1:
        raise ValueError(f"the input's spatial size {tuple(sizes)} (padded) is smaller than "
                         f"the kernel {k} (dilation {d})")
    return out


def _slices(offset, k_dil, s, out):
    return tuple(slice(o * dd, o * dd + ss * (n - 1) + 1, ss)
                 for o, dd, ss, n in zip(offset, k_dil, s, out))


def _pad(xp, x, p, value=0.0):
    if not any(p):
        return x
    return xp.pad(x, [(0, 0), (0, 0)] + [(a, a) for a in p], constant_values=value)


def _unpad(x, p, sizes):
    return x[(slice(None), slice(None)) + tuple(slice(a, a + n) for a, n in zip(p, sizes))]


def padded_windows(xp, x, k, stride, padding, dilation, ceil_mode, fill):
    """``x`` padded with ``fill`` (and, under ``ceil_mode``, on the right as far as the last
    window reaches: torch's rule, a window must start inside the input or its left padding)
    and the output sizes."""
    xp_ = _pad(xp, x, padding, fill)
    if not ceil_mode:
        return xp_, _out_sizes(xp_.shape[2:], k, stride, dilation)
    out, extra = [], []
    for n, kk, s, d, p in zip(xp_.shape[2:], k, stride, dilation, padding):
        span = d * (kk - 1) + 1
        if n < span:
            raise ValueError(f"the input's spatial size {tuple(x.shape[2:])} (padded) is "
                             f"smaller than the kernel {k} (dilation {dilation})")
        o = -(-(n - span) // s) + 1
        if (o - 1) * s >= n - p:  # the last window would start in the right padding
            o -= 1
        out.append(o)
        extra.append(max(0, (o - 1) * s + span - n))
    if any(extra):
        xp_ = xp.pad(xp_, [(0, 0), (0, 0)] + [(0, e) for e in extra], constant_values=fill)
    return xp_, tuple(out)


def window_max(xp, xp_, offs, stride, dilation, out):
    """The max of each window and the index in ``offs`` of the first offset that holds it
    (int8/int16); a NaN propagates to the max, as torch's."""
    lead = (slice(None), slice(None))
    best = xp.full(xp_.shape[:2] + out, -np.inf, dtype=xp_.dtype)
    arg = xp.zeros(xp_.shape[:2] + out, dtype=np.int16 if len(offs) > 127 else np.int8)
    for i, off in enumerate(offs):
        v = xp_[lead + _slices(off, dilation, stride, out)]
        take = v > best
        arg = xp.where(take, i, arg).astype(arg.dtype)
        best = xp.maximum(best, v)
    return best, arg


class PoolNdFn(Function):
    """Max or average pooling over the trailing spatial axes (windows as ``ConvNdFn``'s)."""

    def forward(self, x, kind="max", k=(1,), stride=(1,), padding=(0,), dilation=(1,),
                count_include_pad=True, divisor=None, ceil_mode=False):
        xp = xp_of(x)
        fill = -np.inf if kind == "max" else 0.0
        xp_, out = padded_windows(xp, x, k, stride, padding, dilation, ceil_mode, fill)
        offs = list(itertools.product(*(range(kk) for kk in k)))
        self.geom = (x.shape, xp_.shape, offs, tuple(stride), tuple(padding), tuple(dilation),
                     out, kind)
        lead = (slice(None), slice(None))
        if kind == "max":
            best, arg = window_max(xp, xp_, offs, stride, dilation, out)
            self.save_for_backward(arg)
            return best
        total = xp.zeros(x.shape[:2] + out, dtype=x.dtype)
        for off in offs:
            total += xp_[lead + _slices(off, dilation, stride, out)]
        if divisor is not None:
            div = float(divisor)
        elif (count_include_pad or not any(padding)) and not ceil_mode:
            div = float(len(offs))
        else:
            div = _avg_divisor(xp, x.shape[2:], k, stride, padding, out, count_include_pad,
                               x.dtype)
        self.div = div
        return total / div

    def backward(self, g):
        xp = xp_of(g)
        xshape, pshape, offs, stride, padding, dilation, out, kind = self.geom
        gp = xp.zeros(pshape, dtype=g.dtype)
        lead = (slice(None), slice(None))
        if kind == "max":
            (arg,) = self.saved
            for i, off in enumerate(offs):
                gp[lead + _slices(off, dilation, stride, out)] += g * (arg == i)
        else:
            gd = g / self.div
            for off in offs:
                gp[lead + _slices(off, dilation, stride, out)] += gd
        return _unpad(gp, padding, xshape[2:])


def _avg_divisor(xp, sizes, k, stride, padding, out, count_include_pad, dtype):
    """torch's average-pool divisor for each output position, axis by axis: the window
    clipped to the padded input (``count_include_pad``; a ``ceil_mode`` window past the right
    padding counts only up to it) or to the input itself."""
    div = xp.ones((1, 1) + tuple(out), dtype=dtype)
    for a, (n, kk, s, p, o) in enumerate(zip(sizes, k, stride, padding, out)):
        start = np.arange(o) * s - p
        end = np.minimum(start + kk, n + p)
        count = (end - start) if count_include_pad else (
            np.minimum(end, n) - np.maximum(start, 0))
        shape = [1] * (len(out) + 2)
        shape[a + 2] = o
        div = div * xp.asarray(count.astype(dtype).reshape(shape))
    return div


def nd_pool_args(x, nd, kernel_size, stride, padding, dilation, name):
    """torch's pooling arguments as ``nd``-tuples (stride defaults to the kernel), checked."""
    if x.ndim != nd + 2:
        raise ValueError(f"{name} expects (N, C) and {nd} spatial axes, got {tuple(x.shape)}")
    k = _tuple(kernel_size, nd, "kernel_size")
    s = k if stride is None or stride == [] else _tuple(stride, nd, "stride")
    p = _tuple(padding, nd, "padding")
    if any(pp < 0 or 2 * pp > kk for pp, kk in zip(p, k)):
        raise ValueError(f"{name}: padding {p} must be at least 0 and at most half the kernel "
                         f"{k} (torch's rule)")
    return k, s, p, _tuple(dilation, nd, "dilation")


def avg_pool_nd(x, nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override, name):
    """torch's ``avg_poolNd`` with ``padding``, ``count_include_pad``, ``divisor_override``
    and ``ceil_mode`` (a last, partial window; torch's divisor)."""
    if x.ndim == nd + 1:
        return avg_pool_nd(x.unsqueeze(0), nd, kernel_size, stride, padding, ceil_mode,
                           count_include_pad, divisor_override, name)[0]
    k, s, p, d = nd_pool_args(x, nd, kernel_size, stride, padding, 1, name)
    return PoolNdFn.apply(x, kind="avg", k=k, stride=s, padding=p, dilation=d,
                          count_include_pad=count_include_pad, divisor=divisor_override,
                          ceil_mode=bool(ceil_mode))


def max_pool_nd(x, k, stride, padding, dilation, ceil_mode, return_indices):
    """Max pooling over the last ``len(k)`` axes of (N, C, ...); with ``return_indices`` also
    torch's indices: each max's flat position in its (unpadded) input plane, int64."""
    y = PoolNdFn.apply(x, kind="max", k=k, stride=stride, padding=padding, dilation=dilation,
                       ceil_mode=ceil_mode)
    if not return_indices:
        return y
    xp = x.xp
    xp_, out = padded_windows(xp, x._data, k, stride, padding, dilation, ceil_mode, -np.inf)
    offs = list(itertools.product(*(range(kk) for kk in k)))
    _, arg = window_max(xp, xp_, offs, stride, dilation, out)
    table = xp.asarray(np.array(offs, dtype=np.int64).reshape(len(offs), len(k)))
    sizes = x.shape[2:]
    flat = xp.zeros(arg.shape, dtype=np.int64)
    for a in range(len(k)):
        o = xp.arange(out[a], dtype=np.int64).reshape([-1 if b == a else 1
                                                       for b in range(len(k))])
        coord = o * stride[a] + table[:, a][arg.astype(np.int64)] * dilation[a] - padding[a]
        flat = flat * sizes[a] + coord
    return y, Tensor(flat)


class MaxUnpoolFn(Function):
    """``out.view(N, C, -1)[..., indices] = x`` on a zero output of ``size``."""

    def forward(self, x, index=None, size=()):
        xp = xp_of(x)
        n, c = x.shape[:2]
        plane = math.prod(size)
        base = (xp.arange(n * c, dtype=np.int64) * plane).reshape((n, c) + (1,) * (x.ndim - 2))
        self.flat = (base + index).reshape(-1)
        out = xp.zeros(n * c * plane, dtype=x.dtype)
        out[self.flat] = x.reshape(-1)
        self.shape = x.shape
        return out.reshape((n, c) + tuple(size))

    def backward(self, g):
        return g.reshape(-1)[self.flat].reshape(self.shape)


def max_unpool_nd(x, indices, k, stride, padding, output_size, name):
    """torch's ``max_unpoolNd``: the default output size ``(in - 1) * stride - 2 * padding +
    kernel`` per axis; ``output_size`` may give the last ``nd`` sizes (or all of them)."""
    nd = len(k)
    if x.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{name} expects (N, C, ...) or (C, ...) with {nd} spatial axes, got "
                         f"{tuple(x.shape)}")
    if x.ndim == nd + 1:
        return max_unpool_nd(x.unsqueeze(0), indices.unsqueeze(0), k, stride, padding,
                             output_size, name).squeeze(0)
    if output_size is None:
        size = tuple((i - 1) * s - 2 * p + kk for i, s, p, kk in
                     zip(x.shape[2:], stride, padding, k))
    else:
        size = tuple(int(v) for v in tuple(output_size)[-nd:])
    if tuple(indices.shape) != tuple(x.shape):
        raise ValueError(f"{name}: indices {tuple(indices.shape)} must have the input's shape "
                         f"{tuple(x.shape)} (the max pool's return_indices=True)")
    idx = indices._data if isinstance(indices, Tensor) else x.xp.asarray(indices)
    return MaxUnpoolFn.apply(x, index=idx.astype(np.int64), size=size)
