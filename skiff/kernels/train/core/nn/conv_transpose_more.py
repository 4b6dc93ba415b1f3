"""torch's ``F.conv_transpose2d``, ``F.conv_transpose1d`` and ``nn.ConvTranspose1d`` (weight
(in_channels, out_channels, k), torch's init and output length
``(L - 1) * stride - 2 * padding + k + output_padding``), on conv.py's ``conv_transpose2d``
(the input spread by ``stride``, padded, convolved with the flipped kernel); ``groups`` and
``dilation`` other than 1 take :class:`.conv_transpose3d.ConvTransposeNdFn`."""

from __future__ import annotations

from ..default_dtype import default_float
from ..layout_r45 import keeps_channels_last
from ..shape_error import check_conv_dtypes
from .conv import _kernel_params
from .conv import conv_transpose2d as _conv_transpose2d
from .functional.conv import as_pair
from .functional.conv_transpose_nd import conv_transpose_nd
from .layers import _positive
from .module import Module

__all__ = ["conv_transpose2d", "conv_transpose1d", "ConvTranspose1d"]


def _plain(groups, dilation, what):
    return groups == 1 and all(d == 1 for d in as_pair(dilation, "dilation"))


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,  # noqa: A002
                     groups=1, dilation=1):
    """(N, C_in, H, W) with weight (C_in, C_out, kh, kw) -> (N, C_out, H', W'); an unbatched
    (C_in, H, W) input gives (C_out, H', W'), as torch's."""
    if input.ndim == 3:
        return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding,
                                output_padding, groups, dilation)[0]
    check_conv_dtypes(input, weight, bias)
    if not _plain(groups, dilation, "conv_transpose2d"):
        return conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation, 2)
    return _conv_transpose2d(input, weight, bias, stride, padding, output_padding)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,  # noqa: A002
                     groups=1, dilation=1):
    """(N, C_in, L) with weight (C_in, C_out, k) -> (N, C_out, L'); unbatched (C_in, L) as
    torch's."""
    if input.ndim == 2:
        return conv_transpose1d(input.unsqueeze(0), weight, bias, stride, padding,
                                output_padding, groups, dilation)[0]
    if not _plain(groups, dilation, "conv_transpose1d"):
        return conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation, 1)
    one = lambda v: int(v[0]) if isinstance(v, (tuple, list)) else int(v)  # noqa: E731
    out = conv_transpose2d(input.unsqueeze(2), weight.unsqueeze(2), bias, (1, one(stride)),
                           (0, one(padding)), (0, one(output_padding)))
    return out.squeeze(2)


class ConvTranspose1d(Module):
    """torch's ``nn.ConvTranspose1d``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None, generator=None):
        super().__init__()
        self.groups = _positive("groups", groups)
        self.dilation = int(as_pair(dilation, "dilation")[0])
        if in_channels % self.groups or out_channels % self.groups:
            raise ValueError(f"ConvTranspose1d groups={groups} must divide in_channels "
                             f"{in_channels} and out_channels {out_channels}")
        if padding_mode != "zeros":
            raise ValueError("ConvTranspose1d: only padding_mode='zeros' (as torch's)")
        dtype = default_float(dtype)
        self.in_channels = _positive("in_channels", in_channels)
        self.out_channels = _positive("out_channels", out_channels)
        self.kernel_size = _positive("kernel_size", int(as_pair(kernel_size, "k")[0]))
        self.stride, self.padding = int(as_pair(stride, "stride")[0]), \
            int(as_pair(padding, "padding")[0])
        self.output_padding = int(as_pair(output_padding, "output_padding")[0])
        if self.output_padding >= max(self.stride, self.dilation):
            raise ValueError(f"output_padding {self.output_padding} must be smaller than the "
                             f"stride {self.stride} or the dilation {self.dilation}")
        cog = out_channels // self.groups
        _kernel_params(self, (in_channels, cog, self.kernel_size),
                       cog * self.kernel_size, bias, generator, dtype)
        if device is not None:
            self.to(device)

    def forward(self, x):
        if x.ndim not in (2, 3) or x.shape[-2] != self.in_channels:
            raise ValueError(f"ConvTranspose1d({self.in_channels}, ...) expects (N, "
                             f"{self.in_channels}, L), got {tuple(x.shape)}")
        if x.ndim == 2:
            return self.forward(x.unsqueeze(0)).squeeze(0)
        return conv_transpose1d(x, self.weight, self.bias, self.stride, self.padding,
                                self.output_padding, self.groups, self.dilation)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size=({self.kernel_size},), "
                f"stride=({self.stride},)")
