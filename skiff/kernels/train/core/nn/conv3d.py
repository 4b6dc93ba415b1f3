"""Volumes, as torch's: ``Conv3d`` / ``F.conv3d`` (stride, zero padding, dilation, groups),
``BatchNorm3d``, ``MaxPool3d`` / ``AvgPool3d`` (padding, ``count_include_pad``,
``divisor_override``) and ``AdaptiveAvgPool3d`` (torch's uneven bins).

``ConvNdFn`` is an im2col convolution over any number of spatial axes: the columns (N, C,
k..., out...) are one strided slice copy per kernel offset, the product one batched matmul
per group; backward adds the column gradients back slice by slice. ``PoolNdFn`` takes the
same windows for max (argmax kept as int8/int16 offsets) and average. Adaptive average
pooling is separable: one averaging matrix per axis. All of it is ``xp`` (no host reads)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import autocast_ops as _ac
from ..autograd import Function, xp_of
from ..default_dtype import default_float
from ..layout_r45 import keeps_channels_last
from ..shape_error import check_conv_dtypes
from ..tensor import Tensor
from .conv import _AvgPoolNd, _BatchNorm, _conv_repr, _kernel_params, _MaxPoolNd
from .functional.pool_nd import PoolNdFn, _out_sizes, _pad, _slices, _tuple, _unpad, max_pool_nd
from .layers import _positive
from .module import Module

__all__ = ["conv3d", "Conv3d", "BatchNorm3d", "max_pool3d", "avg_pool3d",
           "adaptive_avg_pool3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "ConvNdFn"]


class ConvNdFn(Function):
    def forward(self, x, w, stride=(1,), padding=(0,), dilation=(1,), groups=1):
        xp = xp_of(x)
        nd = x.ndim - 2
        n, c = x.shape[:2]
        o, cg = w.shape[:2]
        k = w.shape[2:]
        xp_ = _pad(xp, x, padding)
        out = _out_sizes(xp_.shape[2:], k, stride, dilation)
        cols = xp.empty((n, c) + tuple(k) + out, dtype=x.dtype)
        for off in itertools.product(*(range(kk) for kk in k)):
            cols[(slice(None), slice(None)) + off] = xp_[
                (slice(None), slice(None)) + _slices(off, dilation, stride, out)]
        K, L = cg * math.prod(k), math.prod(out)
        cm = cols.reshape(n, groups, K, L)
        wm = w.reshape(groups, o // groups, K)
        y = xp.matmul(wm, cm)  # (N, g, O/g, L)
        if x.dtype == w.dtype and y.dtype != x.dtype and x.dtype.itemsize == 2:
            y = y.astype(x.dtype)  # bfloat16 in, bfloat16 out (torch's)
        self.geom = (x.shape, xp_.shape, tuple(k), tuple(stride), tuple(padding),
                     tuple(dilation), groups, out, nd)
        self.save_for_backward(cm, wm)
        return y.reshape((n, o) + out)

    def backward(self, g):
        xp = xp_of(g)
        xshape, pshape, k, stride, padding, dilation, groups, out, nd = self.geom
        cm, wm = self.saved
        n, o = g.shape[:2]
        gm = g.reshape(n, groups, o // groups, -1)
        gx = gw = None
        if self.needs_input_grad[1]:
            gw = xp.matmul(gm, cm.transpose(0, 1, 3, 2)).sum(0).reshape(
                (o, xshape[1] // groups) + k)
        if self.needs_input_grad[0]:
            gc = xp.matmul(wm.transpose(0, 2, 1), gm).reshape(
                (n, xshape[1]) + k + out)
            gp = xp.zeros(pshape, dtype=g.dtype)
            for off in itertools.product(*(range(kk) for kk in k)):
                gp[(slice(None), slice(None)) + _slices(off, dilation, stride, out)] += \
                    gc[(slice(None), slice(None)) + off]
            gx = _unpad(gp, padding, xshape[2:])
        if cm.dtype.itemsize == 2 or wm.dtype.itemsize == 2:  # 16-bit operands: 16-bit grads
            gx = gx if gx is None or gx.dtype == cm.dtype else gx.astype(cm.dtype)
            gw = gw if gw is None or gw.dtype == wm.dtype else gw.astype(wm.dtype)
        return gx, gw


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """torch's ``F.conv3d`` on (N, C, D, H, W) (or unbatched (C, D, H, W)) input."""
    if input.ndim == 4:
        return conv3d(input.unsqueeze(0), weight, bias, stride, padding, dilation,
                      groups).squeeze(0)
    if _ac.LOW is not None:  # autocast("cpu"): torch's lower-precision op
        input, weight, bias = _ac.low(input, weight, bias)
    check_conv_dtypes(input, weight, bias)
    if input.ndim != 5 or weight.ndim != 5:
        raise ValueError(f"conv3d expects input (N, C, D, H, W) and weight (O, C/groups, kD, "
                         f"kH, kW), got {tuple(input.shape)} and {tuple(weight.shape)}")
    if input.shape[1] != weight.shape[1] * groups or weight.shape[0] % groups:
        raise ValueError(f"conv3d: input has {input.shape[1]} channels, the weight wants "
                         f"{weight.shape[1]} x groups={groups} (and out channels "
                         f"{weight.shape[0]} divisible by groups)")
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            d = _tuple(dilation, 3, "dilation")
            tot = [dd * (kk - 1) for dd, kk in zip(d, weight.shape[2:])]
            if any(t % 2 for t in tot):
                raise ValueError("conv3d padding='same' with an even kernel: pad with F.pad "
                                 "first (torch pads the extra on the right)")
            padding = tuple(t // 2 for t in tot)
        else:
            raise ValueError(f"conv3d padding {padding!r}: numbers, 'same' or 'valid'")
    y = ConvNdFn.apply(input, weight, stride=_tuple(stride, 3, "stride"),
                       padding=_tuple(padding, 3, "padding"),
                       dilation=_tuple(dilation, 3, "dilation"), groups=int(groups))
    return y if bias is None else y + bias.reshape(1, -1, 1, 1, 1)


class Conv3d(Module):
    """torch's ``nn.Conv3d``; weight (out, in/groups, kD, kH, kW), torch's default init."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None, generator=None):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f"Conv3d padding_mode={padding_mode!r}: only 'zeros' (pad with "
                             "F.pad first)")
        dtype = default_float(dtype)
        self.in_channels = _positive("in_channels", in_channels)
        self.out_channels = _positive("out_channels", out_channels)
        self.kernel_size = _tuple(kernel_size, 3, "kernel_size")
        self.stride, self.dilation = _tuple(stride, 3, "stride"), _tuple(dilation, 3, "dilation")
        self.padding = padding if isinstance(padding, str) else _tuple(padding, 3, "padding")
        self.groups, self.padding_mode = int(groups), padding_mode
        if in_channels % self.groups or out_channels % self.groups:
            raise ValueError(f"Conv3d groups={groups} must divide in_channels {in_channels} "
                             f"and out_channels {out_channels}")
        ci = in_channels // self.groups
        _kernel_params(self, (out_channels, ci) + self.kernel_size,
                       ci * math.prod(self.kernel_size), bias, generator, dtype)
        if device is not None:
            self.to(device)

    def forward(self, x):
        return conv3d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups)

    def extra_repr(self):
        return _conv_repr(self, 3)  # torch's text


class BatchNorm3d(_BatchNorm):
    """torch's ``nn.BatchNorm3d``: per channel over (N, D, H, W)."""

    def forward(self, x):
        if x.ndim != 5 or x.shape[1] != self.num_features:
            raise ValueError(f"BatchNorm3d({self.num_features}) expects (N, "
                             f"{self.num_features}, D, H, W), got {tuple(x.shape)}")
        return self._normalise(x)


def _pool_args(x, kernel_size, stride, padding, dilation, ceil_mode, name):
    if x.ndim not in (4, 5):
        raise ValueError(f"{name} expects (N, C, D, H, W) or (C, D, H, W), got "
                         f"{tuple(x.shape)}")
    k = _tuple(kernel_size, 3, "kernel_size")
    s = k if stride is None or stride == [] else _tuple(stride, 3, "stride")
    p = _tuple(padding, 3, "padding")
    if any(2 * pp > kk for pp, kk in zip(p, k)):
        raise ValueError(f"{name}: padding {p} must be at most half the kernel {k} (torch's "
                         "rule)")
    return k, s, p, _tuple(dilation, 3, "dilation")


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    k, s, p, d = _pool_args(input, kernel_size, stride, padding, dilation, ceil_mode,
                            "max_pool3d")
    if input.ndim == 4:
        out = max_pool3d(input.unsqueeze(0), k, s, p, d, ceil_mode, return_indices)
        return (out[0][0], out[1][0]) if return_indices else out[0]
    return max_pool_nd(input, k, s, p, d, ceil_mode, return_indices)


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    k, s, p, d = _pool_args(input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool3d")
    if input.ndim == 4:
        return avg_pool3d(input.unsqueeze(0), k, s, p, ceil_mode, count_include_pad,
                          divisor_override).squeeze(0)
    return PoolNdFn.apply(input, kind="avg", k=k, stride=s, padding=p, dilation=d,
                          count_include_pad=count_include_pad, divisor=divisor_override,
                          ceil_mode=bool(ceil_mode))


def _bins(xp, n_in, n_out, dtype):
    """(n_in, n_out) averaging matrix of torch's adaptive bins [floor(i n/o), ceil((i+1) n/o))."""
    a = np.zeros((n_in, n_out), dtype=dtype)
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        a[lo:hi, i] = 1.0 / (hi - lo)
    return a if xp is np else xp.asarray(a)


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """torch's ``F.adaptive_avg_pool3d``: one averaging matrix per axis (the bins of a box
    are products of per-axis bins, so the mean is separable)."""
    if input.ndim not in (4, 5):
        raise ValueError(f"adaptive_avg_pool3d expects (N, C, D, H, W) or (C, D, H, W), got "
                         f"{tuple(input.shape)}")
    sizes = tuple(input.shape[-3:])
    out = tuple(s if o is None else int(o) for s, o in
                zip(sizes, output_size if isinstance(output_size, (tuple, list))
                    else (output_size,) * 3))
    y = input
    for ax in (-1, -2, -3):  # W, H, D: bring the axis last, average, put it back
        if out[ax] == sizes[ax]:
            continue
        a = Tensor(_bins(input.xp, sizes[ax], out[ax], input.dtype), dtype=input.dtype)
        y = (y.transpose(ax, -1) @ a).transpose(ax, -1) if ax != -1 else y @ a
    return y


class MaxPool3d(_MaxPoolNd):
    def forward(self, x):
        return max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)


class AvgPool3d(_AvgPoolNd):
    def forward(self, x):
        return avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, self.divisor_override)

    def extra_repr(self):  # torch's text
        stride = self.kernel_size if self.stride is None else self.stride
        return f"kernel_size={self.kernel_size}, stride={stride}, padding={self.padding}"


class AdaptiveAvgPool3d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return adaptive_avg_pool3d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"
