"""Shape layers ports meet beside the recurrent ones: ``PixelShuffle``/``PixelUnshuffle`` and
``AdaptiveMaxPool2d`` (with their functions). ``AdaptiveMaxPool2d`` takes torch's bins
(``floor(i H / out)`` to ``ceil((i + 1) H / out)``), so any input size works; the gradient of a
tie is shared among the tied elements (torch gives it to one).
tests/kernels/train/core/test_torch_gaps2_r26.py compares each with torch in float64.
"""

from __future__ import annotations

from .. import tensor as T
from ..layout_r45 import keeps_channels_last
from .layers import _positive
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle", "AdaptiveMaxPool2d", "pixel_shuffle",
           "pixel_unshuffle", "adaptive_max_pool2d"]

def pixel_shuffle(x, upscale_factor):
    """``(*, C r^2, H, W)`` -> ``(*, C, H r, W r)`` (torch's channel order)."""
    r = _positive("upscale_factor", upscale_factor)
    if x.ndim < 3 or x.shape[-3] % (r * r):
        raise ValueError(f"pixel_shuffle needs (*, C*{r * r}, H, W) input (channels divisible "
                         f"by upscale_factor**2), got {tuple(x.shape)}")
    *lead, c, h, w = x.shape
    c //= r * r
    k = len(lead)
    y = x.reshape(*lead, c, r, r, h, w)
    y = y.transpose(tuple(range(k)) + tuple(k + i for i in (0, 3, 1, 4, 2)))
    return y.reshape(*lead, c, h * r, w * r)


def pixel_unshuffle(x, downscale_factor):
    """``(*, C, H r, W r)`` -> ``(*, C r^2, H, W)``, the inverse of :func:`pixel_shuffle`."""
    r = _positive("downscale_factor", downscale_factor)
    if x.ndim < 3 or x.shape[-1] % r or x.shape[-2] % r:
        raise ValueError(f"pixel_unshuffle needs (*, C, H, W) input with H and W divisible by "
                         f"{r}, got {tuple(x.shape)}")
    *lead, c, h, w = x.shape
    k = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.transpose(tuple(range(k)) + tuple(k + i for i in (0, 2, 4, 1, 3)))
    return y.reshape(*lead, c * r * r, h // r, w // r)


class PixelShuffle(Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = _positive("upscale_factor", upscale_factor)

    def forward(self, x):
        return pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = _positive("downscale_factor", downscale_factor)

    def forward(self, x):
        return pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


# ---- adaptive max pooling -----------------------------------------------------------------------

def _bins(n, out):
    return [(i * n // out, -(-(i + 1) * n // out)) for i in range(out)]


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def adaptive_max_pool2d(x, output_size, return_indices=False):
    """torch's ``adaptive_max_pool2d`` on ``(N, C, H, W)`` or ``(C, H, W)`` (with
    ``return_indices``, round 44: ``(values, indices)`` as torch's)."""
    if x.ndim not in (3, 4):
        raise ValueError(f"adaptive_max_pool2d needs (N, C, H, W) or (C, H, W), got "
                         f"{tuple(x.shape)}")
    oh, ow = (output_size, output_size) if not isinstance(output_size, (tuple, list)) \
        else tuple(output_size)
    h, w = x.shape[-2:]
    oh = h if oh is None else _positive("output_size", oh)
    ow = w if ow is None else _positive("output_size", ow)
    if return_indices:
        from .adaptive_indices_r44 import adaptive_max_with_indices

        return adaptive_max_with_indices(x, (oh, ow))
    if h % oh == 0 and w % ow == 0:  # equal windows: one reshape and one reduction
        y = x.reshape(*x.shape[:-2], oh, h // oh, ow, w // ow)
        return y.amax((-3, -1))
    rows = []
    for hs, he in _bins(h, oh):
        cols = [x[..., hs:he, ws:we].amax((-2, -1)) for ws, we in _bins(w, ow)]
        rows.append(T.stack(cols, axis=-1))
    return T.stack(rows, axis=-2)


class AdaptiveMaxPool2d(Module):
    """Max pooling to a fixed ``(out_h, out_w)`` (``None`` keeps that size) with torch's
    bins, for any input size."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        return adaptive_max_pool2d(x, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


# ---- nn.RNN (the Elman layer beside recurrent.py's LSTM and GRU) ---------------------------------
