"""torch's single-step recurrent cells (``RNNCell``, ``LSTMCell``, ``GRUCell``) and ``nn.RNN``
(the shape layers ports meet beside them are in :mod:`.pixel_pool`).

The cells have torch's parameter names, shapes, gate order (LSTM: i, f, g, o; GRU: r, z, n)
and init (every tensor U(-1/sqrt(hidden), 1/sqrt(hidden)), drawn in torch's order), so a
torch ``state_dict`` loads as it is and gives torch's numbers. Input ``(N, input_size)`` or
unbatched ``(input_size,)``; a missing state is zeros.
tests/kernels/train/core/test_torch_gaps2_r26.py compares each with torch in float64.
"""

from __future__ import annotations

import math

import numpy as np

from .. import tensor as T
from ..default_dtype import default_float
from ..tensor import Tensor
from . import functional as F
from .layers import _positive, uniform_
from .module import Module, Parameter
from .recurrent import _Recurrent

__all__ = ["RNN", "RNNCell", "LSTMCell", "GRUCell"]


class _Cell(Module):
    GATES = 1

    def __init__(self, input_size, hidden_size, bias=True, generator=None, dtype=None,
                 device=None):
        super().__init__()
        dtype = default_float(dtype)
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

    def _run(self, x, weights, state, reverse, mask=None):
        w_ih, w_hh, b_ih, b_hh = weights
        steps, n = x.shape[0], x.shape[1]
        proj = self._project(x, w_ih, b_ih)
        h = T.zeros((n, self.hidden_size), dtype=x.dtype, device=x.device) if state is None \
            else state
        outs = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            s = proj[t] + F.linear(h, w_hh, b_hh)
            h = self._keep(mask, t, s.tanh() if self.nonlinearity == "tanh" else s.relu(), h)
            outs[t] = self._shown(mask, t, h)
        return T.stack(outs, axis=0), h

    def _finals(self, finals, unbatched):
        h = T.stack(finals, axis=0)
        return h.squeeze(1) if unbatched else h
