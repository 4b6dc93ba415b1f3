"""``torch.optim.SparseAdam``: the lazy Adam of embedding tables. Only the rows a step's
gradient touches move, and only their moments decay; ``lr * sqrt(1 - beta2^t) / (1 -
beta1^t)`` with the parameter's own step count and ``eps`` added to ``sqrt(v)``, in torch's
order of operations.

skiff's gradients are dense (``Embedding(sparse=True)`` gives a dense one), so the touched
rows are those (slices along the first axis) with a nonzero gradient: torch's sparse
gradient also lists a looked-up row whose summed gradient is exactly zero, and moves it by
its old moment; here such a row waits. Dense parameters are accepted (torch refuses their
dense gradients and asks for Adam)."""

from __future__ import annotations

import math

from .autograd import xp_of
from .optim import Optimizer, _check_hyper

__all__ = ["SparseAdam"]


def _moments(xp, x, group):
    return {"exp_avg": xp.zeros_like(x), "exp_avg_sq": xp.zeros_like(x)}


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_hyper("lr", lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        super().__init__(params, lr=lr, betas=tuple(betas), eps=eps, maximize=bool(maximize))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            for p, g, st in self._each(group, _moments):
                x, m, v = p._data, st["exp_avg"], st["exp_avg_sq"]
                xp = xp_of(x)
                if x.ndim == 0:
                    rows = slice(None)
                else:
                    rows = xp.nonzero(g.reshape(g.shape[0], -1).any(axis=1))[0]
                    if rows.shape[0] == 0:
                        continue
                gv, m_old, v_old = g[rows], m[rows], v[rows]
                m_upd = (gv - m_old) * (1 - b1)
                v_upd = (gv * gv - v_old) * (1 - b2)
                m[rows] = m_old + m_upd
                v[rows] = v_old + v_upd
                numer = m_upd + m_old
                denom = xp.sqrt(v_upd + v_old) + eps
                t = st["step"]
                step_size = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
                x[rows] = x[rows] + -step_size * (numer / denom)
        return loss
