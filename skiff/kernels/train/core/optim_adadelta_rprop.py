"""``torch.optim.Adadelta`` and ``torch.optim.Rprop``: torch's single-tensor updates (its CPU
default), to the formula and the order of the floating-point operations, so a float64 run
follows torch's step for step (tests/kernels/train/core/test_porter_r27_optim_data.py). Plain
``xp`` whole-array expressions, in place on the parameter and its state."""

from __future__ import annotations

from .optim import Optimizer, _check_hyper

__all__ = ["Adadelta", "Rprop"]


def _adadelta_state(xp, x, group):
    return {"square_avg": xp.zeros_like(x), "acc_delta": xp.zeros_like(x)}


def _rprop_state(xp, x, group):
    return {"prev": xp.zeros_like(x), "step_size": xp.full_like(x, group["lr"])}


class Adadelta(Optimizer):
    """torch.optim.Adadelta: ``v = rho v + (1 - rho) g^2``,
    ``d = sqrt(u + eps) / sqrt(v + eps) * g``, ``u = rho u + (1 - rho) d^2``, ``x -= lr d``;
    ``weight_decay`` is L2 (added to the gradient)."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_hyper("lr", lr)
        _check_hyper("rho", rho, 0.0, 1.0 + 1e-12)
        _check_hyper("eps", eps)
        _check_hyper("weight_decay", weight_decay)
        super().__init__(params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                         maximize=bool(maximize))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, rho, eps = group["lr"], group["rho"], group["eps"]
            for p, g, st in self._each(group, _adadelta_state):
                xp, x = p.xp, p._data
                v, u = st["square_avg"], st["acc_delta"]
                v *= rho
                v += (1 - rho) * g * g
                std = xp.sqrt(v + eps)
                delta = xp.sqrt(u + eps)
                delta /= std
                delta *= g
                u *= rho
                u += (1 - rho) * delta * delta
                x += -lr * delta
        return loss


class Rprop(Optimizer):
    """torch.optim.Rprop: each element's step size grows by ``etas[1]`` while its gradient
    keeps its sign and shrinks by ``etas[0]`` when the sign flips (that step is skipped),
    within ``step_sizes``; the parameter moves by ``-sign(g) * step``."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_hyper("lr", lr)
        etaminus, etaplus = (float(e) for e in etas)
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise ValueError(f"Rprop needs 0 < etas[0] < 1 < etas[1], got {tuple(etas)}")
        lo, hi = (float(s) for s in step_sizes)
        super().__init__(params, lr=lr, etas=(etaminus, etaplus), step_sizes=(lo, hi),
                         maximize=bool(maximize))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            lo, hi = group["step_sizes"]
            for p, g, st in self._each(group, _rprop_state):
                xp, x = p.xp, p._data
                s = xp.sign(g * st["prev"])
                factor = xp.where(s > 0, etaplus, xp.where(s < 0, etaminus, 1.0)).astype(x.dtype)
                size = st["step_size"]
                size *= factor
                xp.clip(size, lo, hi, out=size)
                g = xp.where(s < 0, 0, g).astype(x.dtype)  # a flipped sign: no step this time
                x -= xp.sign(g) * size
                st["prev"][...] = g
        return loss
