"""More of torch's ``optim.lr_scheduler``: ``LambdaLR``, ``MultiplicativeLR``, ``MultiStepLR``,
``ExponentialLR``, ``CosineAnnealingLR``, ``LinearLR`` and ``ReduceLROnPlateau``, with torch's
arguments and the lr torch gives at every step (``StepLR``, ``ConstantLR`` and skiff's
``WarmupCosine`` are in :mod:`.optim`). Checked against torch step by step in
tests/kernels/train/core/test_torch_ports.py.
"""

from __future__ import annotations

import math

from .optim import ConstantLR, LRSchedule, Optimizer, StepLR, WarmupCosine

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "MultiStepLR", "ExponentialLR",
           "CosineAnnealingLR", "LinearLR", "ReduceLROnPlateau", "StepLR", "ConstantLR",
           "WarmupCosine"]

LRScheduler = LRSchedule


def _per_group(value, optimizer, what):
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{what}: {len(value)} given for "
                             f"{len(optimizer.param_groups)} parameter groups")
        return list(value)
    return [value] * len(optimizer.param_groups)


class LambdaLR(LRSchedule):
    """The base lr times ``lr_lambda(step)`` (one function, or one per parameter group)."""

    def __init__(self, optimizer: Optimizer, lr_lambda):
        self.lr_lambdas = _per_group(lr_lambda, optimizer, "lr_lambda")
        super().__init__(optimizer)

    def get_lr(self):
        return [b * f(self.last_step) for b, f in zip(self.base_lrs, self.lr_lambdas)]


class MultiplicativeLR(LRSchedule):
    """Each step multiplies the lr by ``lr_lambda(step)``."""

    def __init__(self, optimizer: Optimizer, lr_lambda):
        self.lr_lambdas = _per_group(lr_lambda, optimizer, "lr_lambda")
        super().__init__(optimizer)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_step == 0:
            return [g["lr"] for g in groups]
        return [g["lr"] * f(self.last_step) for g, f in zip(groups, self.lr_lambdas)]


class MultiStepLR(LRSchedule):
    """The base lr times ``gamma`` once at each of the ``milestones``."""

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1):
        self.milestones, self.gamma = sorted(int(m) for m in milestones), float(gamma)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        return base * self.gamma ** sum(step >= m for m in self.milestones)


class ExponentialLR(LRSchedule):
    def __init__(self, optimizer: Optimizer, gamma: float):
        self.gamma = float(gamma)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        return base * self.gamma ** step


class CosineAnnealingLR(LRSchedule):
    """``eta_min + (base - eta_min) * (1 + cos(pi * step / T_max)) / 2`` (torch's closed form;
    past ``T_max`` it rises again, as torch's does)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0):  # noqa: N803
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        cos = math.cos(math.pi * step / self.T_max)
        return self.eta_min + (base - self.eta_min) * (1 + cos) / 2


class LinearLR(LRSchedule):
    """The base lr times a factor going linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` steps, then held."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1 / 3, end_factor: float = 1.0,
                 total_iters: int = 5):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError("LinearLR needs 0 < start_factor <= 1 and 0 <= end_factor <= 1")
        self.start, self.end, self.total = float(start_factor), float(end_factor), int(total_iters)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        t = min(step, self.total) / self.total if self.total else 1.0
        return base * (self.start + (self.end - self.start) * t)


class ReduceLROnPlateau:
    """torch's ``ReduceLROnPlateau``: ``step(metric)`` multiplies every group's lr by
    ``factor`` once the metric has not improved for more than ``patience`` calls."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr=0.0, eps: float = 1e-8):
        if factor >= 1.0:
            raise ValueError(f"factor should be < 1.0, got {factor!r}")
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError("mode is 'min' or 'max', threshold_mode 'rel' or 'abs'")
        self.optimizer, self.mode, self.factor = optimizer, mode, float(factor)
        self.patience, self.threshold = int(patience), threshold
        self.threshold_mode = threshold_mode
        self.cooldown, self.eps = int(cooldown), float(eps)
        self.min_lrs = _per_group(min_lr, optimizer, "min_lr")
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = self.last_step = 0

    def _better(self, a):
        rel = self.threshold_mode == "rel"
        if self.mode == "min":
            return a < (self.best * (1 - self.threshold) if rel else self.best - self.threshold)
        return a > (self.best * (1 + self.threshold) if rel else self.best + self.threshold)

    def step(self, metrics) -> None:
        current = float(metrics)
        self.last_step += 1
        if self._better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for g, low in zip(self.optimizer.param_groups, self.min_lrs):
                new = max(g["lr"] * self.factor, low)
                if g["lr"] - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0

    def get_last_lr(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict) -> None:
        self.__dict__.update(state)
