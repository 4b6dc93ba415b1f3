"""More of ``torch.optim``'s Adam family: ``Adamax``, ``NAdam`` and ``RAdam``, each torch's
single-tensor update to the formula and to the order of its floating-point operations (NAdam's
running product of momentum factors is kept in float32, as torch keeps it), so a float64 run
agrees with torch's step for step (tests/kernels/train/core/test_torch_gaps_r26.py). Plain
``xp`` whole-array expressions in place on the parameter and its state.
"""

from __future__ import annotations

import numpy as np

from . import default_dtype as _dd
from .optim import Optimizer, _check_hyper
from .optim_more import _lerp_

__all__ = ["Adamax", "NAdam", "RAdam"]


def _checked(lr, betas, eps, weight_decay):
    _check_hyper("lr", lr)
    _check_hyper("eps", eps)
    _check_hyper("weight_decay", weight_decay)
    b1, b2 = betas
    if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
        raise ValueError(f"Invalid beta parameters: {betas} (each in [0, 1))")
    return float(b1), float(b2)


class _Family(Optimizer):
    """The Adam relatives: ``exp_avg`` and the state ``extra`` makes, through the base's
    per-parameter prologue (:meth:`Optimizer._each`)."""

    def _each_moments(self, group, extra):
        def init(xp, x, group):
            return {"exp_avg": xp.zeros_like(x), **extra(xp, x)}

        return self._each(group, init)


def _adamax_state(xp, x):
    return {"exp_inf": xp.zeros_like(x)}


def _nadam_state(xp, x):
    return {"exp_avg_sq": xp.zeros_like(x), "mu_product": 1.0}


def _radam_state(xp, x):
    return {"exp_avg_sq": xp.zeros_like(x)}


class Adamax(_Family):
    """torch.optim.Adamax: ``u = max(beta2 u, |g| + eps)``, ``x -= lr / (1 - beta1^t) m / u``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        b1, b2 = _checked(lr, betas, eps, weight_decay)
        super().__init__(params, lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                         maximize=bool(maximize))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            (b1, b2), eps, lr = group["betas"], group["eps"], group["lr"]
            for p, g, st in self._each_moments(group, _adamax_state):
                xp = p.xp
                _lerp_(st["exp_avg"], g, 1 - b1)
                u = st["exp_inf"]
                u *= b2
                xp.maximum(u, xp.abs(g) + eps, out=u)
                clr = lr / (1 - b1 ** st["step"])
                p._data += -clr * st["exp_avg"] / u
        return loss


class NAdam(_Family):
    """torch.optim.NAdam: Adam with Nesterov momentum and torch's momentum schedule
    ``mu_t = beta1 (1 - 0.5 * 0.96^(t momentum_decay))``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        b1, b2 = _checked(lr, betas, eps, weight_decay)
        _check_hyper("momentum_decay", momentum_decay)
        super().__init__(params, lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                         momentum_decay=momentum_decay,
                         decoupled_weight_decay=bool(decoupled_weight_decay),
                         maximize=bool(maximize))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            (b1, b2), eps, lr = group["betas"], group["eps"], group["lr"]
            md = group["momentum_decay"]
            for p, g, st in self._each_moments(group, _nadam_state):
                xp, t = p.xp, st["step"]
                bc2 = 1 - b2 ** t
                mu = b1 * (1.0 - 0.5 * (0.96 ** (t * md)))
                mu_next = b1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * md)))
                # torch keeps mu_product as a scalar tensor of its scalar dtype: float64 under
                # a float64 default dtype, else float32 (as ASGD's eta and mu)
                sd = np.float64 if _dd.FLOAT == np.float64 else np.float32
                st["mu_product"] = float(sd(st["mu_product"]) * sd(mu))
                _lerp_(st["exp_avg"], g, 1 - b1)
                v = st["exp_avg_sq"]
                v *= b2
                v += (1 - b2) * g * g
                denom = xp.sqrt(v / bc2)
                denom += eps
                mu_product_next = st["mu_product"] * mu_next
                p._data += (-lr * (1.0 - mu) / (1.0 - st["mu_product"])) * g / denom
                p._data += ((-lr * mu_next) / (1.0 - mu_product_next)) * st["exp_avg"] / denom
        return loss


class RAdam(_Family):
    """torch.optim.RAdam: Adam whose adaptive step is switched on (and rectified) once the
    variance estimate's length ``rho_t`` passes 5; before that, SGD with momentum."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        b1, b2 = _checked(lr, betas, eps, weight_decay)
        super().__init__(params, lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                         decoupled_weight_decay=bool(decoupled_weight_decay),
                         maximize=bool(maximize))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            (b1, b2), eps, lr = group["betas"], group["eps"], group["lr"]
            for p, g, st in self._each_moments(group, _radam_state):
                xp, t = p.xp, st["step"]
                _lerp_(st["exp_avg"], g, 1 - b1)
                v = st["exp_avg_sq"]
                v *= b2
                v += (1 - b2) * g * g
                bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
                m_hat = st["exp_avg"] / bc1
                rho_inf = 2 / (1 - b2) - 1
                rho_t = rho_inf - 2 * t * (b2 ** t) / bc2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    s = xp.sqrt(v)
                    s += eps
                    p._data -= m_hat * lr * ((bc2 ** 0.5) / s) * rect
                else:
                    p._data -= m_hat * lr
        return loss
