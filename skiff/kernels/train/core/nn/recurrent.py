"""Recurrent layers, ``LSTM`` and ``GRU``, with torch's parameters, layouts and equations, so
a torch model's ``state_dict`` loads as it is (the tests compare outputs and gradients with
torch's own layers).

Each layer (and direction) projects the whole input sequence in one GEMM and then steps
through time with the hidden-to-hidden product and the gates as autograd ops (an unpacked
sequence, and an LSTM without ``proj_size``: the whole recurrence as one node,
:mod:`.lstm_fused_r31`). Input
``(L, N, features)`` (``batch_first``: ``(N, L, features)``; unbatched ``(L, features)``);
``LSTM`` returns ``(output, (h_n, c_n))``, ``GRU`` ``(output, h_n)``, with ``h_n`` of shape
``(num_layers * directions, N, hidden)``. ``dropout`` applies between layers in training.
"""

from __future__ import annotations

import math

from .. import tensor as T
from ..default_dtype import default_float
from ..shape_error import ShapeError
from ..tensor import Tensor
from . import functional as F
from .layers import _positive, uniform_
from .lstm_fused_r31 import GRUSeqFn, LSTMSeqFn
from .module import Module, Parameter
from .packed_sequence import PackedSequence, step_mask

__all__ = ["LSTM", "GRU"]


class _Recurrent(Module):
    GATES = 4

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, generator=None, dtype=None, proj_size=0,
                 device=None):
        super().__init__()
        dtype = default_float(dtype)
        self.proj_size = int(proj_size)
        if self.proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if self.proj_size and not isinstance(self, LSTM):
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if self.proj_size >= int(hidden_size):
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.input_size = _positive("input_size", input_size)
        self.hidden_size = _positive("hidden_size", hidden_size)
        self.num_layers = _positive("num_layers", num_layers)
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        h, g = self.hidden_size, self.GATES
        out = self.proj_size or h  # the hidden state's width (LSTM's projection: proj_size)
        bound = 1.0 / math.sqrt(h)
        for layer in range(self.num_layers):
            width = self.input_size if layer == 0 else out * self.directions
            for sfx in self._suffixes(layer):
                setattr(self, f"weight_ih{sfx}",
                        Parameter(uniform_((g * h, width), bound, generator, dtype), dtype=dtype))
                setattr(self, f"weight_hh{sfx}",
                        Parameter(uniform_((g * h, out), bound, generator, dtype), dtype=dtype))
                if self.bias:
                    setattr(self, f"bias_ih{sfx}",
                            Parameter(uniform_((g * h,), bound, generator, dtype), dtype=dtype))
                    setattr(self, f"bias_hh{sfx}",
                            Parameter(uniform_((g * h,), bound, generator, dtype), dtype=dtype))
                if self.proj_size:
                    setattr(self, f"weight_hr{sfx}",
                            Parameter(uniform_((out, h), bound, generator, dtype), dtype=dtype))

    def extra_repr(self):  # torch's RNNBase: the options that differ from the defaults
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("proj_size", 0), ("num_layers", 1), ("bias", True),
                              ("batch_first", False), ("dropout", 0.0),
                              ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer):
        return [f"_l{layer}"] + ([f"_l{layer}_reverse"] if self.bidirectional else [])

    def _weights(self, sfx):
        get = self.__getattribute__
        return (get(f"weight_ih{sfx}"), get(f"weight_hh{sfx}"),
                get(f"bias_ih{sfx}") if self.bias else None,
                get(f"bias_hh{sfx}") if self.bias else None)

    def _check(self, x):
        if not isinstance(x, Tensor):
            x = Tensor(x)
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            from ..shape_error import ShapeError

            raise ShapeError(f"input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {x.shape[-1] if x.ndim else 0}: "
                             f"{type(self).__name__}({self.input_size}, {self.hidden_size}) "
                             f"expects input (L, N, {self.input_size})"
                             f"{' with batch_first (N, L, ...)' if self.batch_first else ''} "
                             f"or unbatched (L, {self.input_size}), got {tuple(x.shape)}")
        return x

    def _state(self, given, n, x, what):
        width = self.proj_size if (self.proj_size and what == "h_0") else self.hidden_size
        shape = (self.num_layers * self.directions, n, width)
        if given is None:
            return None
        s = given if isinstance(given, Tensor) else Tensor(given)
        if s.ndim == 2:
            s = s.unsqueeze(1)
        if tuple(s.shape) != shape:  # torch's words, then skiff's
            tag = "hidden" if not any(c.__name__ == "LSTM" for c in type(self).__mro__) else \
                f"hidden[{0 if what == 'h_0' else 1}]"
            raise ShapeError(f"Expected {tag} size {shape}, got {list(s.shape)} ({what} must "
                             f"have shape {shape}, got {tuple(given.shape)})")
        return s

    def forward(self, x, state=None):
        packed = x if isinstance(x, PackedSequence) else None
        mask = None
        if packed is not None:  # time-major padded steps and a mask (packed_sequence.py)
            x, mask = self._check(packed._padded), step_mask(packed)
        x = self._check(x)
        unbatched = x.ndim == 2 and packed is None
        if unbatched:
            x = x.unsqueeze(1)
        elif self.batch_first and packed is None:
            x = x.transpose((1, 0, 2))
        n = x.shape[1]
        states = self._initial(state, n, x)
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d, sfx in enumerate(self._suffixes(layer)):
                k = layer * self.directions + d
                seq, last = self._run(x, self._weights(sfx), states[k], d == 1, mask)
                outs.append(seq)
                finals.append(last)
            x = outs[0] if len(outs) == 1 else T.cat(outs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        out = x
        if packed is not None:
            return PackedSequence(_padded=out, _lengths=packed._lengths), \
                self._finals(finals, False)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose((1, 0, 2))
        return out, self._finals(finals, unbatched)

    @staticmethod
    def _keep(mask, t, new, old):
        """``new`` where step ``t`` is a real one of the sequence, else ``old`` (packed)."""
        return new if mask is None else T.where(mask[t], new, old)

    @staticmethod
    def _shown(mask, t, h):
        """The output of step ``t``: zeros past a packed sequence's end, as torch's."""
        return h if mask is None else T.where(mask[t], h, h.xp.zeros((), dtype=h.dtype))

    @staticmethod
    def _shown_all(mask, hs):
        """Every step's output: zeros past a packed sequence's end (the fused node carries
        the state there)."""
        return hs if mask is None else T.where(mask, hs, hs.xp.zeros((), dtype=hs.dtype))

    def _project(self, x, w_ih, b_ih):
        steps, n = x.shape[0], x.shape[1]
        proj = F.linear(x.reshape(steps * n, x.shape[-1]), w_ih, b_ih)
        return proj.reshape(steps, n, w_ih.shape[0])

    def _initial(self, state, n, x):
        """Each layer's (and direction's) first hidden state: ``h_0`` (N, hidden) slices, or
        None for zeros (LSTM's carries ``(h_0, c_0)``: its own)."""
        k = self.num_layers * self.directions
        if state is None:
            return [None] * k
        h0 = self._state(state, n, x, "h_0")
        return [h0[i] for i in range(k)]


class LSTM(_Recurrent):
    """torch.nn.LSTM: gates i, f, g, o; ``c' = f c + i g``, ``h' = o tanh(c')``."""

    GATES = 4

    def _initial(self, state, n, x):
        k = self.num_layers * self.directions
        if state is None:
            return [None] * k
        if not (isinstance(state, tuple) and len(state) == 2):
            raise ValueError("LSTM's state is a pair (h_0, c_0)")
        h0, c0 = (self._state(s, n, x, w) for s, w in zip(state, ("h_0", "c_0")))
        return [(h0[i], c0[i]) for i in range(k)]

    def _run(self, x, weights, state, reverse, mask=None):
        w_ih, w_hh, b_ih, b_hh = weights
        w_hr = getattr(self, "weight_hr" + self._sfx_of(w_ih)) if self.proj_size else None
        steps, n, hsz = x.shape[0], x.shape[1], self.hidden_size
        proj = self._project(x, w_ih, b_ih)
        if state is None:
            c = T.zeros((n, hsz), dtype=x.dtype, device=x.device)
            h = c if w_hr is None else T.zeros((n, self.proj_size), dtype=x.dtype,
                                                device=x.device)
        else:
            h, c = state
        if w_hr is None:  # one node for the whole recurrence (round 31; packed: round 33)
            hs, cs = LSTMSeqFn.apply(proj, None if state is None else h,
                                     None if state is None else c, w_hh, b_hh,
                                     reverse=reverse, mask=mask)
            last = 0 if reverse else steps - 1
            return self._shown_all(mask, hs), (hs[last], cs[last])
        outs = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            gates = proj[t] + F.linear(h, w_hh, b_hh)
            i, f, g, o = gates.split(hsz, axis=-1)
            c_new = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h_new = o.sigmoid() * c_new.tanh()
            if w_hr is not None:  # torch's proj_size: h = W_hr (o * tanh(c))
                h_new = F.linear(h_new, w_hr)
            c, h = self._keep(mask, t, c_new, c), self._keep(mask, t, h_new, h)
            outs[t] = self._shown(mask, t, h)
        return T.stack(outs, axis=0), (h, c)

    def _sfx_of(self, w_ih):
        for name, p in self._parameters.items():
            if p is w_ih and name.startswith("weight_ih"):
                return name[len("weight_ih"):]
        raise KeyError("LSTM: the input weight is not one of this module's")

    def _finals(self, finals, unbatched):
        h = T.stack([f[0] for f in finals], axis=0)
        c = T.stack([f[1] for f in finals], axis=0)
        return (h.squeeze(1), c.squeeze(1)) if unbatched else (h, c)


class GRU(_Recurrent):
    """torch.nn.GRU: gates r, z, n; ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``,
    ``h' = (1 - z) n + z h``."""

    GATES = 3

    def _run(self, x, weights, state, reverse, mask=None):
        w_ih, w_hh, b_ih, b_hh = weights
        steps = x.shape[0]
        proj = self._project(x, w_ih, b_ih)
        if proj.dtype != w_hh.dtype and w_hh.dtype.itemsize > proj.dtype.itemsize:
            # autocast("cpu"): torch's GRU takes its input projection in bf16 but keeps the
            # state at the weights' precision (its cell's ``(h - n) * z + n`` promotes), so
            # outputs and h_n come back float32
            proj = proj.to(dtype=w_hh.dtype)
            if state is not None and state.dtype != w_hh.dtype:
                state = state.to(dtype=w_hh.dtype)
        # one node for the whole recurrence (round 31; packed sequences: round 33)
        hs = GRUSeqFn.apply(proj, state, w_hh, b_hh, reverse=reverse, mask=mask)
        return self._shown_all(mask, hs), hs[0 if reverse else steps - 1]

    def _finals(self, finals, unbatched):
        h = T.stack(finals, axis=0)
        return h.squeeze(1) if unbatched else h
