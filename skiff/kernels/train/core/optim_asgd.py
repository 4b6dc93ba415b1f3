"""``torch.optim.ASGD``, averaged SGD: torch's single-tensor update, to the formula and the
order of its operations. ``eta`` and ``mu`` are kept at torch's scalar precision (float32
unless the default dtype is float64: torch keeps them as tensors of that dtype), so a float64
run follows torch's step for step. ``ax`` (the average) is in the state, as torch's."""

from __future__ import annotations

import numpy as np

from . import default_dtype
from .optim import Optimizer, _check_hyper

__all__ = ["ASGD"]


def _scalar(v):
    dt = np.float64 if default_dtype.FLOAT == np.float64 else np.float32
    return float(np.asarray(v, dtype=dt))


def _asgd_state(xp, x, group):
    return {"eta": _scalar(group["lr"]), "mu": 1.0, "ax": xp.zeros_like(x)}


class ASGD(Optimizer):
    """``x *= 1 - lambd eta``, ``x -= eta g``; ``ax`` averages ``x`` from step ``t0``;
    ``eta = lr / (1 + lambd lr t)^alpha``, ``mu = 1 / max(1, t - t0)``."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_hyper("lr", lr)
        _check_hyper("weight_decay", weight_decay)
        super().__init__(params, lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                         weight_decay=weight_decay, maximize=bool(maximize))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            for p, g, st in self._each(group, _asgd_state):
                x, eta, mu = p._data, st["eta"], st["mu"]
                x *= 1 - lambd * eta
                x += -eta * g
                ax = st["ax"]
                if mu != 1:
                    ax += (x - ax) * mu
                else:
                    ax[...] = x
                t = st["step"]
                st["eta"] = _scalar(lr / ((1 + lambd * lr * t) ** alpha))
                st["mu"] = _scalar(1 / max(1, t - t0))
        return loss
