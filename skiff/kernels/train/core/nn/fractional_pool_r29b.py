"""torch's ``FractionalMaxPool2d`` / ``F.fractional_max_pool2d`` (Graham's fractional max
pooling): windows of ``kernel_size`` whose starts follow torch's pseudo-random sequence
``int((i + u) * alpha) - int(u * alpha)`` with ``alpha = (in - k) / (out - 1)``, the last one
flush with the edge; one ``u`` per sample, channel and axis (``_random_samples``, shape
``(N, C, 2)``: width's then height's, as torch's). Given the same samples the values and
indices are torch's; drawn here, they come from skiff's generator. The maximum is taken by a
gather, so the gradient goes to each window's maximum."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .module import Module


def _pair(v, what):
    if v is None:
        return None
    t = (v, v) if np.isscalar(v) else tuple(v)
    if len(t) != 2:
        raise ValueError(f"fractional_max_pool2d: {what} must be an int or a pair, got {v!r}")
    return t


def _starts(u, n_in, n_out, k):
    """Window starts for samples ``u`` (any shape): shape ``u.shape + (n_out,)``."""
    if n_out == 1:
        return np.full(u.shape + (1,), n_in - k, np.int64)
    alpha = (n_in - k) / (n_out - 1)
    i = np.arange(n_out - 1, dtype=u.dtype)
    seq = ((i + u[..., None]) * alpha).astype(np.int64) - (u[..., None] * alpha).astype(np.int64)
    return np.concatenate([seq, np.full(u.shape + (1,), n_in - k, np.int64)], axis=-1)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices=False, _random_samples=None):
    x = input
    squeeze = x.ndim == 3
    if squeeze:
        x = x.unsqueeze(0)
    if x.ndim != 4:
        raise ValueError(f"fractional_max_pool2d: expected a 3-D or 4-D input, got {x.ndim}-D")
    kh, kw = _pair(kernel_size, "kernel_size")
    n, c, h, w = (int(s) for s in x.shape)
    if output_size is None:
        if output_ratio is None:
            raise ValueError("FractionalMaxPool2d requires specifying either an output size, "
                             "or a pooling ratio")
        rh, rw = _pair(output_ratio, "output_ratio")
        if not (0 < rh < 1 and 0 < rw < 1):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio!r})")
        oh, ow = int(h * rh), int(w * rw)
    else:
        oh, ow = _pair(output_size, "output_size")
    if oh + kh - 1 > h or ow + kw - 1 > w:
        raise RuntimeError(f"fractional_max_pool2d(): pool height {kh} / width {kw} too large "
                           f"for output {oh}x{ow} from input {h}x{w}")
    if _random_samples is None:
        from ..random import get_generator

        u = get_generator().random((n, c, 2)).astype(np.float64)
    else:
        u = np.asarray(getattr(_random_samples, "_data", _random_samples), np.float64)
        u = u.reshape(n, c, 2)
    sw = _starts(u[..., 0], w, ow, kw)  # (n, c, ow)
    sh = _starts(u[..., 1], h, oh, kh)  # (n, c, oh)
    rows = sh[:, :, :, None, None, None] + np.arange(kh)[:, None]  # (n,c,oh,1,kh,1)
    cols = sw[:, :, None, :, None, None] + np.arange(kw)[None, :]  # (n,c,1,ow,1,kw)
    flat = (rows * w + cols).reshape(n, c, oh, ow, kh * kw)
    idx = Tensor._make(x.xp.asarray(flat.reshape(n, c, -1)), False, None, 0)
    win = x.reshape(n, c, h * w).gather(2, idx).reshape(n, c, oh, ow, kh * kw)
    values, arg = win.max(dim=-1)
    ind = np.take_along_axis(flat, np.asarray(arg.numpy())[..., None], axis=-1)[..., 0]
    indices = Tensor._make(x.xp.asarray(ind.astype(np.int64)), False, None, 0)
    if squeeze:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


class FractionalMaxPool2d(Module):
    """torch's ``nn.FractionalMaxPool2d(kernel_size, output_size=None, output_ratio=None,
    return_indices=False)``: fresh samples every call, unless ``_random_samples`` is set."""

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        if output_size is None and output_ratio is None:
            raise ValueError("FractionalMaxPool2d requires specifying either an output size, "
                             "or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        self.kernel_size, self.output_size, self.output_ratio = (kernel_size, output_size,
                                                                 output_ratio)
        self.return_indices = return_indices
        self._random_samples = _random_samples

    def forward(self, x):
        return fractional_max_pool2d(x, self.kernel_size, self.output_size, self.output_ratio,
                                     self.return_indices, _random_samples=self._random_samples)
