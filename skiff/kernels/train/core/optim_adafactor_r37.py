"""torch's ``optim.Adafactor`` (torch 2.5+, the single-tensor form): a factored second
moment (row and column means of ``g^2`` for a matrix, their outer product over the row
mean; a vector keeps one ``g^2`` average), ``1 - beta2_t = step^beta2_decay``, the relative
step ``rho = min(lr, step^-1/2)`` times ``max(eps2, RMS(x))``, the update's RMS clipped at
``d``; weight decay shrinks ``x`` by ``1 - lr wd`` after the scale is read. torch's
arguments, checks, state names (``step``, ``row_var``, ``col_var``, ``variance``)."""

from __future__ import annotations

import math

import numpy as np

from .optim import Optimizer, StepCount
from .optim_more import _lerp_

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                         weight_decay=weight_decay, maximize=bool(maximize))

    def _state(self, p, g):
        st = self.state.get(p)
        if not st:
            xp = p.xp
            st = {"step": StepCount(0)}
            if g.ndim > 1:
                st["row_var"] = xp.zeros(g.shape[:-1] + (1,), dtype=g.dtype)
                st["col_var"] = xp.zeros(g.shape[:-2] + (1,) + g.shape[-1:], dtype=g.dtype)
            else:
                st["variance"] = xp.zeros_like(g)
            self.state[p] = st
        return st

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, wd, d = float(group["lr"]), group["weight_decay"], group["d"]
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                if p._data.dtype.kind == "c":
                    raise RuntimeError("Adafactor does not support complex parameters")
                xp, x = p.xp, p._data
                g = -p._grad if group["maximize"] else p._grad
                st = self._state(p, g)
                st["step"] += 1
                step = float(st["step"])
                e1 = float(np.finfo(x.dtype).eps) if eps1 is None else eps1
                one_minus_beta2 = step ** group["beta2_decay"]
                rho = min(lr, 1 / step ** 0.5)
                alpha = max(eps2, float(xp.linalg.norm(x.ravel())) / x.size ** 0.5) * rho
                if wd != 0:
                    x *= 1 - lr * wd
                if g.ndim > 1:  # torch's norm, squared, over the size
                    row = xp.sqrt((g * g).sum(axis=-1, keepdims=True)) ** 2 / g.shape[-1]
                    _lerp_(st["row_var"], row, one_minus_beta2)
                    col = xp.sqrt((g * g).sum(axis=-2, keepdims=True)) ** 2 / g.shape[-2]
                    _lerp_(st["col_var"], col, one_minus_beta2)
                    var = st["row_var"] @ st["col_var"]
                    var = var / xp.maximum(st["row_var"].mean(axis=-2, keepdims=True), e1)
                else:
                    _lerp_(st["variance"], g * g, one_minus_beta2)
                    var = st["variance"].copy()
                update = 1 / xp.sqrt(xp.maximum(var, e1 * e1)) * g
                denom = max(1.0, float(xp.linalg.norm(update.ravel())) /
                            (math.sqrt(update.size) * d))
                x += (-alpha / denom) * update
        return loss
