"""Transposed convolution over any number of spatial axes: ``ConvTransposeNdFn``, the
adjoint of :class:`..conv3d.ConvNdFn` (stride, padding, ``output_padding``, dilation,
groups). Forward: the columns ``W^T x`` added into the output slice by slice (one strided
slice per kernel offset), then cropped by ``padding``; backward: the output gradient cut back
into columns (im2col) for the input's and the weight's gradients. ``xp`` only. Used by
``ConvTranspose3d`` and by the 1-D/2-D layers for groups and dilation."""

from __future__ import annotations

import itertools
import math

from ...autograd import Function, xp_of
from ...shape_error import check_conv_dtypes
from .pool_nd import _slices, _tuple

__all__ = ["ConvTransposeNdFn", "conv_transpose_nd"]


class ConvTransposeNdFn(Function):
    def forward(self, x, w, stride=(1,), padding=(0,), output_padding=(0,), dilation=(1,),
                groups=1):
        xp = xp_of(x)
        n, ci = x.shape[:2]
        cog = w.shape[1]
        k = tuple(w.shape[2:])
        ins = tuple(x.shape[2:])
        full = tuple((i - 1) * s + d * (kk - 1) + 1 + op for i, s, d, kk, op in
                     zip(ins, stride, dilation, k, output_padding))
        out = tuple(f - 2 * p for f, p in zip(full, padding))
        if min(out) < 1:
            raise ValueError(f"conv_transpose: the output would be {out}: padding {padding} "
                             f"is too large for input {ins} and kernel {k}")
        K, L = cog * math.prod(k), math.prod(ins)
        wm = w.reshape(groups, ci // groups, K)
        xm = x.reshape(n, groups, ci // groups, L)
        cols = xp.matmul(wm.transpose(0, 2, 1), xm).reshape((n, cog * groups) + k + ins)
        buf = xp.zeros((n, cog * groups) + full, dtype=x.dtype)
        lead = (slice(None), slice(None))
        for off in itertools.product(*(range(kk) for kk in k)):
            buf[lead + _slices(off, dilation, stride, ins)] += cols[lead + off]
        crop = lead + tuple(slice(p, p + o) for p, o in zip(padding, out))
        self.geom = (x.shape, full, crop, k, stride, dilation, groups, ins)
        self.save_for_backward(xm, wm)
        return buf[crop]

    def backward(self, g):
        xp = xp_of(g)
        xshape, full, crop, k, stride, dilation, groups, ins = self.geom
        xm, wm = self.saved
        n, co = g.shape[:2]
        gbuf = xp.zeros((n, co) + full, dtype=g.dtype)
        gbuf[crop] = g
        lead = (slice(None), slice(None))
        gc = xp.empty((n, co) + k + ins, dtype=g.dtype)
        for off in itertools.product(*(range(kk) for kk in k)):
            gc[lead + off] = gbuf[lead + _slices(off, dilation, stride, ins)]
        gcm = gc.reshape(n, groups, wm.shape[2], -1)  # (N, g, Cout/g * K, L)
        gx = gw = None
        if self.needs_input_grad[0]:
            gx = xp.matmul(wm, gcm).reshape(xshape)
        if self.needs_input_grad[1]:
            gw = xp.matmul(xm, gcm.transpose(0, 1, 3, 2)).sum(0).reshape(
                (xshape[1], co // groups) + k)
        return gx, gw


def conv_transpose_nd(input, weight, bias, stride, padding, output_padding,  # noqa: A002
                      groups, dilation, nd):
    """Transposed convolution over ``nd`` axes with ``groups``/``dilation`` (the adjoint
    im2col node); weight (in, out / groups, k...)."""
    if input.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise ValueError(f"conv_transpose: input has {input.shape[1]} channels, the weight "
                         f"{weight.shape[0]} (divisible by groups={groups})")
    s, d = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    op = _tuple(output_padding, nd, "output_padding")
    if any(o >= max(a, b) for o, a, b in zip(op, s, d)):
        raise ValueError(f"output_padding {op} must be smaller than the stride {s} or the "
                         f"dilation {d} (torch's rule)")
    check_conv_dtypes(input, weight, bias)
    y = ConvTransposeNdFn.apply(input, weight, stride=s,
                                padding=_tuple(padding, nd, "padding"), output_padding=op,
                                dilation=d, groups=int(groups))
    return y if bias is None else y + bias.reshape((1, -1) + (1,) * nd)
