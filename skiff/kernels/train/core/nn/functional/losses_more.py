"""More of torch's losses, composed from skiff's differentiable ops with torch's arguments and
formulas: ``margin_ranking_loss``, ``hinge_embedding_loss``, ``soft_margin_loss``,
``cosine_embedding_loss``, ``triplet_margin_loss``, ``multilabel_soft_margin_loss``,
``poisson_nll_loss`` and ``gaussian_nll_loss``. tests/kernels/train/core/test_torch_gaps_r26.py
compares each with torch in float64, value and gradients.
"""

from __future__ import annotations

import math

from ...loss_policy import float32_in_mixed
from ...tensor import Tensor, where
from .activations_more import logsigmoid
from .conv1d import pairwise_distance
from .extra import _reduce

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "cosine_embedding_loss", "triplet_margin_loss", "multilabel_soft_margin_loss",
           "poisson_nll_loss", "gaussian_nll_loss"]


def _raw(t):
    return t._data if isinstance(t, Tensor) else t


@float32_in_mixed
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


@float32_in_mixed
def hinge_embedding_loss(input, target, margin=1.0, reduction="mean"):  # noqa: A002
    """``x`` where the target is 1, ``max(0, margin - x)`` where it is -1."""
    y = _raw(target)
    per = where(y == 1, input, 0.0) + where(y == -1, (margin - input).clamp(min=0.0), 0.0)
    return _reduce(per, reduction)


@float32_in_mixed
def soft_margin_loss(input, target, reduction="mean"):  # noqa: A002
    return _reduce(-logsigmoid(input * target), reduction)


@float32_in_mixed
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """``1 - cos`` where the target is 1, ``max(0, cos - margin)`` where it is -1; torch's
    cosine ``x1.x2 / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12))`` over the last axis."""
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    m1 = (input1 * input1).sum(-1) + eps
    m2 = (input2 * input2).sum(-1) + eps
    cos = dot / (m1 * m2).sqrt()
    y = _raw(target)
    per = where(y == 1, 1.0 - cos, 0.0) + where(y == -1, (cos - margin).clamp(min=0.0), 0.0)
    return _reduce(per, reduction)


@float32_in_mixed
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction="mean"):
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_swap = pairwise_distance(positive, negative, p, eps)
        d_neg = where(_raw(d_swap) < _raw(d_neg), d_swap, d_neg)
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


@float32_in_mixed
def multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):  # noqa: A002
    per = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        per = per * weight
    return _reduce(per.mean(-1), reduction)


@float32_in_mixed
def poisson_nll_loss(input, target, log_input=True, full=False, eps=1e-8,  # noqa: A002
                     reduction="mean"):
    per = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        t = _raw(target)
        xp = input.xp
        tt = xp.where(t > 1, t, 2.0)  # Stirling's term where target > 1, else 0 (torch's)
        if isinstance(target, Tensor) and target.requires_grad:
            # a target in the graph gets the term's gradient, log(t) + 1 / (2 t), as torch's
            keep = Tensor._make((t > 1).astype(input.dtype), False, None, 0)
            tg = target * keep + Tensor._make((t <= 1) * 2.0, False, None, 0).astype(
                input.dtype)
            st = (target * tg.log() - target + 0.5 * (tg * (2 * math.pi)).log()) * keep
            return _reduce(per + st, reduction)
        st = t * xp.log(tt) - t + 0.5 * xp.log(2 * math.pi * tt)
        per = per + Tensor._make(xp.where(t > 1, st, 0.0).astype(input.dtype), False, None, 0)
    return _reduce(per, reduction)


@float32_in_mixed
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6,  # noqa: A002
                      reduction="mean"):
    """``0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps))`` (+ ``0.5 log 2 pi``
    with ``full``); ``var`` the input's shape, or one fewer trailing axis, or of size 1 there."""
    if isinstance(var, Tensor) and var.ndim == input.ndim - 1 and tuple(var.shape) == tuple(
            input.shape[:-1]):
        var = var.unsqueeze(-1)
    if isinstance(var, Tensor):  # torch clamps var under no_grad: the gradient is taken at eps
        raw = _raw(var)
        lift = input.xp.where(raw < eps, eps - raw, 0).astype(raw.dtype)
        v = var + Tensor._make(lift, False, None, 0)
    else:
        v = max(var, eps)
    d = input - target
    per = 0.5 * ((v.log() if isinstance(v, Tensor) else math.log(v)) + d * d / v)
    if full:
        per = per + 0.5 * math.log(2 * math.pi)
    return _reduce(per, reduction)
