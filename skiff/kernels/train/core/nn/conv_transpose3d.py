"""``nn.ConvTranspose3d`` / ``F.conv_transpose3d`` (stride, padding, ``output_padding``,
dilation, groups): ``ConvTransposeNdFn``, the adjoint of :class:`.conv3d.ConvNdFn` over any
number of spatial axes. Forward: the columns ``W^T x`` added into the output slice by slice
(one strided slice per kernel offset), then cropped by ``padding``; backward: the output
gradient cut back into columns (im2col) for the input's and the weight's gradients. ``xp``
only."""

from __future__ import annotations

import itertools
import math

from ..autograd import Function, xp_of
from ..default_dtype import default_float
from .conv import _kernel_params
from .conv3d import _slices, _tuple
from .layers import _positive
from .module import Module

__all__ = ["ConvTransposeNdFn", "conv_transpose3d", "ConvTranspose3d"]


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


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                     output_padding=0, groups=1, dilation=1):
    """torch's ``F.conv_transpose3d``; weight (in, out/groups, kD, kH, kW)."""
    if input.ndim == 4:
        return conv_transpose3d(input.unsqueeze(0), weight, bias, stride, padding,
                                output_padding, groups, dilation).squeeze(0)
    if input.ndim != 5 or weight.ndim != 5 or input.shape[1] != weight.shape[0] or \
            weight.shape[0] % groups:
        raise ValueError(f"conv_transpose3d expects input (N, C, D, H, W) and weight (C, "
                         f"out/groups, kD, kH, kW) with C divisible by groups={groups}, got "
                         f"{tuple(input.shape)} and {tuple(weight.shape)}")
    s, d = _tuple(stride, 3, "stride"), _tuple(dilation, 3, "dilation")
    op = _tuple(output_padding, 3, "output_padding")
    if any(o >= max(a, b) for o, a, b in zip(op, s, d)):
        raise ValueError(f"output_padding {op} must be smaller than the stride {s} or the "
                         f"dilation {d} (torch's rule)")
    y = ConvTransposeNdFn.apply(input, weight, stride=s, padding=_tuple(padding, 3, "padding"),
                                output_padding=op, dilation=d, groups=int(groups))
    return y if bias is None else y + bias.reshape(1, -1, 1, 1, 1)


class ConvTranspose3d(Module):
    """torch's ``nn.ConvTranspose3d``; weight (in, out/groups, kD, kH, kW), torch's init."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None, generator=None):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f"ConvTranspose3d padding_mode={padding_mode!r}: only 'zeros'")
        dtype = default_float(dtype)
        self.in_channels = _positive("in_channels", in_channels)
        self.out_channels = _positive("out_channels", out_channels)
        self.kernel_size = _tuple(kernel_size, 3, "kernel_size")
        self.stride, self.padding = _tuple(stride, 3, "stride"), _tuple(padding, 3, "padding")
        self.output_padding = _tuple(output_padding, 3, "output_padding")
        self.dilation, self.groups = _tuple(dilation, 3, "dilation"), int(groups)
        if in_channels % self.groups or out_channels % self.groups:
            raise ValueError(f"ConvTranspose3d groups={groups} must divide in_channels "
                             f"{in_channels} and out_channels {out_channels}")
        cog = out_channels // self.groups
        _kernel_params(self, (in_channels, cog) + self.kernel_size,
                       cog * math.prod(self.kernel_size), bias, generator, dtype)
        if device is not None:
            self.to(device)

    def forward(self, x, output_size=None):
        if output_size is not None:
            raise ValueError("ConvTranspose3d(output_size=) is not supported: give "
                             "output_padding")
        return conv_transpose3d(x, self.weight, self.bias, self.stride, self.padding,
                                self.output_padding, self.groups, self.dilation)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")
