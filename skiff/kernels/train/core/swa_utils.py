"""torch's ``optim.swa_utils``: ``AveragedModel`` (stochastic weight averaging, or an EMA
through ``get_ema_multi_avg_fn``/``get_ema_avg_fn``), ``SWALR`` (anneal each group's lr to
``swa_lr``, cosine or linear, over ``anneal_epochs`` steps) and ``update_bn`` (recompute the
batch-norm running statistics with the averaged weights: one pass, cumulative averages), with
torch's formulas and state-dict names (``n_averaged``, ``module.*``)."""

from __future__ import annotations

import copy
import math

import numpy as np

from .nn.conv import _BatchNorm
from .nn.module import Module
from .optim import LRSchedule
from .optim_more import _lerp_
from .tensor import Tensor, no_grad

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def get_ema_avg_fn(decay=0.999):
    """``avg_fn`` of an exponential moving average: ``decay * avg + (1 - decay) * new``."""
    _check_decay(decay)

    def ema(averaged, current, num_averaged):
        return decay * averaged + (1 - decay) * current
    return ema


def get_ema_multi_avg_fn(decay=0.999):
    """``multi_avg_fn`` of an exponential moving average (lists of tensors of one dtype, in
    place): torch's lerp for floats; integer buffers (``num_batches_tracked``) take
    ``decay * avg + (1 - decay) * new`` truncated, as torch's ``copy_`` does."""
    _check_decay(decay)

    def ema(averaged, current, num_averaged):
        for a, c in zip(averaged, current):
            if a.dtype.kind in "fc":  # torch's lerp towards the new weights
                _lerp_(a._data, c._data, 1 - decay)
            else:
                a._data[...] = a._data * decay + c._data * (1 - decay)
    return ema


def get_swa_avg_fn():
    """torch's ``avg_fn`` of the running mean: ``avg + (new - avg) / (n + 1)``."""

    def swa(averaged, current, num_averaged):
        return averaged + (current - averaged) / (num_averaged + 1)
    return swa


def get_swa_multi_avg_fn():
    """torch's ``multi_avg_fn`` of the running mean (lists of one dtype, in place): a lerp
    by ``1 / (n + 1)`` for floats, ``avg + (new - avg) / (n + 1)`` truncated for integers."""

    def swa(averaged, current, num_averaged):
        n = float(num_averaged)
        for a, c in zip(averaged, current):
            if a.dtype.kind in "fc":
                _lerp_(a._data, c._data, 1 / (n + 1))
            else:
                a._data[...] = a._data + (c._data - a._data) / (n + 1)
    return swa


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) are the
    average of the ones :meth:`update_parameters` is given: the running mean by default."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module.to(device)
        self.register_buffer("n_averaged", Tensor(np.zeros((), dtype=np.int64)))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model):
        ps = list(model.parameters())
        return ps + list(model.buffers()) if self.use_buffers else ps

    def update_parameters(self, model):
        mine, theirs = self._tensors(self.module), self._tensors(model)
        n = int(self.n_averaged._data)
        with no_grad():
            if n == 0:
                for a, c in zip(mine, theirs):
                    a._data[...] = c._data
            elif self.multi_avg_fn is not None:  # torch's: one call per dtype
                groups = {}
                for a, c in zip(mine, theirs):
                    groups.setdefault(a.dtype, []).append((a, c))
                for pairs in groups.values():
                    self.multi_avg_fn([a for a, _ in pairs], [c for _, c in pairs],
                                      Tensor(np.asarray(n)))
            else:  # every tensor, integer buffers too: the average is truncated into them
                for a, c in zip(mine, theirs):
                    if self.avg_fn is not None:
                        a._data[...] = self.avg_fn(a.detach(), c.detach(),
                                                   Tensor(np.asarray(n)))._data
                    elif a.dtype.kind in "fc":
                        a._data += (c._data - a._data) / (n + 1)
                    else:
                        a._data[...] = a._data + (c._data - a._data) / (n + 1)
        if not self.use_buffers:  # torch keeps the buffers in step with the model's
            for a, c in zip(self.module.buffers(), model.buffers()):
                a._data[...] = c._data
        self.n_averaged._data += 1


def update_bn(loader, model, device=None):
    """Reset the batch norms' running statistics and run ``loader``'s inputs (the first item
    of a tuple) through ``model`` in training mode once, averaging over all batches."""
    norms = {m: m.momentum for m in model.modules() if isinstance(m, _BatchNorm)
             and m.track_running_stats}
    if not norms:
        return
    was_training = model.training
    model.train()
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for m, momentum in norms.items():
        m.momentum = momentum
    model.train(was_training)


class SWALR(LRSchedule):
    """Anneal each group's lr from where it is to ``swa_lr`` over ``anneal_epochs`` steps
    (``"cos"`` or ``"linear"``), then hold it (torch's formula, step for step)."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        lrs = swa_lr if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(
            optimizer.param_groups)
        if len(lrs) != len(optimizer.param_groups):
            raise ValueError(f"swa_lr must have {len(optimizer.param_groups)} values, one per "
                             f"group, got {len(lrs)}")
        for lr, g in zip(lrs, optimizer.param_groups):
            g["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be a non-negative integer, got "
                             f"{anneal_epochs!r}")
        self.anneal_epochs, self.anneal_strategy = anneal_epochs, anneal_strategy
        super().__init__(optimizer, last_epoch)

    def _alpha(self, t):
        return (1 - math.cos(math.pi * t)) / 2 if self.anneal_strategy == "cos" else t

    def get_lr(self):
        step = self.last_step
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self._alpha(prev_t)
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self._alpha(t)
        out = []
        for g in self.optimizer.param_groups:
            lr, swa = g["lr"], g["swa_lr"]
            prev = swa if prev_alpha == 1 else (lr - prev_alpha * swa) / (1 - prev_alpha)
            out.append(swa * alpha + prev * (1 - alpha))
        return out
