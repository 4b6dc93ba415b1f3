"""``nn.ConvTranspose3d`` / ``F.conv_transpose3d`` (stride, padding, ``output_padding``,
dilation, groups) on :class:`.functional.conv_transpose_nd.ConvTransposeNdFn`, the adjoint of
:class:`.conv3d.ConvNdFn`."""

from __future__ import annotations

import math

from .. import autocast_ops as _ac
from ..default_dtype import default_float
from ..shape_error import check_conv_dtypes
from .conv import _conv_repr, _kernel_params
from .conv3d import _tuple
from .functional.conv_transpose_nd import ConvTransposeNdFn
from .layers import _positive
from .module import Module

__all__ = ["ConvTransposeNdFn", "conv_transpose3d", "ConvTranspose3d"]


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                     output_padding=0, groups=1, dilation=1):
    """torch's ``F.conv_transpose3d``; weight (in, out/groups, kD, kH, kW)."""
    if input.ndim == 4:
        return conv_transpose3d(input.unsqueeze(0), weight, bias, stride, padding,
                                output_padding, groups, dilation).squeeze(0)
    if _ac.LOW is not None:  # autocast("cpu"): torch's lower-precision op
        input, weight, bias = _ac.low(input, weight, bias)
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
    check_conv_dtypes(input, weight, bias)
    y = ConvTransposeNdFn.apply(input, weight, stride=s, padding=_tuple(padding, 3, "padding"),
                                output_padding=op, dilation=d, groups=int(groups))
    if input.dtype == weight.dtype and y.dtype != input.dtype and input.dtype.itemsize == 2:
        y = y.to(dtype=input.dtype)  # bfloat16 in, bfloat16 out (torch's)
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
        return _conv_repr(self, 3, self.output_padding)  # torch's text
