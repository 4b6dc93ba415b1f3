"""Round 28's layers a torch port meets: ``RReLU`` / ``rrelu``, ``MultiMarginLoss`` /
``multi_margin_loss``, the ``CTCLoss`` module (on ``functional/ctc.py``), ``LazyLinear`` and
``gumbel_softmax``. Written on tensor ops (their gradients are the ops'), with device masks
built by ``xp`` (no host reads)."""

from __future__ import annotations

import numpy as np

from .. import tensor as T
from ..loss_policy import float32_in_mixed
from ..tensor import Tensor
from .functional.activations import softmax
from .functional.ctc import ctc_loss
from .layers import Linear
from .module import Module

__all__ = ["RReLU", "rrelu", "MultiMarginLoss", "multi_margin_loss", "CTCLoss", "LazyLinear",
           "gumbel_softmax"]


def _reduce(loss, reduction, name):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False,  # noqa: A002
          generator=None):
    """torch's randomized leaky ReLU: a negative value times a slope drawn uniformly in
    [lower, upper] per element when training, times their mean otherwise."""
    if not 0 <= lower <= upper:
        raise ValueError(f"rrelu needs 0 <= lower <= upper, got {lower}, {upper}")
    if not training:  # torch's leaky_relu at the mean slope, its gradient in the graph
        from .functional.piecewise_r47 import piecewise_linear
        return piecewise_linear(input, "leaky", (lower + upper) / 2.0)
    neg = input._data < 0
    if training:
        u = T.rand(*input.shape, dtype=input.dtype, device=input.device, generator=generator)
        slope = u * (upper - lower) + lower
    else:
        slope = (lower + upper) / 2.0
    return T.where(neg, input * slope, input)


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x):
        return rrelu(x, self.lower, self.upper, self.training)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}"


@float32_in_mixed
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None,  # noqa: A002
                      size_average=None, reduce=None, reduction="mean"):
    """torch's multi-class hinge loss: per sample ``sum_{i != y} max(0, margin - x[y] +
    x[i])**p / C`` (times ``weight[y]``)."""
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: p must be 1 or 2, got {p}")
    if size_average is not None or reduce is not None:
        reduction = "sum" if (size_average is False and reduce is not False) else (
            "none" if reduce is False else "mean")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    y = target._data if isinstance(target, Tensor) else x.xp.asarray(target)
    y = y.reshape(-1)
    n, c = x.shape
    if y.shape[0] != n:
        raise ValueError(f"multi_margin_loss: {n} samples but {y.shape[0]} targets")
    if y.dtype.kind not in "iu":
        raise TypeError(f"multi_margin_loss: targets must be class ids, got dtype {y.dtype}")
    xp = x.xp
    idx = Tensor(y.reshape(-1, 1).astype(xp.int64))
    xy = x.gather(1, idx)
    z = (x - xy + margin).clamp(min=0.0)
    if p == 2:
        z = z * z
    other = xp.arange(c)[None, :] != y[:, None]
    z = T.where(other, z, 0.0)
    if weight is not None:
        w = weight if isinstance(weight, Tensor) else Tensor(weight, dtype=x.dtype)
        z = z * w.reshape(-1)[idx.reshape(-1)].reshape(-1, 1)
    loss = z.sum(1) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction, "multi_margin_loss")


class MultiMarginLoss(Module):
    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__()
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: p must be 1 or 2, got {p}")
        self.p, self.margin, self.reduction = p, margin, reduction
        self.size_average, self.reduce = size_average, reduce
        if weight is not None:
            self.register_buffer("weight", weight)
        else:
            self.weight = None

    def forward(self, input, target):  # noqa: A002
        return multi_margin_loss(input, target, self.p, self.margin, self.weight,
                                 self.size_average, self.reduce, self.reduction)


class CTCLoss(Module):
    """torch's ``nn.CTCLoss(blank=0, reduction="mean", zero_infinity=False)`` on
    ``F.ctc_loss``: ``loss(log_probs (T, N, C), targets, input_lengths, target_lengths)``."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"CTCLoss: reduction must be 'mean', 'sum' or 'none', got "
                             f"{reduction!r}")
        self.blank, self.reduction, self.zero_infinity = int(blank), reduction, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                        self.reduction, self.zero_infinity)


class LazyLinear(Module):
    """torch's ``nn.LazyLinear(out_features)``: ``in_features`` is the last axis of the first
    input; the weight and bias are drawn then (torch's law), or taken from a loaded state
    dict. Build the optimizer after that first call (torch's rule too)."""

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = 0, int(out_features)
        self._bias, self._dtype, self._device = bias, dtype, device
        self.weight = None
        self.bias = None

    def has_uninitialized_params(self):
        return self.in_features == 0

    def _materialize(self, in_features, dtype=None):
        lin = Linear(in_features, self.out_features, bias=self._bias,
                     dtype=dtype or self._dtype)
        self.in_features = in_features
        self.weight = lin.weight
        self.bias = lin.bias
        if self._device is not None:
            self.to(self._device)

    def forward(self, x):
        if self.has_uninitialized_params():
            self._materialize(x.shape[-1], self._dtype or x.dtype)
            if x.device != self.weight.device:
                self.to(x.device)
        return x @ self.weight.t() + self.bias if self.bias is not None else \
            x @ self.weight.t()

    def _materialize_from(self, state):
        """Shape the layer from a state dict's ``weight`` (a loaded checkpoint)."""
        if self.has_uninitialized_params() and isinstance(state, dict) and "weight" in state:
            w = state["weight"]
            self._materialize(int(w.shape[1]), self._dtype or np.dtype(w.dtype))

    def load_state_dict(self, state, strict=True, assign=False):
        self._materialize_from(state)
        return super().load_state_dict(state, strict, assign)

    def double(self):
        if self.has_uninitialized_params():
            self._dtype = np.float64
        return super().double()

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, " \
               f"bias={self._bias}"


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1, generator=None):
    """torch's ``F.gumbel_softmax``: ``softmax((logits + g) / tau)`` with Gumbel(0, 1) noise
    ``g``; ``hard=True`` gives the one-hot of its argmax with the soft sample's gradient (the
    straight-through estimator)."""
    u = T.rand(*logits.shape, dtype=logits.dtype, device=logits.device, generator=generator)
    xp = logits.xp
    tiny = float(xp.finfo(logits.dtype).tiny)
    g = -xp.log(-xp.log(xp.clip(u._data, tiny, 1.0)))
    y = softmax((logits + Tensor(g, dtype=logits.dtype)) / tau, dim=dim)
    if not hard:
        return y
    d = dim % logits.ndim
    k = xp.argmax(y._data, axis=d)
    onehot = xp.expand_dims(k, d) == xp.arange(logits.shape[d]).reshape(
        [-1 if a == d else 1 for a in range(logits.ndim)])
    return Tensor(onehot, dtype=y.dtype) - y.detach() + y

