"""The schedules ``Trainer(schedule=NAME)`` names: ``"cosine"`` (linear warm-up, then a
cosine to ``min_lr_ratio * lr``), ``"linear"`` (the same warm-up, then a straight line to
``min_lr_ratio * lr``: transformers' default ``lr_scheduler_type="linear"`` with
``min_lr_ratio=0``) and ``"constant"``; other libraries' names are refused naming skiff's.

The warm-up is skiff's ``WarmupCosine``'s: step ``s`` < ``warmup`` has ``lr * (s + 1) /
warmup`` (transformers' has ``lr * s / warmup``: its first step takes lr 0); after it
both schedules equal transformers' ``get_{cosine,linear}_schedule_with_warmup`` (min_lr_ratio
0) step for step.
"""

from __future__ import annotations

from .core.optim import WarmupCosine

__all__ = ["SCHEDULES", "WarmupLinear", "check_schedule", "make_schedule", "on_plateau",
           "check_plateau", "is_scheduler", "bound_scheduler"]

SCHEDULES = ("cosine", "linear", "constant")

# other libraries' names (transformers' lr_scheduler_type, habits) -> what skiff calls it
_THEIRS = {"cosine_with_warmup": "cosine", "warmup_cosine": "cosine", "cosine_warmup": "cosine",
           "cosine_with_min_lr": "cosine (min_lr_ratio= sets the floor)",
           "cosineannealing": "cosine", "linear_with_warmup": "linear",
           "warmup_linear": "linear", "linear_warmup": "linear", "none": "constant",
           "constant_with_warmup": "a factory (constant has no warm-up): schedule=lambda "
                                   "opt: skiff.optim.lr_scheduler.LinearLR(opt, 0.1, 1.0, "
                                   "total_iters=WARMUP)"}


class WarmupLinear(WarmupCosine):
    """Linear warm-up over ``warmup_steps`` (as :class:`WarmupCosine`), then a straight line
    from the base lr to ``base * min_lr_ratio`` at ``total_steps`` (held there after)."""

    def fall(self, progress: float) -> float:
        return 1.0 - progress


def check_schedule(schedule) -> None:
    """A schedule's name checked when the Trainer is made (a factory passes)."""
    if callable(schedule) or is_scheduler(schedule) or schedule in SCHEDULES:
        return
    key = str(schedule).lower().replace("-", "_").replace(" ", "_")
    hint = f" (did you mean {_THEIRS[key]}?)" if key in _THEIRS else ""
    if not hint and key in SCHEDULES:
        hint = f" (did you mean {key!r}?)"
    raise ValueError(f"unknown schedule {schedule!r}{hint}: choose from "
                     f"{', '.join(map(repr, SCHEDULES))} (cosine and linear warm up first: "
                     "warmup_steps=, by default a tenth of the steps up to 100), or pass a "
                     "factory make(optimizer) -> lr scheduler")


def make_schedule(name: str, optimizer, warmup: int, total: int, min_lr_ratio: float):
    kind = WarmupLinear if name == "linear" else WarmupCosine
    return kind(optimizer, warmup_steps=warmup, total_steps=total, min_lr_ratio=min_lr_ratio)


def on_plateau(scheduler) -> bool:
    """Whether ``scheduler`` (a ``schedule=make(optimizer)``'s) steps on a validation metric
    (``ReduceLROnPlateau``): after each validation, not after each optimizer step."""
    return type(scheduler).__name__ == "ReduceLROnPlateau"


def check_plateau(scheduler, val_dataset, monitor: str, mode: str) -> None:
    """A ``ReduceLROnPlateau`` needs validation data, and watches ``monitor`` (the Trainer's,
    ``"val_loss"`` by default, which early stopping watches too) in its direction."""
    if val_dataset is None:
        raise ValueError("schedule=ReduceLROnPlateau steps on a validation metric after each "
                         "validation (every epoch's end): give val_dataset= or val_split=")
    if scheduler.mode != mode:
        better = "smaller" if mode == "min" else "larger"
        raise ValueError(f"ReduceLROnPlateau(mode={scheduler.mode!r}) would step on "
                         f"{monitor}, where {better} is better: give mode={mode!r}, or "
                         f"Trainer(monitor=...) the metric it should watch")


def is_scheduler(schedule) -> bool:
    """Whether ``schedule`` is a scheduler already made on an optimizer (a torch or Lightning
    user's ``StepLR(opt, ...)`` beside ``optimizer=opt``), not a name or a factory."""
    return not callable(schedule) and all(
        callable(getattr(schedule, m, None)) for m in ("step", "state_dict", "load_state_dict")
    ) and getattr(schedule, "optimizer", None) is not None


def bound_scheduler(schedule, optimizer):
    """The scheduler instance ``schedule`` when it drives ``optimizer`` (the Trainer's, the
    instance given as ``optimizer=``); else refused saying how to give it."""
    if schedule.optimizer is optimizer:
        return schedule
    name = type(schedule).__name__
    raise ValueError(f"schedule is a {name} made on an optimizer the Trainer does not step "
                     f"(give that optimizer as optimizer=, in one precision on one device or "
                     f"dp; the Trainer builds its own otherwise): pass a factory, "
                     f"schedule=lambda opt: {name}(opt, ...)")
