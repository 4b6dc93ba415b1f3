"""More of torch's layers, found missing by porting (round 27): ``Softshrink``,
``Hardshrink``, ``Tanhshrink``, ``Softmax2d``, ``AdaptiveAvgPool1d`` (torch's bins, any
length), ``Bilinear`` (torch's weight (out, in1, in2) and init), ``InstanceNorm1d``/``2d``
(per sample and channel, optional affine; running statistics refused), and their functional
forms. Built of differentiable ops, so their gradients (and double backward) are the ops'."""

from __future__ import annotations

import math

import numpy as np

from ..default_dtype import default_float
from ..tensor import stack
from .layers import _positive, uniform_
from .module import Module, Parameter

__all__ = ["Softshrink", "Hardshrink", "Tanhshrink", "Softmax2d", "AdaptiveAvgPool1d",
           "Bilinear", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "Dropout3d",
           "AlphaDropout",
           "softshrink", "hardshrink", "tanhshrink", "adaptive_avg_pool1d", "bilinear",
           "instance_norm", "dropout3d", "alpha_dropout"]


def _zero(x):
    return x.xp.zeros((), dtype=x.dtype)


def softshrink(x, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""
    from .functional.piecewise_r47 import piecewise_linear  # gradient in the graph (r47)
    return piecewise_linear(x, "softshrink", lambd)


def hardshrink(x, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0."""
    from .functional.piecewise_r47 import piecewise_linear  # gradient in the graph (r47)
    return piecewise_linear(x, "hardshrink", lambd)


def tanhshrink(x):
    return x - x.tanh()


def adaptive_avg_pool1d(x, output_size):
    """(N, C, L) -> (N, C, output_size): bin i averages ``[floor(i L / n), ceil((i+1) L / n))``
    (torch's bins)."""
    n = int(output_size if not isinstance(output_size, (tuple, list)) else output_size[0])
    length = x.shape[-1]
    if length % n == 0:
        k = length // n
        return x.reshape(*x.shape[:-1], n, k).mean(-1)
    bins = [x.narrow(-1, (i * length) // n, -(-((i + 1) * length) // n) - (i * length) // n)
            .mean(-1) for i in range(n)]
    return stack(bins, -1)


def bilinear(input1, input2, weight, bias=None):
    """``y_o = x1 . W_o . x2 + b_o`` with ``weight`` (out, in1, in2)."""
    out, in1, in2 = weight.shape
    w = weight.permute(1, 0, 2).reshape(in1, out * in2)
    y = (input1 @ w).reshape(*input1.shape[:-1], out, in2)
    y = (y * input2.unsqueeze(-2)).sum(-1)
    return y if bias is None else y + bias


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Each (sample, channel) normalised over its spatial axes (biased variance). With
    running statistics (torch's ``track_running_stats``): ``use_input_stats`` normalises by
    the instance's own and moves ``running_mean``/``running_var`` (in place) toward the batch
    mean of the instance means / unbiased variances; otherwise they normalise."""
    axes = tuple(range(2, input.ndim))
    shape = (1, -1) + (1,) * (input.ndim - 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and "
                             "running_var")
        out = (input - running_mean.detach().reshape(shape)) / (
            running_var.detach().reshape(shape) + eps).sqrt()
    else:
        mu = input.mean(axes, keepdim=True)
        xc = input - mu
        var = (xc * xc).mean(axes, keepdim=True)
        out = xc / (var + eps).sqrt()
        if running_mean is not None or running_var is not None:
            _update_running(input, mu, var, running_mean, running_var, momentum)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    # torch's instance_norm is row-major whatever the input's layout (round 45 h17)
    if not getattr(out, "_batched", False):
        flags = getattr(getattr(out, "_data", None), "flags", None)
        if flags is not None and not flags.c_contiguous:
            out = out.contiguous()
    return out


def _update_running(input, mu, var, running_mean, running_var, momentum):
    """torch's update: the batch mean of the per-instance statistics (variance unbiased)."""
    n = 1
    for d in input.shape[2:]:
        n *= d
    m = float(momentum)
    lead = input.shape[:2]
    if running_mean is not None:
        new = mu.detach()._data.reshape(lead).mean(0)
        running_mean._data[...] = (1 - m) * running_mean._data + m * new
    if running_var is not None:
        new = var.detach()._data.reshape(lead).mean(0) * (n / max(n - 1, 1))
        running_var._data[...] = (1 - m) * running_var._data + m * new


def dropout3d(x, p=0.5, training=True, inplace=False, generator=None):
    """Whole channels of (N, C, D, H, W) (or (C, D, H, W)) zeroed with probability ``p``."""
    from .functional.activations_more import _channel_dropout

    return _channel_dropout(x, p, training, generator, 3, "dropout3d")


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def alpha_dropout(x, p=0.5, training=False, inplace=False, generator=None):
    """torch's: dropped entries set to SELU's negative saturation, then an affine map that
    keeps a standard-normal input's mean 0 and variance 1."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    from ..random import get_generator

    alpha = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha * alpha)) ** -0.5
    b = -a * alpha * p
    rng, xp = get_generator(generator), x.xp
    if xp is np:
        keep = rng.random(tuple(x.shape)) >= p
    else:  # the device draws, seeded from the host generator (F.dropout's way): a host mask
        # of the input's size was drawn on the CPU and copied over twice per call
        state = xp.random.RandomState(int(rng.integers(2**63 - 1)))
        keep = state.random_sample(tuple(x.shape), dtype=np.float64) >= p
    k = keep.astype(x.dtype)
    return x * (a * k) + ((alpha * a) * (1 - keep) + b).astype(x.dtype)


class _Dropout(Module):
    FN = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = bool(inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"

    def forward(self, x):
        return type(self).FN(x, self.p, self.training)


class Dropout3d(_Dropout):
    """torch's ``nn.Dropout3d`` (identity in eval mode)."""

    FN = staticmethod(dropout3d)


class AlphaDropout(_Dropout):
    """torch's ``nn.AlphaDropout`` (for SELU networks; identity in eval mode)."""

    FN = staticmethod(alpha_dropout)


def _fn_module(name, fn, doc, *params):
    def init(self, *args, **kwargs):
        Module.__init__(self)
        for (p, default), value in zip(params, list(args) + [None] * len(params)):
            setattr(self, p, kwargs.get(p, value if value is not None else default))

    def forward(self, x):
        return fn(x, **{p: getattr(self, p) for p, _ in params})

    return type(name, (Module,), {"__init__": init, "forward": forward, "__doc__": doc})


Softshrink = _fn_module("Softshrink", softshrink, "torch's ``nn.Softshrink``.", ("lambd", 0.5))
Hardshrink = _fn_module("Hardshrink", hardshrink, "torch's ``nn.Hardshrink``.", ("lambd", 0.5))
Tanhshrink = _fn_module("Tanhshrink", tanhshrink, "torch's ``nn.Tanhshrink``.")
Softmax2d = _fn_module("Softmax2d", lambda x: x.softmax(-3),
                       "torch's ``nn.Softmax2d``: softmax over the channels ((N,) C, H, W).")
AdaptiveAvgPool1d = _fn_module("AdaptiveAvgPool1d", adaptive_avg_pool1d,
                               "torch's ``nn.AdaptiveAvgPool1d``.", ("output_size", 1))


class Bilinear(Module):
    """torch's ``nn.Bilinear``: weight (out, in1, in2), bias (out,), U(+-1/sqrt(in1))."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None, generator=None):
        super().__init__()
        dtype = default_float(dtype)
        self.in1_features = _positive("in1_features", in1_features)
        self.in2_features = _positive("in2_features", in2_features)
        self.out_features = _positive("out_features", out_features)
        bound = 1.0 / math.sqrt(in1_features)
        self.weight = Parameter(uniform_((out_features, in1_features, in2_features), bound,
                                         generator, dtype), dtype=dtype)
        self.bias = Parameter(uniform_((out_features,), bound, generator, dtype),
                              dtype=dtype) if bias else None
        if device is not None:
            self.to(device)

    def forward(self, input1, input2):
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class _InstanceNorm(Module):
    DIMS = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        self.num_features = _positive("num_features", num_features)
        self.eps, self.momentum, self.affine = eps, momentum, bool(affine)
        self.track_running_stats = bool(track_running_stats)
        self.weight = Parameter(np.ones(num_features, dtype=dtype), dtype=dtype) \
            if affine else None
        self.bias = Parameter(np.zeros(num_features, dtype=dtype), dtype=dtype) \
            if affine else None
        if self.track_running_stats:  # torch's buffers (the count stays 0, as torch's)
            self.register_buffer("running_mean", np.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", np.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", np.zeros((), dtype=np.int64))
        if device is not None:
            self.to(device)

    def forward(self, x):
        if x.ndim == self.DIMS + 1:  # unbatched
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.ndim != self.DIMS + 2 or x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}({self.num_features}) expects (N, "
                             f"{self.num_features}, ...) with {self.DIMS} spatial axes, got "
                             f"{tuple(x.shape)}")
        if not self.track_running_stats:
            return instance_norm(x, weight=self.weight, bias=self.bias, eps=self.eps)
        return instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                             self.training, self.momentum if self.momentum is not None
                             else 0.0, self.eps)


    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """torch's ``nn.InstanceNorm1d`` ((N, C, L))."""

    DIMS = 1


class InstanceNorm2d(_InstanceNorm):
    """torch's ``nn.InstanceNorm2d`` ((N, C, H, W))."""

    DIMS = 2


class InstanceNorm3d(_InstanceNorm):
    """torch's ``nn.InstanceNorm3d`` ((N, C, D, H, W))."""

    DIMS = 3
