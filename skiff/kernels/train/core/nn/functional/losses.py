"""Losses as autograd nodes: ``cross_entropy`` (fused, stable log-softmax + NLL that keeps
the probabilities) and ``mse_loss``.
"""

from __future__ import annotations

import numpy as np

from ...autograd import Function, xp_of
from ...tensor import Tensor

__all__ = ["cross_entropy", "mse_loss"]


class CrossEntropyFn(Function):
    """Fused, stable log-softmax + NLL over the last axis; keeps the probabilities."""

    def forward(self, logits, target, ignore_index=-100, reduction="mean"):
        xp = xp_of(logits)
        c = logits.shape[-1]
        x = logits.reshape(-1, c)
        t = target.reshape(-1)
        self.shape = logits.shape
        valid = t != ignore_index
        safe_t = xp.where(valid, t, 0)
        p = x - x.max(axis=1, keepdims=True)
        xp.exp(p, out=p)
        z = p.sum(axis=1, keepdims=True)
        p /= z
        rows = xp.arange(x.shape[0])
        # loss_i = -log p[i, t_i]; from the shifted logits for accuracy
        picked = p[rows, safe_t]
        loss = -xp.log(xp.maximum(picked, xp.finfo(p.dtype).tiny))
        loss *= valid
        self.reduction = reduction
        self.count = max(int(valid.sum()), 1) if reduction == "mean" else 1
        self.save_for_backward(p, safe_t, valid)
        if reduction == "none":
            return loss.reshape(target.shape)
        total = loss.sum()
        return total / self.count if reduction == "mean" else total

    def backward(self, g):
        p, t, valid = self.saved
        xp = xp_of(p)
        if self.reduction == "none":
            scale = (g.reshape(-1) * valid).astype(p.dtype)[:, None]
        else:
            scale = (valid * (g / self.count)).astype(p.dtype)[:, None]
        gx = p * scale
        gx[xp.arange(p.shape[0]), t] -= scale[:, 0]
        return gx.reshape(self.shape), None


_REDUCTIONS = ("mean", "sum", "none")


def cross_entropy(logits: Tensor, target, ignore_index: int = -100, reduction: str = "mean"):
    """Cross-entropy of ``logits`` (N, C) (or (..., C)) against integer ``target`` (N,).

    Targets equal to ``ignore_index`` add nothing and do not count in the mean.
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    t = target.data if isinstance(target, Tensor) else target
    if not hasattr(t, "dtype"):
        t = np.asarray(t)
    if t.dtype.kind not in "iu":
        raise TypeError(
            f"cross_entropy targets must be integer class indices, got dtype {t.dtype}"
        )
    if tuple(t.shape) != tuple(logits.shape[:-1]):
        raise ValueError(
            f"cross_entropy: logits of shape {tuple(logits.shape)} need targets of shape "
            f"{tuple(logits.shape[:-1])}, got {tuple(t.shape)}"
        )
    return CrossEntropyFn.apply(logits, t, ignore_index=ignore_index, reduction=reduction)


def mse_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:
    """Mean squared error (``reduction`` mean, sum or none)."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    tshape = tuple(getattr(target, "shape", ()))
    if tshape != tuple(input.shape):
        raise ValueError(
            f"mse_loss: input shape {tuple(input.shape)} != target shape {tshape}"
        )
    d = input - target
    sq = d * d
    if reduction == "none":
        return sq
    return sq.mean() if reduction == "mean" else sq.sum()
