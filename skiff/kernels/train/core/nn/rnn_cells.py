"""torch's single-step recurrent cells (``RNNCell``, ``LSTMCell``, ``GRUCell``), ``nn.RNN``
and three shape layers ports meet beside them: ``PixelShuffle``/``PixelUnshuffle`` and
``AdaptiveMaxPool2d``.

The cells have torch's parameter names, shapes, gate order (LSTM: i, f, g, o; GRU: r, z, n)
and init (every tensor U(-1/sqrt(hidden), 1/sqrt(hidden)), drawn in torch's order), so a
torch ``state_dict`` loads as it is and gives torch's numbers. Input ``(N, input_size)`` or
unbatched ``(input_size,)``; a missing state is zeros. ``AdaptiveMaxPool2d`` takes torch's
bins (``floor(i H / out)`` to ``ceil((i + 1) H / out)``), so any input size works; the
gradient of a tie is shared among the tied elements (torch gives it to one).
tests/kernels/train/core/test_torch_gaps2_r26.py compares each with torch in float64.
"""

from __future__ import annotations

import math

import numpy as np

from .. import tensor as T
from ..tensor import Tensor
from . import functional as F
from .layers import _positive, uniform_
from .module import Module, Parameter
from .recurrent import _Recurrent

__all__ = ["RNN", "RNNCell", "LSTMCell", "GRUCell", "PixelShuffle", "PixelUnshuffle",
           "AdaptiveMaxPool2d", "pixel_shuffle", "pixel_unshuffle", "adaptive_max_pool2d"]


class _Cell(Module):
    GATES = 1

    def __init__(self, input_size, hidden_size, bias=True, generator=None, dtype=np.float32,
                 device=None):
        super().__init__()
        self.input_size = _positive("input_size", input_size)
        self.hidden_size = _positive("hidden_size", hidden_size)
        self.bias = bool(bias)
        h, g = self.hidden_size, self.GATES
        bound = 1.0 / math.sqrt(h)
        dtype = np.dtype(dtype)
        self.weight_ih = Parameter(uniform_((g * h, self.input_size), bound, generator, dtype),
                                   dtype=dtype)
        self.weight_hh = Parameter(uniform_((g * h, h), bound, generator, dtype), dtype=dtype)
        if self.bias:
            self.bias_ih = Parameter(uniform_((g * h,), bound, generator, dtype), dtype=dtype)
            self.bias_hh = Parameter(uniform_((g * h,), bound, generator, dtype), dtype=dtype)
        else:
            self.bias_ih = self.bias_hh = None
        if device is not None:
            self.to(device)

    def _input(self, x):
        x = x if isinstance(x, Tensor) else Tensor(x)
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}({self.input_size}, {self.hidden_size}) "
                             f"expects input (N, {self.input_size}) or ({self.input_size},), "
                             f"got {tuple(x.shape)}")
        return x, x.ndim == 1

    def _hidden(self, h, x, what="hx"):
        n = x.shape[0]
        if h is None:
            return T.zeros((n, self.hidden_size), dtype=x.dtype, device=x.device)
        h = h if isinstance(h, Tensor) else Tensor(h)
        if h.ndim == 1:
            h = h.unsqueeze(0)
        if tuple(h.shape) != (n, self.hidden_size):
            raise ValueError(f"{what} must have shape ({n}, {self.hidden_size}), got "
                             f"{tuple(h.shape)}")
        return h

    def _gates(self, x, h):
        return (F.linear(x, self.weight_ih, self.bias_ih),
                F.linear(h, self.weight_hh, self.bias_hh))

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(_Cell):
    """torch.nn.RNNCell: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or ``relu``)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", **kw):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, **kw)
        self.nonlinearity = nonlinearity

    def forward(self, x, hx=None):
        x, single = self._input(x)
        x1 = x.unsqueeze(0) if single else x
        gi, gh = self._gates(x1, self._hidden(hx, x1))
        s = gi + gh
        h = s.tanh() if self.nonlinearity == "tanh" else s.relu()
        return h.squeeze(0) if single else h


class LSTMCell(_Cell):
    """torch.nn.LSTMCell: gates i, f, g, o; returns ``(h', c')``."""

    GATES = 4

    def forward(self, x, hx=None):
        x, single = self._input(x)
        x1 = x.unsqueeze(0) if single else x
        if hx is None:
            h = c = self._hidden(None, x1)
        else:
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise ValueError("LSTMCell's state is a pair (h_0, c_0)")
            h, c = self._hidden(hx[0], x1, "h_0"), self._hidden(hx[1], x1, "c_0")
        gi, gh = self._gates(x1, h)
        i, f, g, o = (gi + gh).split(self.hidden_size, axis=-1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h.squeeze(0), c.squeeze(0)) if single else (h, c)


class GRUCell(_Cell):
    """torch.nn.GRUCell: gates r, z, n; ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``,
    ``h' = (1 - z) n + z h``."""

    GATES = 3

    def forward(self, x, hx=None):
        x, single = self._input(x)
        x1 = x.unsqueeze(0) if single else x
        h = self._hidden(hx, x1)
        gi, gh = self._gates(x1, h)
        xr, xz, xn = gi.split(self.hidden_size, axis=-1)
        hr, hz, hn = gh.split(self.hidden_size, axis=-1)
        r = (xr + hr).sigmoid()
        z = (xz + hz).sigmoid()
        cand = (xn + r * hn).tanh()
        h = cand + z * (h - cand)
        return h.squeeze(0) if single else h


# ---- pixel shuffle ------------------------------------------------------------------------------

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


def adaptive_max_pool2d(x, output_size, return_indices=False):
    """torch's ``adaptive_max_pool2d`` on ``(N, C, H, W)`` or ``(C, H, W)`` (values only)."""
    if return_indices:
        raise NotImplementedError("adaptive_max_pool2d(return_indices=True) is not supported: "
                                  "use return_indices=False (the values)")
    if x.ndim not in (3, 4):
        raise ValueError(f"adaptive_max_pool2d needs (N, C, H, W) or (C, H, W), got "
                         f"{tuple(x.shape)}")
    oh, ow = (output_size, output_size) if not isinstance(output_size, (tuple, list)) \
        else tuple(output_size)
    h, w = x.shape[-2:]
    oh = h if oh is None else _positive("output_size", oh)
    ow = w if ow is None else _positive("output_size", ow)
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
        if return_indices:
            raise NotImplementedError("AdaptiveMaxPool2d(return_indices=True) is not "
                                      "supported: use return_indices=False")
        self.output_size = output_size

    def forward(self, x):
        return adaptive_max_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


# ---- nn.RNN (the Elman layer beside recurrent.py's LSTM and GRU) ---------------------------------

class RNN(_Recurrent):
    """torch.nn.RNN: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (``nonlinearity="relu"``:
    relu), with recurrent.py's layers, directions, ``batch_first`` and dropout."""

    GATES = 1

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, **kw):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, **kw)
        self.nonlinearity = nonlinearity

    def _initial(self, state, n, x):
        k = self.num_layers * self.directions
        if state is None:
            return [None] * k
        h0 = self._state(state, n, x, "h_0")
        return [h0[i] for i in range(k)]

    def _run(self, x, weights, state, reverse):
        w_ih, w_hh, b_ih, b_hh = weights
        steps, n = x.shape[0], x.shape[1]
        proj = self._project(x, w_ih, b_ih)
        h = T.zeros((n, self.hidden_size), dtype=x.dtype, device=x.device) if state is None \
            else state
        outs = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            s = proj[t] + F.linear(h, w_hh, b_hh)
            h = s.tanh() if self.nonlinearity == "tanh" else s.relu()
            outs[t] = h
        return T.stack(outs, axis=0), h

    def _finals(self, finals, unbatched):
        h = T.stack(finals, axis=0)
        return h.squeeze(1) if unbatched else h
