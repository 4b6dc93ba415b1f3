"""torch's ``PolynomialLR`` and ``CosineAnnealingWarmRestarts`` (round 26: missing when
porting), with torch's arguments and the lr torch gives at every step; re-exported by
:mod:`.lr_scheduler`. Checked step by step against torch in
tests/kernels/train/core/test_torch_gaps_r26.py.
"""

from __future__ import annotations

import math

from .optim import LRSchedule, Optimizer

__all__ = ["PolynomialLR", "CosineAnnealingWarmRestarts"]


class PolynomialLR(LRSchedule):
    """The lr times ``(1 - step / total_iters) ** power`` until ``total_iters``, then held
    (torch's recursive form: chained with another schedule it scales that one's lr)."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters, self.power = int(total_iters), float(power)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, step, base):
        return base * (1.0 - min(self.total_iters, step) / self.total_iters) ** self.power

    _chainable = True

    def lr_after(self, step, lr, base, initial):
        if initial or step == 0 or step > self.total_iters:
            return lr
        t = self.total_iters
        return lr * ((1.0 - step / t) / (1.0 - (step - 1) / t)) ** self.power


class CosineAnnealingWarmRestarts(LRSchedule):
    """A cosine from the base lr to ``eta_min`` over ``T_0`` steps, restarting; each period
    ``T_mult`` times the last. ``step(epoch)`` takes a (fractional) epoch, as torch's."""

    def _torch_state_extra(self, state):  # torch's step() here leaves its count at 0
        state["_step_count"] = 0

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,  # noqa: N803
                 eta_min: float = 0.0, last_epoch: int = -1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        self.T_0, self.T_i, self.T_mult = T_0, T_0, T_mult
        self.eta_min = float(eta_min)
        self.T_cur = max(last_epoch, 0)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, step, base):
        cos = math.cos(math.pi * self.T_cur / self.T_i)
        return self.eta_min + (base - self.eta_min) * (1 + cos) / 2

    def step(self, epoch=None) -> None:
        if epoch is None:
            self.last_step += 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i, self.T_cur = self.T_0, epoch
            self.last_step = math.floor(epoch)
        self._apply()

    def state_dict(self) -> dict:
        return {**super().state_dict(), "T_i": self.T_i, "T_cur": self.T_cur}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.T_i, self.T_cur = state.get("T_i", self.T_i), state.get("T_cur", self.T_cur)
        self._apply()
