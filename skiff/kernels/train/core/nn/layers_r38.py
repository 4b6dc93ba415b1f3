"""Round 38: the 3-D layers torch has and skiff lacked (``ReflectionPad3d``,
``ReplicationPad3d``, ``CircularPad3d``, ``AdaptiveMaxPool3d``/``adaptive_max_pool3d``,
``LPPool3d``/``lp_pool3d``) and ``FeatureAlphaDropout``/``feature_alpha_dropout`` (alpha
dropout of whole channels, for SELU convolution nets)."""

from __future__ import annotations

from .. import tensor as T
from ..layout_r45 import keeps_channels_last
from .conv3d import avg_pool3d
from .layers_r27 import _SELU_ALPHA, _SELU_SCALE, _Dropout
from .layers_r28b import LPPool1d, _lp_root
from .module import Module
from .pixel_pool import _bins, _positive
from .torch_layers import _pad_class

__all__ = ["ReflectionPad3d", "ReplicationPad3d", "CircularPad3d", "AdaptiveMaxPool3d",
           "adaptive_max_pool3d", "LPPool3d", "lp_pool3d", "FeatureAlphaDropout",
           "feature_alpha_dropout"]

ReflectionPad3d = _pad_class("ReflectionPad3d", "reflect", 3, False)
ReplicationPad3d = _pad_class("ReplicationPad3d", "replicate", 3, False)
CircularPad3d = _pad_class("CircularPad3d", "circular", 3, False)


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    """torch's ``adaptive_max_pool3d`` on (N, C, D, H, W) or (C, D, H, W) with torch's bins
    (with ``return_indices``, round 44: ``(values, indices)`` as torch's)."""
    if input.ndim not in (4, 5):
        raise ValueError(f"adaptive_max_pool3d needs (N, C, D, H, W) or (C, D, H, W), got "
                         f"{tuple(input.shape)}")
    sizes = tuple(input.shape[-3:])
    out = [n if o is None else _positive("output_size", o)
           for n, o in zip(sizes, _triple(output_size))]
    if return_indices:
        from .adaptive_indices_r44 import adaptive_max_with_indices

        return adaptive_max_with_indices(input, tuple(out))
    if all(n % o == 0 for n, o in zip(sizes, out)):  # equal windows: one reduction
        (d, h, w), (od, oh, ow) = sizes, out
        y = input.reshape(*input.shape[:-3], od, d // od, oh, h // oh, ow, w // ow)
        return y.amax((-5, -3, -1))
    planes = []
    for ds, de in _bins(sizes[0], out[0]):
        rows = []
        for hs, he in _bins(sizes[1], out[1]):
            cols = [input[..., ds:de, hs:he, ws:we].amax((-3, -2, -1))
                    for ws, we in _bins(sizes[2], out[2])]
            rows.append(T.stack(cols, axis=-1))
        planes.append(T.stack(rows, axis=-2))
    return T.stack(planes, axis=-3)


class AdaptiveMaxPool3d(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        return adaptive_max_pool3d(x, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """torch's: ``(sum of x^p over each window)^(1/p)``."""
    if ceil_mode:
        raise ValueError("lp_pool3d: ceil_mode=True is not supported")
    k = _triple(kernel_size)
    p = float(norm_type)
    return _lp_root(avg_pool3d(input ** p, k, stride) * (k[0] * k[1] * k[2]), p)


class LPPool3d(LPPool1d):
    def forward(self, x):
        return lp_pool3d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    """torch's: alpha dropout with one draw per (sample, channel), so a dropped channel is
    SELU's negative saturation everywhere, then the affine map that keeps a standard-normal
    input's mean 0 and variance 1."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    from ..random import get_generator

    alpha = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha * alpha)) ** -0.5
    b = -a * alpha * p
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = input.xp.asarray(get_generator().random(shape) >= p)
    return input * (a * keep.astype(input.dtype)) + ((alpha * a) * (1 - keep) + b).astype(
        input.dtype)


class FeatureAlphaDropout(_Dropout):
    """torch's ``nn.FeatureAlphaDropout`` (identity in eval mode)."""

    FN = staticmethod(feature_alpha_dropout)

