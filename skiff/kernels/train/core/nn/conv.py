"""Convolution, batch norm and pooling layers on NCHW input."""

from __future__ import annotations

import math

import numpy as np

from .. import tensor as T
from ..default_dtype import default_float
from ..shape_error import ShapeError
from ..tensor import Tensor
from . import functional as F
from .functional.conv import as_pair
from .layers import _positive, uniform_
from .module import Module, Parameter

__all__ = ["Conv2d", "BatchNorm2d", "MaxPool2d", "AvgPool2d"]


def torch_positional(bias, generator, dtype, dilation, groups):
    """torch's positional order ``(..., stride, padding, dilation, groups, bias)`` where
    skiff's is ``(..., stride, padding, bias, generator, dtype)``: a whole number (not a
    bool) in ``bias``'s place is torch's ``dilation``, then ``groups``, then ``bias``."""
    if isinstance(bias, (int, np.integer)) and not isinstance(bias, (bool, np.bool_)):
        dilation = bias
        if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
            groups, generator = generator, None
        if isinstance(dtype, (bool, np.bool_)):
            bias, dtype = dtype, None
        else:
            bias = True
    return bias, generator, dtype, dilation, groups


def _kernel_params(layer, shape, fan_in, bias, generator, dtype) -> None:
    """A convolution's weight of ``shape`` and bias (one per output channel) drawn as torch
    does: uniform within +-1/sqrt(fan_in)."""
    bound = 1.0 / math.sqrt(fan_in)
    layer.weight = Parameter(uniform_(shape, bound, generator, dtype), dtype=dtype)
    layer.bias = (Parameter(uniform_((layer.out_channels,), bound, generator, dtype), dtype=dtype)
                  if bias else None)


def _conv_repr(m, dims, output_padding=None):
    """torch's ``_ConvNd.extra_repr``: sizes as ``dims``-tuples, padding / dilation /
    output_padding / groups / bias / padding_mode only when not their defaults."""
    def tup(v):
        return tuple(v) if isinstance(v, (tuple, list)) else (int(v),) * dims

    s = (f"{m.in_channels}, {m.out_channels}, kernel_size={tup(m.kernel_size)}, "
         f"stride={tup(m.stride)}")
    pad = m.padding if isinstance(m.padding, str) else tup(m.padding)
    if pad != (0,) * dims:
        s += f", padding={pad}"
    dil = tup(getattr(m, "dilation", 1))
    if dil != (1,) * dims:
        s += f", dilation={dil}"
    if output_padding is not None and tup(output_padding) != (0,) * dims:
        s += f", output_padding={tup(output_padding)}"
    if getattr(m, "groups", 1) != 1:
        s += f", groups={m.groups}"
    if getattr(m, "bias", None) is None:
        s += ", bias=False"
    if getattr(m, "padding_mode", "zeros") != "zeros":
        s += f", padding_mode={m.padding_mode}"
    return s


class Conv2d(Module):
    """2-D convolution; weight (out_channels, in_channels, kh, kw), torch's default init."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True,
                 generator=None, dtype=None, *, dilation=1, groups=1,
                 padding_mode="zeros", device=None):
        super().__init__()
        bias, generator, dtype, dilation, groups = torch_positional(bias, generator, dtype,
                                                                    dilation, groups)
        dtype = default_float(dtype)
        self.in_channels = _positive("in_channels", in_channels)
        self.out_channels = _positive("out_channels", out_channels)
        kh, kw = as_pair(kernel_size, "kernel_size")
        self.kernel_size = (kh, kw)
        self.stride = as_pair(stride, "stride")
        self.padding = padding if isinstance(padding, str) else as_pair(padding, "padding")
        self.dilation, self.groups = as_pair(dilation, "dilation"), int(groups)
        if in_channels % self.groups or out_channels % self.groups:
            raise ValueError(f"Conv2d groups={groups} must divide in_channels {in_channels} "
                             f"and out_channels {out_channels}")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be 'zeros', 'reflect', 'replicate' or "
                             f"'circular', got {padding_mode!r}")
        self.padding_mode = padding_mode
        ci = in_channels // self.groups
        _kernel_params(self, (out_channels, ci, kh, kw), ci * kh * kw, bias, generator, dtype)

    def forward(self, x):
        if self.padding_mode != "zeros":  # padding="same" too (it padded zeros)
            from .functional.conv_general import pad_for_mode

            x, padding = pad_for_mode(x, self.padding, self.padding_mode, self.kernel_size,
                                      self.dilation), 0
        else:
            padding = self.padding
        if self.dilation == (1, 1) and self.groups == 1 and not isinstance(padding, str):
            return F.conv2d(x, self.weight, self.bias, self.stride, padding)
        return F.conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)

    def extra_repr(self):
        return _conv_repr(self, 2)


class _BatchNorm(Module):
    """torch's ``nn.modules.batchnorm._BatchNorm``: the base of ``BatchNorm1d/2d/3d`` and
    ``SyncBatchNorm`` (``isinstance(m, _BatchNorm)`` finds every batch norm; a
    ``BatchNorm1d`` is not a ``BatchNorm2d``, as in torch). Batch norm per channel, with
    running statistics for eval mode and torch's ``num_batches_tracked`` (the training batches
    seen), so state dicts go both ways."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__()
        if not isinstance(affine, (bool, np.bool_)):  # skiff's 4th argument was dtype
            affine, dtype = True, affine
        dtype = default_float(dtype)
        self.num_features = _positive("num_features", num_features)
        self.eps, self.momentum = eps, momentum
        self.affine, self.track_running_stats = bool(affine), bool(track_running_stats)
        self.weight = Parameter(np.ones(num_features, dtype=dtype), dtype=dtype) \
            if self.affine else None
        self.bias = Parameter(np.zeros(num_features, dtype=dtype), dtype=dtype) \
            if self.affine else None
        if self.track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, dtype=dtype),
                                                        dtype=dtype))
            self.register_buffer("running_var", Tensor(np.ones(num_features, dtype=dtype),
                                                       dtype=dtype))
            self.register_buffer("num_batches_tracked", Tensor(np.zeros((), dtype=np.int64)))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None
        if device is not None:
            self.to(device)

    def reset_running_stats(self):
        """torch's: running mean 0, variance 1, no batches seen."""
        if self.track_running_stats:
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0

    def _normalise(self, x):
        if not self.track_running_stats:  # batch statistics, in eval mode too (torch's)
            return F.batch_norm(x, None, None, self.weight, self.bias, True, 0.0, self.eps)
        if self.training:
            self.num_batches_tracked._data += 1
        momentum = self.momentum  # None: the cumulative average of the batches (torch's)
        if momentum is None:
            momentum = 1.0 / float(self.num_batches_tracked._data) if self.training else 0.0
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training, momentum, self.eps)

    def forward(self, x):
        if x.ndim < 2 or x.shape[1] != self.num_features:
            raise ShapeError(f"{type(self).__name__}({self.num_features}) expects (N, "
                             f"{self.num_features}, ...), got {tuple(x.shape)}")
        return self._normalise(x)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={getattr(self, 'bias', None) is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, H, W) per channel (torch's ``nn.BatchNorm2d``)."""

    def forward(self, x):
        if x.ndim != 4 or x.shape[1] != self.num_features:
            raise ShapeError(
                f"BatchNorm2d({self.num_features}) expects (N, {self.num_features}, H, W), "
                f"got {tuple(x.shape)}"
            )
        return self._normalise(x)


class _MaxPoolNd(Module):
    """torch's ``_MaxPoolNd``: the options and the text of ``MaxPool2d``/``MaxPool3d``."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def extra_repr(self):  # torch's text
        stride = self.kernel_size if self.stride is None else self.stride
        return (f"kernel_size={self.kernel_size}, stride={stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class _AvgPoolNd(Module):
    """torch's ``_AvgPoolNd`` here: the options of ``AvgPool2d``/``AvgPool3d``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override


class MaxPool2d(_MaxPoolNd):
    def forward(self, x):
        if self.dilation != 1 or self.return_indices or self.ceil_mode:
            return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                                self.ceil_mode, self.return_indices)
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)


class AvgPool2d(_AvgPoolNd):

    def forward(self, x):
        if self.padding != 0 or self.ceil_mode or self.divisor_override is not None:
            return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                self.count_include_pad, self.divisor_override)
        return F.avg_pool2d(x, self.kernel_size, self.stride)

    def extra_repr(self):
        stride = self.kernel_size if self.stride is None else self.stride
        return f"kernel_size={self.kernel_size}, stride={stride}, padding={self.padding}"


class BatchNorm1d(_BatchNorm):
    """Batch norm of (N, C) features (or (N, C, L) sequences) per channel, with running
    statistics for eval mode (as ``BatchNorm2d`` over the other axes)."""

    def forward(self, x):
        if x.ndim not in (2, 3) or x.shape[1] != self.num_features:
            raise ShapeError(
                f"BatchNorm1d({self.num_features}) expects (N, {self.num_features}) or "
                f"(N, {self.num_features}, L), got {tuple(x.shape)}"
            )
        return self._normalise(x)


class Conv1d(Module):
    """1-D convolution of (N, C, L) sequences; weight (out_channels, in_channels, k), torch's
    layout and init (a 1 x k two-dimensional convolution underneath)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True,
                 generator=None, dtype=None, *, dilation=1, groups=1, padding_mode="zeros",
                 device=None):
        super().__init__()
        bias, generator, dtype, dilation, groups = torch_positional(bias, generator, dtype,
                                                                    dilation, groups)
        dtype = default_float(dtype)
        self.in_channels = _positive("in_channels", in_channels)
        self.out_channels = _positive("out_channels", out_channels)
        self.kernel_size = _positive("kernel_size", _single(kernel_size))
        self.stride = _positive("stride", _single(stride))
        self.dilation = _positive("dilation", _single(dilation))
        self.groups = _positive("groups", groups)
        if in_channels % self.groups or out_channels % self.groups:
            raise ValueError(f"Conv1d groups={groups} must divide in_channels {in_channels} "
                             f"and out_channels {out_channels}")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be 'zeros', 'reflect', 'replicate' or "
                             f"'circular', got {padding_mode!r}")
        self.padding_mode = padding_mode
        padding = padding if isinstance(padding, str) else _single(padding)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Conv1d padding {padding!r}: a number, 'same' or 'valid'")
        elif not isinstance(padding, (int, np.integer)) or padding < 0:
            raise ValueError(f"padding must be an integer >= 0, got {padding!r}")
        self.padding = padding if isinstance(padding, str) else int(padding)
        ci = in_channels // self.groups
        _kernel_params(self, (out_channels, ci, self.kernel_size), ci * self.kernel_size,
                       bias, generator, dtype)
        if device is not None:
            self.to(device)

    def forward(self, x):
        if x.ndim == 2 and x.shape[0] == self.in_channels:  # unbatched (C, L), as torch's
            return self.forward(x.unsqueeze(0))[0]
        if x.ndim != 3 or x.shape[1] != self.in_channels:
            raise ValueError(f"Conv1d({self.in_channels}, ...) expects (N, {self.in_channels}, "
                             f"L) or ({self.in_channels}, L), got {tuple(x.shape)}")
        n, c, length = x.shape
        w = self.weight.reshape(self.out_channels, c // self.groups, 1, self.kernel_size)
        x4 = x.reshape(n, c, 1, length)
        pad = (0, self.padding) if not isinstance(self.padding, str) else self.padding
        if self.padding_mode != "zeros":
            from .functional.conv_general import pad_for_mode

            x4, pad = pad_for_mode(x4, pad, self.padding_mode, (1, self.kernel_size),
                                   (1, self.dilation)), 0
        if self.dilation == 1 and self.groups == 1 and not isinstance(pad, str):
            y = F.conv2d(x4, w, self.bias, (1, self.stride), pad)
        else:
            y = F.conv2d(x4, w, self.bias, (1, self.stride), pad, (1, self.dilation),
                         self.groups)
        return y.reshape(n, self.out_channels, y.shape[-1])

    def extra_repr(self):
        return _conv_repr(self, 1)


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed (out_h, out_w); 1 (or (1, 1)) is global average pooling;
    sizes that do not divide the input's take torch's overlapping bins, and ``None`` keeps
    that side's size (as torch)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = (tuple(output_size) if isinstance(output_size, (tuple, list))
                            else as_pair(output_size, "output_size"))

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


def _dilate(x, stride: int, axis: int):
    """``stride - 1`` zeros between neighbours along ``axis`` (3: width, 2: height)."""
    if stride == 1:
        return x
    n = x.shape[axis]
    z = T.zeros(x.shape, dtype=x.dtype, device=x.device)
    parts = T.stack([x] + [z] * (stride - 1), axis=axis + 1)  # (..., n, stride, ...)
    shape = list(x.shape)
    shape[axis] = n * stride
    return parts.reshape(*shape)[(slice(None),) * axis + (slice(0, (n - 1) * stride + 1),)]


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0):  # noqa: A002
    """(N, C_in, H, W) with weight (C_in, C_out, kh, kw) -> (N, C_out, H', W'): the input
    spread by ``stride``, padded, convolved with the flipped kernel."""
    kh, kw = weight.shape[2:]
    (sh, sw), (ph, pw) = as_pair(stride, "stride"), as_pair(padding, "padding")
    oh, ow = as_pair(output_padding, "output_padding")
    z = _dilate(_dilate(input, sh, 2), sw, 3)
    # torch's pad lists (left, right, top, bottom); a negative amount cuts
    z = F.pad(z, (kw - 1 - pw, kw - 1 - pw + ow, kh - 1 - ph, kh - 1 - ph + oh))
    w = weight.transpose((1, 0, 2, 3))[:, :, ::-1, ::-1]
    return F.conv2d(z, w, bias)


class ConvTranspose2d(Module):
    """Transposed 2-D convolution (the gradient of a convolution with respect to its input,
    as in decoders and U-Nets); weight (in_channels, out_channels, kh, kw), torch's layout,
    init and output size ``(H - 1) * stride - 2 * padding + kh + output_padding``. Computed as
    a convolution of the input spread out by ``stride`` with the flipped kernel."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, bias=True, generator=None, dtype=None, *, groups=1,
                 dilation=1, padding_mode="zeros", device=None):
        super().__init__()
        if isinstance(bias, (int, np.integer)) and not isinstance(bias, (bool, np.bool_)):
            # torch's positional order: (..., output_padding, groups, bias, dilation)
            groups, bias = bias, (generator if isinstance(generator, (bool, np.bool_))
                                  else True)
            generator = None
        if padding_mode != "zeros":
            raise ValueError("ConvTranspose2d: only padding_mode='zeros' (as torch's)")
        dtype = default_float(dtype)
        self.in_channels = _positive("in_channels", in_channels)
        self.out_channels = _positive("out_channels", out_channels)
        kh, kw = as_pair(kernel_size, "kernel_size")
        self.kernel_size = (kh, kw)
        self.stride = as_pair(stride, "stride")
        self.padding = as_pair(padding, "padding")
        self.output_padding = as_pair(output_padding, "output_padding")
        self.groups, self.dilation = _positive("groups", groups), as_pair(dilation, "dilation")
        if in_channels % self.groups or out_channels % self.groups:
            raise ValueError(f"ConvTranspose2d groups={groups} must divide in_channels "
                             f"{in_channels} and out_channels {out_channels}")
        if any(op >= max(s, d) for op, s, d in zip(self.output_padding, self.stride,
                                                   self.dilation)):
            raise ValueError(f"output_padding {self.output_padding} must be smaller than the "
                             f"stride {self.stride}")
        cog = out_channels // self.groups
        _kernel_params(self, (in_channels, cog, kh, kw),  # torch's fan-in of this
                       cog * kh * kw, bias, generator, dtype)  # layout: dim 1
        if device is not None:
            self.to(device)

    def forward(self, x, output_size=None):
        if output_size is not None:  # torch's: 2 sizes, or with the (N,) C leading ones
            size, lead = list(output_size), x.ndim - 2
            if len(size) == lead + 2:
                size = size[lead:]
            if len(size) != 2:
                raise ValueError(f"ConvTranspose2D: for {x.ndim}D input, output_size must "
                                 f"have 2 or {lead + 2} elements (got {len(list(output_size))})")
            output_size = size
        if x.ndim == 3 and x.shape[0] == self.in_channels:  # unbatched (C, H, W): torch's
            return self.forward(x.unsqueeze(0), output_size)[0]
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"ConvTranspose2d({self.in_channels}, ...) expects (N, "
                             f"{self.in_channels}, H, W) or ({self.in_channels}, H, W), got "
                             f"{tuple(x.shape)}")
        out_pad = self.output_padding if output_size is None else \
            self._output_padding(x, output_size)
        if self.groups != 1 or self.dilation != (1, 1):
            from .functional.conv_transpose_nd import conv_transpose_nd

            return conv_transpose_nd(x, self.weight, self.bias, self.stride, self.padding,
                                     out_pad, self.groups, self.dilation, 2)
        return conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, out_pad)

    def _output_padding(self, x, output_size):
        """torch's ``forward(x, output_size=...)``: the output padding that gives that size
        (the last two entries; each between the smallest size and that plus stride - 1)."""
        size = [int(v) for v in output_size]
        pads = []
        for d in range(2):
            k = self.weight.shape[2 + d]
            least = ((x.shape[2 + d] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (k - 1) + 1)
            most = least + max(self.stride[d], self.dilation[d]) - 1
            if not least <= size[d] <= most:
                raise ValueError(f"requested an output size of {size}, but valid sizes range "
                                 f"from {least} to {most} (for an input of "
                                 f"{list(x.shape[2:])})")
            pads.append(size[d] - least)
        return tuple(pads)

    def extra_repr(self):
        return _conv_repr(self, 2, self.output_padding)


def _single(v):
    """torch's ``(k,)`` one-tuples for 1-D layers, as an int."""
    return v[0] if isinstance(v, (tuple, list)) and len(v) == 1 else v


class Upsample(Module):
    """torch's ``Upsample(size=, scale_factor=, mode=, align_corners=)`` on ``F.interpolate``
    (nearest, linear, bilinear, bicubic-free: the modes ``F.interpolate`` has). skiff's first
    positional argument is ``scale_factor`` (torch's is ``size``): give ``size=`` by name;
    with neither, the factor is 2. A whole nearest factor repeats each pixel."""

    def __init__(self, scale_factor=None, mode="nearest", *, size=None, align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        if scale_factor is None and size is None:
            scale_factor = 2
        self.size, self.mode, self.align_corners = size, mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor
        self._given_scale = scale_factor  # as given, for the printed form
        self.scale = None if scale_factor is None else (
            as_pair(scale_factor, "scale_factor") if mode == "nearest" and
            not isinstance(scale_factor, float) else scale_factor)

    def forward(self, x):
        if self.mode == "nearest" and self.size is None:
            return F.interpolate(x, scale_factor=self.scale)
        return F.interpolate(x, self.size, self.scale, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self):
        sf = getattr(self, "_given_scale", self.scale)  # torch keeps the factor as float(s)
        if sf is not None:
            sf = tuple(float(v) for v in sf) if isinstance(sf, (tuple, list)) else float(sf)
        what = f"size={self.size}" if self.size is not None else f"scale_factor={sf}"
        return f"{what}, mode={self.mode!r}"


class _Pool1d(Module):
    def __init__(self, kernel_size, stride=None):
        super().__init__()
        self.kernel_size = _positive("kernel_size", kernel_size)
        self.stride = self.kernel_size if stride is None else _positive("stride", stride)

    def forward(self, x):
        if x.ndim != 3:
            raise ValueError(f"{type(self).__name__} expects (N, C, L), got {tuple(x.shape)}")
        n, c, length = x.shape
        y = self.POOL(x.reshape(n, c, 1, length), (1, self.kernel_size), (1, self.stride))
        return y.reshape(n, c, y.shape[-1])

    def extra_repr(self):
        if isinstance(self, MaxPool1d):  # torch's MaxPool1d: ints; AvgPool1d: one-tuples
            return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                    f"padding={self.padding}, dilation={self.dilation}, "
                    f"ceil_mode={self.ceil_mode}")
        return (f"kernel_size={(self.kernel_size,)}, stride={(self.stride,)}, "
                f"padding={(self.padding,)}")


class MaxPool1d(_Pool1d):
    """Max over windows of (N, C, L) sequences (torch.nn.MaxPool1d); ``padding``,
    ``dilation``, ``return_indices``, ``ceil_mode`` take ``F.max_pool1d``."""

    POOL = staticmethod(F.max_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__(kernel_size, stride)
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x):
        if self.padding or self.dilation != 1 or self.return_indices or self.ceil_mode:
            from .functional.conv1d import max_pool1d

            return max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                              self.ceil_mode, self.return_indices)
        return super().forward(x)


class AvgPool1d(_Pool1d):
    """Mean over windows of (N, C, L) sequences (torch.nn.AvgPool1d); ``padding`` and
    ``count_include_pad`` take ``F.avg_pool1d``."""

    POOL = staticmethod(F.avg_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(_single(kernel_size), None if stride is None else _single(stride))
        self.padding, self.ceil_mode = _single(padding), ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, x):
        if self.padding or self.ceil_mode:
            from .functional.conv1d import avg_pool1d

            return avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad)
        return super().forward(x)
