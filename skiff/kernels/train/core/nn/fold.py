"""torch's ``F.unfold`` (im2col: every ``kernel_size`` patch of an (N, C, H, W) input as a
column, (N, C * kh * kw, L)) and ``F.fold`` (its adjoint: columns summed back into an image),
with ``dilation``, ``padding`` and ``stride``, and the modules ``nn.Unfold``/``nn.Fold``. One
gather (``index_select``) or one scatter-add (``index_add``) of precomputed positions, so the
gradients are theirs."""

from __future__ import annotations

import functools

import numpy as np

from ..tensor import zeros
from . import functional as F
from .functional.conv import as_pair
from .module import Module

__all__ = ["unfold", "fold", "Unfold", "Fold"]


def _positions(size, kernel_size, dilation, padding, stride):
    """(kh * kw, L) indices into the padded (Hp * Wp) plane, the padded size, the padding and
    the cache key (read-only arrays, kept per geometry)."""
    (h, w), (kh, kw) = size, as_pair(kernel_size, "kernel_size")
    (dh, dw), (ph, pw) = as_pair(dilation, "dilation"), as_pair(padding, "padding")
    sh, sw = as_pair(stride, "stride")
    key = tuple(int(v) for v in (h, w, kh, kw, dh, dw, ph, pw, sh, sw))
    return (*_positions_of(key), (ph, pw), key)


@functools.lru_cache(maxsize=64)
def _positions_of(key):
    h, w, kh, kw, dh, dw, ph, pw, sh, sw = key
    hp, wp = h + 2 * ph, w + 2 * pw
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ValueError(f"unfold: the kernel {kh}x{kw} (dilation {dh}x{dw}) does not fit the "
                         f"padded input {hp}x{wp}")
    ki, kj = np.meshgrid(np.arange(kh) * dh, np.arange(kw) * dw, indexing="ij")
    oi, oj = np.meshgrid(np.arange(oh) * sh, np.arange(ow) * sw, indexing="ij")
    rows = ki.reshape(-1, 1) + oi.reshape(1, -1)
    cols = kj.reshape(-1, 1) + oj.reshape(1, -1)
    pos = rows * wp + cols
    pos.setflags(write=False)
    return pos, (hp, wp)


_ON_DEVICE: dict = {}  # (geometry, device id) -> the flat index on that GPU


def _flat_index(input, pos, key):  # noqa: A002
    """``pos`` flattened, on ``input``'s device: copied to a GPU once per geometry (a host
    index would be copied over, synchronously, on every call)."""
    xp = input.xp
    if xp is np:
        return pos.reshape(-1)
    dev = int(getattr(input._data.device, "id", 0))
    found = _ON_DEVICE.get((key, dev))
    if found is None:
        if len(_ON_DEVICE) >= 64:
            _ON_DEVICE.clear()
        with xp.cuda.Device(dev):
            found = _ON_DEVICE[(key, dev)] = xp.asarray(pos.reshape(-1))
    return found


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    if input.ndim not in (3, 4):
        raise ValueError(f"unfold expects (N, C, H, W) or (C, H, W), got {tuple(input.shape)}")
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0)
    n, c, h, w = input.shape
    pos, (hp, wp), (ph, pw), key = _positions((h, w), kernel_size, dilation, padding, stride)
    x = F.pad(input, (pw, pw, ph, ph)) if ph or pw else input
    cols = x.reshape(n, c, hp * wp).index_select(2, _flat_index(input, pos, key))
    return cols.reshape(n, c * pos.shape[0], pos.shape[1])


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    if input.ndim not in (2, 3):
        raise ValueError(f"fold expects (N, C * kh * kw, L) or (C * kh * kw, L), got "
                         f"{tuple(input.shape)}")
    if input.ndim == 2:
        return fold(input.unsqueeze(0), output_size, kernel_size, dilation, padding,
                    stride).squeeze(0)
    h, w = as_pair(output_size, "output_size")
    pos, (hp, wp), (ph, pw), key = _positions((h, w), kernel_size, dilation, padding, stride)
    k, length = pos.shape
    n, ck, got = input.shape
    if ck % k or got != length:
        raise ValueError(f"fold: input {tuple(input.shape)} does not hold C * {k} rows and "
                         f"{length} blocks for output_size {(h, w)}")
    c = ck // k
    plane = zeros(n, c, hp * wp, dtype=input.dtype, device=input.device)  # input's device
    plane = plane.index_add(2, _flat_index(input, pos, key),
                            input.reshape(n, c, k * length))
    img = plane.reshape(n, c, hp, wp)
    return img[:, :, ph:ph + h, pw:pw + w] if ph or pw else img


class Unfold(Module):
    """torch's ``nn.Unfold``."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x):
        return unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """torch's ``nn.Fold``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size, self.dilation = output_size, kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x):
        return fold(x, self.output_size, self.kernel_size, self.dilation, self.padding,
                    self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
