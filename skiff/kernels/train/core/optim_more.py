"""More of ``torch.optim``: ``RMSprop`` (momentum, centered, weight decay) and ``Adagrad``
(lr decay, initial accumulator), each torch's update to the formula and to the order of its
floating-point operations, so a float64 run agrees with torch's step for step (checked in
tests/kernels/train/core/test_optim_more.py). Plain ``xp`` whole-array expressions, in place on
the parameter and its state (one backend-agnostic body for numpy and cupy).
"""

from __future__ import annotations

from .optim import Optimizer, StepCount, _check_hyper, _impl_flags

__all__ = ["RMSprop", "Adagrad"]


def _lerp_(a, b, w):
    """torch's ``a.lerp_(b, w)`` on arrays, with its two formulas (exact at either end)."""
    if w < 0.5:
        a += w * (b - a)
    else:
        a[...] = b - (b - a) * (1 - w)
    return a


def _rmsprop_state(xp, x, group):
    st = {"square_avg": xp.zeros_like(x)}
    if group["momentum"] > 0:
        st["momentum_buffer"] = xp.zeros_like(x)
    if group["centered"]:
        st["grad_avg"] = xp.zeros_like(x)
    return st


class RMSprop(Optimizer):
    """torch.optim.RMSprop: ``v = alpha v + (1 - alpha) g^2``; the step divides by
    ``sqrt(v) + eps`` (centered: ``sqrt(v - mean(g)^2) + eps``), through a momentum buffer when
    ``momentum > 0``; ``weight_decay`` is L2 (added to the gradient)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False):
        _check_hyper("lr", lr)
        _check_hyper("alpha", alpha)
        _check_hyper("eps", eps)
        _check_hyper("weight_decay", weight_decay)
        _check_hyper("momentum", momentum)
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                         momentum=momentum, centered=bool(centered), maximize=bool(maximize))

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, alpha, eps, mom = group["lr"], group["alpha"], group["eps"], group["momentum"]
            for p, g, st in self._each(group, _rmsprop_state):
                xp, x = p.xp, p._data
                v = st["square_avg"]
                v *= alpha
                v += (1 - alpha) * g * g
                if group["centered"]:
                    m = _lerp_(st["grad_avg"], g, 1 - alpha)
                    avg = xp.sqrt(v + (-1) * m * m)
                else:
                    avg = xp.sqrt(v)
                avg += eps
                if mom > 0:
                    buf = st["momentum_buffer"]
                    buf *= mom
                    buf += g / avg
                    x += -lr * buf
                else:
                    x += -lr * g / avg
        return loss


class Adagrad(Optimizer):
    """torch.optim.Adagrad: ``s += g^2``, ``x -= clr g / (sqrt(s) + eps)`` with
    ``clr = lr / (1 + (step - 1) lr_decay)``; ``weight_decay`` is L2."""

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0.0, eps=1e-10, *, maximize=False, foreach=None,
                 differentiable=False, fused=None):
        _check_hyper("lr", lr)
        _check_hyper("lr_decay", lr_decay)
        _check_hyper("weight_decay", weight_decay)
        _check_hyper("initial_accumulator_value", initial_accumulator_value)
        _check_hyper("eps", eps)
        super().__init__(params, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                         initial_accumulator_value=initial_accumulator_value, eps=eps,
                         maximize=bool(maximize), **_impl_flags(foreach, fused, differentiable))
        for group in self.param_groups:  # torch makes the state at construction
            for p in group["params"]:
                v = initial_accumulator_value  # the constructor's for every group (torch's)
                self.state[p] = {"step": StepCount(0), "sum": p.xp.full(
                    p.shape, complex(v, v) if p.dtype.kind == "c" else v, dtype=p.dtype)}

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, eps = group["lr"], group["eps"]
            for p, g, st in self._each(group):  # the state made at construction
                xp, x = p.xp, p._data
                clr = lr / (1 + (st["step"] - 1) * group["lr_decay"])
                s = st["sum"]
                s += g * g
                std = xp.sqrt(s)
                std += eps
                x += -clr * g / std
        return loss
