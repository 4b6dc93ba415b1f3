"""More of round 28's torch names, on tensor ops (their gradients are the ops'):
``LocalResponseNorm`` (AlexNet's), ``ChannelShuffle`` (ShuffleNet's), ``AdaptiveMaxPool1d``,
``LPPool1d``/``LPPool2d``, ``TripletMarginWithDistanceLoss``, ``MultiLabelMarginLoss`` and
their functional forms."""

from __future__ import annotations

from .. import tensor as T
from ..layout_r45 import keeps_channels_last
from ..loss_policy import float32_in_mixed
from ..ops_shape import scatter_add
from ..tensor import Tensor
from .functional.conv import avg_pool2d
from .functional.conv1d import avg_pool1d, pairwise_distance
from .layers_r28 import _reduce
from .module import Module
from .pixel_pool import adaptive_max_pool2d

__all__ = ["LocalResponseNorm", "local_response_norm", "ChannelShuffle", "channel_shuffle",
           "AdaptiveMaxPool1d", "adaptive_max_pool1d", "LPPool1d", "LPPool2d", "lp_pool1d",
           "lp_pool2d", "TripletMarginWithDistanceLoss", "triplet_margin_with_distance_loss",
           "MultiLabelMarginLoss", "multilabel_margin_loss", "UpsamplingNearest2d",
           "UpsamplingBilinear2d"]


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """torch's: ``x / (k + alpha * mean of x^2 over size neighbouring channels)^beta`` (the
    window zero-padded by size // 2 before and (size - 1) // 2 after the channel)."""
    if input.ndim < 3:
        raise ValueError(f"local_response_norm expects (N, C, ...) with at least one spatial "
                         f"axis, got {tuple(input.shape)}")
    c = input.shape[1]
    sq = input * input
    zeros = T.zeros(input.shape[0], 1, *input.shape[2:], dtype=input.dtype,
                    device=input.device)
    padded = T.cat([zeros] * (size // 2) + [sq] + [zeros] * ((size - 1) // 2), 1)
    total = padded[:, 0:c]
    for i in range(1, size):
        total = total + padded[:, i:i + c]
    div = (total / size * alpha + k) ** beta
    return input / div


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = int(size), alpha, beta, k

    def forward(self, x):
        return local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def channel_shuffle(input, groups):  # noqa: A002
    n, c = input.shape[:2]
    if c % groups:
        raise ValueError(f"channel_shuffle: {c} channels do not split into {groups} groups")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = int(groups)

    def forward(self, x):
        return channel_shuffle(x, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    """torch's ``adaptive_max_pool1d`` on (N, C, L) or (C, L): the 2-D one on a 1 x L plane."""
    if input.ndim not in (2, 3):
        raise ValueError(f"adaptive_max_pool1d expects (N, C, L) or (C, L), got "
                         f"{tuple(input.shape)}")
    out = int(output_size[0] if isinstance(output_size, (tuple, list)) else output_size)
    if return_indices:  # round 44: was a crash (a tuple squeezed)
        from .adaptive_indices_r44 import adaptive_max_with_indices

        return adaptive_max_with_indices(input, (out,))
    return adaptive_max_pool2d(input.unsqueeze(-2), (1, out)).squeeze(-2)


class AdaptiveMaxPool1d(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        return adaptive_max_pool1d(x, self.output_size, self.return_indices)


def _lp_root(summed, p):
    return (summed.sign() * summed.abs().relu()) ** (1.0 / p)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """torch's: ``(sum of x^p over each window)^(1/p)``."""
    if ceil_mode:
        raise ValueError("lp_pool1d: ceil_mode=True is not supported")
    k = int(kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size)
    p = float(norm_type)
    return _lp_root(avg_pool1d(input ** p, k, stride) * k, p)


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    if ceil_mode:
        raise ValueError("lp_pool2d: ceil_mode=True is not supported")
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    p = float(norm_type)
    return _lp_root(avg_pool2d(input ** p, (kh, kw), stride) * (kh * kw), p)


class LPPool1d(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, x):
        return lp_pool1d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(LPPool1d):
    def forward(self, x):
        return lp_pool2d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


@float32_in_mixed
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """torch's: ``max(d(a, p) - d(a, n) + margin, 0)``; ``swap`` takes the smaller of
    ``d(a, n)`` and ``d(p, n)``; ``d`` is ``pairwise_distance`` unless given."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be > 0, got {margin}")
    d = distance_function if distance_function is not None else pairwise_distance
    dp, dn = d(anchor, positive), d(anchor, negative)
    if swap:
        dn = dn.minimum(d(positive, negative))
    return _reduce((dp - dn + margin).clamp(min=0.0), reduction,
                   "triplet_margin_with_distance_loss")


class TripletMarginWithDistanceLoss(Module):
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__()
        self.distance_function, self.margin = distance_function, margin
        self.swap, self.reduction = swap, reduction

    def forward(self, anchor, positive, negative):
        return triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


@float32_in_mixed
def multilabel_margin_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                           reduction="mean"):
    """torch's multi-label hinge loss: ``target`` (N, C) lists each sample's classes, ended
    by the first -1; per sample ``sum over listed j, unlisted i of max(0, 1 - (x[j] - x[i]))
    / C`` (a class listed twice counts twice, as torch's)."""
    if size_average is not None or reduce is not None:
        reduction = "none" if reduce is False else ("sum" if size_average is False else "mean")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    xp = x.xp
    y = target._data if isinstance(target, Tensor) else xp.asarray(target)
    y = y.reshape(x.shape)
    if y.dtype.kind not in "iu":
        raise TypeError(f"multilabel_margin_loss: target must be class ids, got {y.dtype}")
    n, c = x.shape
    listed = xp.cumprod(y >= 0, axis=1).astype(bool)  # the prefix before the first -1
    counts = xp.zeros((n, c), dtype=x.dtype)
    rows = xp.broadcast_to(xp.arange(n)[:, None], y.shape)
    scatter_add(counts, (rows, xp.clip(y, 0, c - 1)), listed.astype(x.dtype))
    weight = counts[:, :, None] * (counts == 0)[:, None, :]  # (n, j listed, i unlisted)
    z = (1.0 - x.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0.0) * Tensor(weight, dtype=x.dtype)
    loss = z.sum((1, 2)) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction, "multilabel_margin_loss")


class MultiLabelMarginLoss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.size_average, self.reduce, self.reduction = size_average, reduce, reduction

    def forward(self, input, target):  # noqa: A002
        return multilabel_margin_loss(input, target, self.size_average, self.reduce,
                                      self.reduction)


class UpsamplingNearest2d(Module):
    """torch's ``nn.UpsamplingNearest2d(size=None, scale_factor=None)``."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__()
        self.size, self.scale_factor = size, scale_factor

    def forward(self, x):
        from .functional.extra import interpolate

        return interpolate(x, self.size, self.scale_factor, "nearest")


class UpsamplingBilinear2d(UpsamplingNearest2d):
    """torch's ``nn.UpsamplingBilinear2d``: bilinear with ``align_corners=True``."""

    def forward(self, x):
        from .functional.extra import interpolate

        return interpolate(x, self.size, self.scale_factor, "bilinear", align_corners=True)
