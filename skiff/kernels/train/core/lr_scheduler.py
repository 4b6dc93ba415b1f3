"""More of torch's ``optim.lr_scheduler``: ``LambdaLR``, ``MultiplicativeLR``, ``MultiStepLR``,
``ExponentialLR``, ``CosineAnnealingLR``, ``LinearLR`` and ``ReduceLROnPlateau``, with torch's
arguments and the lr torch gives at every step (``StepLR``, ``ConstantLR`` and skiff's
``WarmupCosine`` are in :mod:`.optim`). Checked against torch step by step in
tests/kernels/train/core/test_torch_ports.py.
"""

from __future__ import annotations

import bisect
import collections
import math
import types

from .lr_scheduler_more import CosineAnnealingWarmRestarts, PolynomialLR
from .optim import (
    ConstantLR,
    LRSchedule,
    Optimizer,
    StepLR,
    WarmupCosine,
    group_lrs,
    with_float_lrs,
)

__all__ = ["LRScheduler", "_LRScheduler", "LambdaLR", "MultiplicativeLR", "MultiStepLR",
           "ExponentialLR", "OneCycleLR", "CyclicLR", "SequentialLR", "ChainedScheduler",
           "CosineAnnealingLR",
           "LinearLR", "ReduceLROnPlateau", "StepLR", "ConstantLR", "WarmupCosine",
           "PolynomialLR", "CosineAnnealingWarmRestarts"]

LRScheduler = _LRScheduler = LRSchedule  # torch's base names (subclasses define get_lr)


def _per_group(value, optimizer, what):
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{what}: {len(value)} given for "
                             f"{len(optimizer.param_groups)} parameter groups")
        return list(value)
    return [value] * len(optimizer.param_groups)


class LambdaLR(LRSchedule):
    """The base lr times ``lr_lambda(step)`` (one function, or one per parameter group)."""

    def _torch_state_extra(self, state):  # torch's: None for a function, else its __dict__
        state["lr_lambdas"] = [None if isinstance(f, types.FunctionType)
                               else dict(getattr(f, "__dict__", {})) for f in self.lr_lambdas]

    def __init__(self, optimizer: Optimizer, lr_lambda):
        self.lr_lambdas = _per_group(lr_lambda, optimizer, "lr_lambda")
        super().__init__(optimizer)

    def get_lr(self):
        return [b * f(self.last_step) for b, f in zip(self.base_lrs, self.lr_lambdas)]


class MultiplicativeLR(LRSchedule):
    """Each step multiplies the lr by ``lr_lambda(step)``."""

    def _torch_state_extra(self, state):  # torch's: None for a function, else its __dict__
        state["lr_lambdas"] = [None if isinstance(f, types.FunctionType)
                               else dict(getattr(f, "__dict__", {})) for f in self.lr_lambdas]

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

    def _torch_state_extra(self, state):  # torch's: a Counter of the milestones
        state["milestones"] = collections.Counter(self.milestones)

    def load_state_dict(self, state: dict) -> None:
        """torch's: the state's milestones (a Counter, or a list) replace this one's."""
        saved = state.get("milestones")
        if isinstance(saved, dict):
            self.milestones = sorted(int(k) for k, n in saved.items() for _ in range(int(n)))
        elif saved is not None:
            self.milestones = sorted(int(m) for m in saved)
        super().load_state_dict(state)

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1):
        self.milestones, self.gamma = sorted(int(m) for m in milestones), float(gamma)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        return base * self.gamma ** sum(step >= m for m in self.milestones)

    _chainable = True

    def lr_after(self, step, lr, base, initial):
        hits = self.milestones.count(step)
        return lr * self.gamma ** hits if hits else lr


class ExponentialLR(LRSchedule):
    def __init__(self, optimizer: Optimizer, gamma: float):
        self.gamma = float(gamma)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        return base * self.gamma ** step

    _chainable = True

    def lr_after(self, step, lr, base, initial):
        return lr if initial else lr * self.gamma


class CosineAnnealingLR(LRSchedule):
    """``eta_min + (base - eta_min) * (1 + cos(pi * step / T_max)) / 2`` (torch's closed form;
    past ``T_max`` it rises again, as torch's does)."""

    def _chain(self, initial: bool = False) -> None:
        t = self.T_max
        if not initial and self.last_step and (self.last_step - 1 - t) % (2 * t) == 0:
            self._same_groups()  # torch's form reads base_lrs here (zip strict: it raises)
        super()._chain(initial)

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0):  # noqa: N803
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        cos = math.cos(math.pi * step / self.T_max)
        return self.eta_min + (base - self.eta_min) * (1 + cos) / 2

    _chainable = True

    def lr_after(self, step, lr, base, initial):
        t, low = self.T_max, self.eta_min
        if initial:
            return lr
        if (step - 1 - t) % (2 * t) == 0:
            return lr + (base - low) * (1 - math.cos(math.pi / t)) / 2
        return ((1 + math.cos(math.pi * step / t)) / (1 + math.cos(math.pi * (step - 1) / t))
                * (lr - low) + low)


class LinearLR(LRSchedule):
    """The base lr times a factor going linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` steps, then held."""

    _TORCH_KEYS = {"start": "start_factor", "end": "end_factor", "total": "total_iters"}

    def __init__(self, optimizer: Optimizer, start_factor: float = 1 / 3, end_factor: float = 1.0,
                 total_iters: int = 5):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError("LinearLR needs 0 < start_factor <= 1 and 0 <= end_factor <= 1")
        self.start, self.end, self.total = float(start_factor), float(end_factor), int(total_iters)
        super().__init__(optimizer)

    def lr_at(self, step, base):
        t = min(step, self.total) / self.total if self.total else 1.0
        return base * (self.start + (self.end - self.start) * t)

    _chainable = True

    def lr_after(self, step, lr, base, initial):
        if step == 0:
            return lr * self.start
        if initial or step > self.total:
            return lr
        d = self.end - self.start
        return lr * (1.0 + d / (self.total * self.start + (step - 1) * d))


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

    @with_float_lrs
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
        return group_lrs(self.optimizer)

    def state_dict(self) -> dict:
        """torch's keys (``last_epoch`` for the steps taken)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "last_step")}
        state["last_epoch"] = self.last_step
        mins = set(self.min_lrs)
        state.update({"_last_lr": self.get_last_lr(), "mode_worse": math.inf if self.mode ==
                      "min" else -math.inf,
                      "default_min_lr": self.min_lrs[0] if len(mins) == 1 else None})
        return state

    def load_state_dict(self, state: dict) -> None:
        """Reads skiff's state, torch's, or one saved before round 26 (``last_step``)."""
        state = dict(state)
        if "last_epoch" in state:
            state["last_step"] = state.pop("last_epoch")
        known = set(self.__dict__) - {"optimizer"}
        self.__dict__.update({k: v for k, v in state.items() if k in known})


def _cycle_momentum(sched, optimizer, base_momentum, max_momentum, what):
    """Set up torch's momentum cycling: ``betas[0]`` for Adam-like optimizers, else
    ``momentum``; each group starts at ``max_momentum``."""
    defaults = getattr(optimizer, "defaults", {})
    if "momentum" not in defaults and "betas" not in defaults:
        raise ValueError(f"{what}: optimizer must support momentum or beta1 with "
                         "`cycle_momentum` option enabled")
    sched.use_beta1 = "betas" in defaults
    bases = _per_group(base_momentum, optimizer, "base_momentum")
    highs = _per_group(max_momentum, optimizer, "max_momentum")
    for g, lo, hi in zip(optimizer.param_groups, bases, highs):
        _set_momentum(sched, g, hi)
        g["max_momentum"], g["base_momentum"] = hi, lo
    return bases, highs


def _set_momentum(sched, group, value):
    if sched.use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class OneCycleLR(LRSchedule):
    """torch's ``OneCycleLR``: from ``max_lr / div_factor`` up to ``max_lr`` over the first
    ``pct_start`` of ``total_steps`` (or ``epochs * steps_per_epoch``), then down to
    ``initial_lr / final_div_factor`` (cosine or linear; ``three_phase`` as torch), with the
    momentum (or Adam's beta1) cycled the other way. Stepping past ``total_steps`` raises."""

    _TORCH_KEYS = {"anneal_strategy": "_anneal_func_type"}

    def _torch_state_extra(self, state):  # torch's phases are dicts
        del state["phases"]
        keys = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")
        state["_schedule_phases"] = [dict(zip(keys, ph)) for ph in self.phases]

    _float_initial_lr = True  # torch's sets each group's initial_lr to a number

    def __init__(self, optimizer: Optimizer, max_lr, total_steps=None, epochs=None,
                 steps_per_epoch=None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(
                    f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        n = self.total_steps
        if three_phase:
            self.phases = [(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum",
                            "base_momentum"),
                           (float(2 * pct_start * n) - 2, "max_lr", "initial_lr",
                            "base_momentum", "max_momentum"),
                           (n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self.phases = [(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum",
                            "base_momentum"),
                           (n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        self.anneal_strategy = anneal_strategy
        for g, top in zip(optimizer.param_groups, _per_group(max_lr, optimizer, "max_lr")):
            g["initial_lr"] = top / div_factor
            g["max_lr"] = top
            g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            _cycle_momentum(self, optimizer, base_momentum, max_momentum, "OneCycleLR")
        super().__init__(optimizer)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_step
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps "
                             f"is {self.total_steps}")
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self.phases):
                if step <= end or i == len(self.phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(g[lr0], g[lr1], pct)
                    if self.cycle_momentum:
                        _set_momentum(self, g, self._anneal(g[m0], g[m1], pct))
                    break
                start = end
            lrs.append(lr)
        return lrs


class CyclicLR(LRSchedule):
    """torch's ``CyclicLR``: the lr goes from ``base_lr`` to ``max_lr`` over ``step_size_up``
    steps and back over ``step_size_down`` (``triangular``, ``triangular2`` halving each
    cycle's height, ``exp_range`` scaling by ``gamma**step``, or a ``scale_fn``), the momentum
    (or beta1) between ``max_momentum`` and ``base_momentum`` the other way."""

    def _torch_state_extra(self, state):  # torch's: a user's scale_fn object's __dict__
        fn = self.__dict__.get("_scale_fn_custom")
        state["_scale_fn_custom"] = (dict(fn.__dict__) if fn is not None and not
                                     isinstance(fn, types.FunctionType) else None)

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down=None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn=None, scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1):
        bases = _per_group(base_lr, optimizer, "base_lr")
        for g, lr in zip(optimizer.param_groups, bases):
            g["lr"] = lr
        self.max_lrs = _per_group(max_lr, optimizer, "max_lr")
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        if scale_fn is None:
            self.scale_fn = {"triangular": lambda x: 1.0,
                             "triangular2": lambda x: 1 / (2.0 ** (x - 1)),
                             "exp_range": lambda x: gamma ** x}[mode]
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        else:
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
            self._scale_fn_custom = scale_fn
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            self.base_momentums, self.max_momentums = _cycle_momentum(
                self, optimizer, base_momentum, max_momentum, "CyclicLR")
        self.optimizer = optimizer
        self._bases = bases
        super().__init__(optimizer)

    def get_lr(self):
        step = self.last_step
        cycle = math.floor(1 + step / self.total_size)
        x = 1.0 + step / self.total_size - cycle
        if x <= self.step_ratio:
            scale = x / self.step_ratio
        else:
            scale = (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else step
        lrs = [b + ((m - b) * scale) * self.scale_fn(at) for b, m in zip(self._bases, self.max_lrs)]
        if self.cycle_momentum:
            for g, lo, hi in zip(self.optimizer.param_groups, self.base_momentums,
                                 self.max_momentums):
                _set_momentum(self, g, hi - ((hi - lo) * scale) * self.scale_fn(at))
        return lrs


class SequentialLR:
    """torch's ``SequentialLR``: ``schedulers[i]`` runs from ``milestones[i - 1]`` on (each
    restarting from step 0 at its milestone, from the groups' ``initial_lr``); e.g. a linear
    warmup then a cosine decay."""

    @with_float_lrs
    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("SequentialLR expects at least one scheduler")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}")
        for i, s in enumerate(schedulers):
            if getattr(s, "optimizer", None) is not optimizer:
                raise ValueError(f"SequentialLR: scheduler at index {i} has a different "
                                 "optimizer than the one given")
            if not isinstance(s, LRSchedule):
                raise ValueError(f"SequentialLR: scheduler at index {i} ({type(s).__name__}) "
                                 "cannot be chained")
        self.optimizer, self._schedulers = optimizer, schedulers
        self._milestones = [int(m) for m in milestones]
        self.last_step = 0
        for g in optimizer.param_groups:
            g["lr"] = g["initial_lr"]
        self._restart(schedulers[0])

    @staticmethod
    def _restart(s) -> None:
        s.last_step = 0
        s._apply()

    @property
    def last_epoch(self) -> int:
        return self.last_step

    @with_float_lrs
    def step(self) -> None:
        self.last_step += 1
        i = bisect.bisect_right(self._milestones, self.last_step)
        s = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_step:
            self._restart(s)
        else:
            s.step()

    def get_last_lr(self) -> list[float]:
        return group_lrs(self.optimizer)

    def state_dict(self) -> dict:
        """torch's keys: ``last_epoch``, ``_milestones``, ``_schedulers`` (their states)."""
        return {"last_epoch": self.last_step, "_milestones": list(self._milestones),
                "_schedulers": [s.state_dict() for s in self._schedulers],
                "_last_lr": self.get_last_lr()}

    def load_state_dict(self, state: dict) -> None:
        """Reads skiff's state, torch's, or one saved before round 26 (``last_step``,
        ``schedulers``)."""
        self.last_step = int(state["last_epoch"] if "last_epoch" in state
                             else state["last_step"])
        for s, st in zip(self._schedulers, _parts(state)):
            s.load_state_dict(st)


def _parts(state: dict) -> list:
    return state["_schedulers"] if "_schedulers" in state else state["schedulers"]



class ChainedScheduler:
    """torch's ``ChainedScheduler``: ``step()`` steps every part in order. The chainable parts
    (``StepLR``, ``MultiStepLR``, ``ConstantLR``, ``LinearLR``, ``ExponentialLR``,
    ``CosineAnnealingLR``, ``MultiplicativeLR``) scale the lr the parts before them set, as
    torch's recursive forms do (the same as stepping them side by side); a part that sets the lr
    outright (``LambdaLR``, ``OneCycleLR``, ``CyclicLR``) overrides what came before it."""

    def __init__(self, schedulers, optimizer: Optimizer | None = None):
        self._schedulers = list(schedulers)
        if not self._schedulers:
            raise ValueError("ChainedScheduler expects at least one scheduler")
        self.optimizer = optimizer or self._schedulers[0].optimizer
        for i, s in enumerate(self._schedulers):
            if getattr(s, "optimizer", None) is not self.optimizer:
                raise ValueError(f"ChainedScheduler: scheduler at index {i} has a different "
                                 "optimizer than the others")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError("ChainedScheduler does not support ReduceLROnPlateau (its "
                                 "step needs the metric)")

    @property
    def last_epoch(self) -> int:
        return self._schedulers[0].last_step

    def step(self) -> None:
        for s in self._schedulers:
            s.step()

    def get_last_lr(self) -> list[float]:
        return group_lrs(self.optimizer)

    def state_dict(self) -> dict:
        """torch's keys: ``_schedulers`` (their states) and ``_last_lr``."""
        return {"_schedulers": [s.state_dict() for s in self._schedulers],
                "_last_lr": self.get_last_lr()}

    def load_state_dict(self, state: dict) -> None:
        for s, st in zip(self._schedulers, _parts(state)):
            s.load_state_dict(st)
