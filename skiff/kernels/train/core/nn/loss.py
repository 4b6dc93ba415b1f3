"""Loss modules: ``nn.MSELoss()``, ``nn.CrossEntropyLoss()``, ``nn.BCEWithLogitsLoss()``,
callables ``(output, target)``.

They wrap :func:`~skiff.kernels.train.core.nn.functional.mse_loss` and
:func:`~skiff.kernels.train.core.nn.functional.cross_entropy` so that ``Trainer(model,
loss=nn.CrossEntropyLoss())`` reads as it would elsewhere.
"""

from __future__ import annotations

import numpy as np

from . import functional as F
from .module import Module

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(_REDUCTIONS)}, "
                         f"got {reduction!r}")


class MSELoss(Module):
    """Mean squared error between ``output`` and ``target`` (same shape).

    Parameters
    ----------
    reduction : {"mean", "sum", "none"}
    """

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        _check_reduction(reduction)
        self.reduction = reduction

    def forward(self, output, target):
        return F.mse_loss(output, target, reduction=self.reduction)


class CrossEntropyLoss(Module):
    """torch's cross-entropy of logits ``(N, C)`` (or ``(N, C, d1, ...)``: classes on axis 1)
    against integer class ids ``(N,)`` (or ``(N, d1, ...)``).

    Parameters
    ----------
    weight : array (C,) or None
        Each class's weight (rare classes count more); the mean divides by the targets'
        weights, as torch's does.
    ignore_index : int
        Targets equal to this add nothing and do not count in the mean.
    reduction : {"mean", "sum", "none"}
    label_smoothing : float
        Mix this much of a uniform distribution into the one-hot targets (torch's meaning).
    """

    def __init__(self, weight=None, *, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__()
        _check_reduction(reduction)
        if not (isinstance(label_smoothing, (int, float)) and 0.0 <= label_smoothing < 1.0):
            raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing!r}")
        self.ignore_index = int(ignore_index)
        self.reduction = reduction
        self.weight = None if weight is None else np.asarray(  # its float dtype kept (float64)
            weight.numpy() if hasattr(weight, "numpy") else weight)
        if self.weight is not None and self.weight.dtype.kind != "f":
            self.weight = self.weight.astype(np.float32)
        self.label_smoothing = float(label_smoothing)

    def forward(self, output, target):
        weight = self.weight
        if weight is not None and weight.dtype != output.dtype and output.dtype.kind == "f":
            weight = weight.astype(output.dtype)  # float64 logits, float64 weights (torch's)
        if weight is not None and output.xp is not np:  # on the logits' device, copied once
            key = (id(output.xp), weight.dtype)
            cached = self.__dict__.get("_weight_on_device")
            if cached is None or cached[0] != key or not np.array_equal(cached[1], weight):
                cached = (key, np.array(weight), output.xp.asarray(weight))
                self.__dict__["_weight_on_device"] = cached
            weight = cached[2]
        return F.cross_entropy(output, target, ignore_index=self.ignore_index,
                               reduction=self.reduction, weight=weight,
                               label_smoothing=self.label_smoothing)


def binary_cross_entropy_with_logits(logits, target, reduction: str = "mean"):
    """Binary cross-entropy of raw scores ``logits`` against 0/1 (or probability) targets of
    the same shape, computed stably as ``max(z, 0) - z * y + log(1 + exp(-|z|))``."""
    _check_reduction(reduction)
    if tuple(logits.shape) != tuple(target.shape):
        raise ValueError(f"binary cross-entropy compares logits {tuple(logits.shape)} with "
                         f"targets of the same shape, got {tuple(target.shape)}")
    if target.dtype != logits.dtype:
        target = target.astype(logits.dtype)
    per = logits.relu() - logits * target + ((-logits.abs()).exp() + 1.0).log()
    if reduction == "mean":
        return per.mean()
    if reduction == "sum":
        return per.sum()
    return per


class BCEWithLogitsLoss(Module):
    """Binary cross-entropy on raw scores (one output per binary label); targets 0/1.

    Parameters
    ----------
    reduction : {"mean", "sum", "none"}
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None):
        super().__init__()
        if isinstance(weight, str):  # skiff's first argument was reduction
            weight, reduction = None, weight
        _check_reduction(reduction)
        self.reduction, self.weight, self.pos_weight = reduction, weight, pos_weight

    def forward(self, output, target):
        if self.weight is None and self.pos_weight is None:
            return binary_cross_entropy_with_logits(output, target, reduction=self.reduction)
        return F.binary_cross_entropy_with_logits(output, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)
