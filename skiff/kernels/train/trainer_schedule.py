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

__all__ = ["SCHEDULES", "WarmupLinear", "check_schedule", "check_interval", "make_schedule",
           "lightning_schedule",
           "on_plateau",
           "check_plateau", "is_scheduler", "bound_scheduler", "schedule_name",
           "other_schedule", "schedule_settings", "restore_list_settings"]

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
    """A schedule's name checked when the Trainer is made (a factory passes; a scheduler
    class whose constructor needs more than the optimizer is refused saying the factory to
    write: ``schedule=StepLR`` was "__init__() missing ... 'step_size'", round 48 h3)."""
    import inspect

    if inspect.isclass(schedule):
        from .trainer_torch_habits import class_needs

        needs = class_needs(schedule)
        if needs:
            name = theirs = schedule.__name__
            if schedule.__module__.split(".")[0] == "torch":  # torch's steps torch's optimizers
                theirs, name = f"torch's {name}", f"skiff.optim.lr_scheduler.{name}"
            raise TypeError(
                f"schedule is the class {theirs}, which the Trainer would call with the "
                f"optimizer alone; it needs {', '.join(needs)} too: pass a factory, "
                f"schedule=lambda opt: {name}(opt, {', '.join(f'{n}=...' for n in needs)})")
        return
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


def lightning_schedule(schedule, interval: str, monitor: str = "val_loss"):
    """``(schedule, interval)`` of Lightning's scheduler config, ``{"scheduler": s,
    "interval": "epoch" | "step", "frequency": 1}`` (what ``configure_optimizers`` returns
    beside the optimizer; its interval defaults to ``"epoch"``), or both as given (round 45
    h5: "unknown schedule {...}")."""
    if not isinstance(schedule, dict) or "scheduler" not in schedule:
        return schedule, interval
    other = sorted(set(schedule) - {"scheduler", "interval", "frequency", "monitor", "name",
                                    "strict"})
    frequency = schedule.get("frequency", 1)
    if other or frequency != 1:
        said = f"keys {other}" if other else f"frequency {frequency!r}"
        raise ValueError(f"schedule is Lightning's scheduler config with {said}, which skiff "
                         "does not follow: give {'scheduler': s, 'interval': 'epoch' or "
                         "'step'} (frequency 1), or schedule=s with schedule_interval=")
    if schedule.get("monitor", monitor) != monitor:  # a ReduceLROnPlateau's metric
        raise ValueError(f"schedule's config monitors {schedule['monitor']!r} and the "
                         f"Trainer's monitor is {monitor!r}: give Trainer(monitor="
                         f"{schedule['monitor']!r}) (a ReduceLROnPlateau steps on it)")
    return schedule["scheduler"], schedule.get("interval", "epoch")


def check_interval(interval, schedule) -> str:
    """``schedule_interval`` checked: ``"step"`` or ``"epoch"`` (round 45 h5); ``"epoch"``
    steps a scheduler of one's own, not a named schedule (planned in optimizer steps)."""
    if interval not in ("step", "epoch"):
        raise ValueError(f"schedule_interval is 'step' (after every optimizer step) or 'epoch' "
                         f"(at each epoch's end, as a torch loop's scheduler.step() after "
                         f"its epoch), got {interval!r}")
    if interval == "epoch" and isinstance(schedule, str):
        raise ValueError(f"schedule_interval='epoch' steps a scheduler of your own once an "
                         f"epoch (schedule=lambda opt: skiff.optim.lr_scheduler.StepLR(opt, "
                         f"30)); schedule={schedule!r} is planned in optimizer steps "
                         "(warmup_steps, the run's steps): leave schedule_interval='step'")
    return interval


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
                         "validation (each epoch's end, or every eval_every steps): give "
                         "val_dataset= or val_split=")
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


# a scheduler's state entries that are its progress, not its settings (torch's names)
_PROGRESS = {"base_lrs", "last_epoch", "last_step", "best", "num_bad_epochs",
             "cooldown_counter", "mode_worse"}


def schedule_name(scheduler) -> str:
    """What a checkpoint records of the run's schedule: its class (``"constant"``: none)."""
    return "constant" if scheduler is None else type(scheduler).__name__


def _settings(state) -> dict:
    """A scheduler state's plain settings (``step_size``, ``gamma``, ``T_max``, ...)."""
    out = {}
    for key, value in (state or {}).items() if isinstance(state, dict) else ():
        if key.startswith("_") or key in _PROGRESS:
            continue
        if isinstance(value, dict) and all(isinstance(k, (int, str)) for k in value) \
                and all(isinstance(n, int) for n in value.values()):  # milestones' Counter
            value = sorted(int(k) for k, n in value.items() for _ in range(n))
        if hasattr(value, "tolist") and getattr(value, "ndim", 0) == 1:  # a stored list
            value = value.tolist()
        if isinstance(value, (list, tuple)) and all(
                isinstance(v, (int, float, str)) for v in value):
            value = list(value)
        elif hasattr(value, "item") and getattr(value, "ndim", 1) == 0:  # a stored scalar
            value = value.item()
        elif not isinstance(value, (int, float, str)):
            continue
        out[key] = value
    return out


def _numbers(value) -> list | None:
    """A stored list setting as a list of numbers: a milestones' Counter (``{2: 1, 5: 1}``,
    torch's ``MultiStepLR`` state) or a list of numbers; None for anything else."""
    if isinstance(value, dict) and value and all(isinstance(k, int) for k in value) \
            and all(isinstance(n, int) for n in value.values()):
        return sorted(int(k) for k, n in value.items() for _ in range(n))
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) == 1:
        value = value.tolist()
    if isinstance(value, (list, tuple)) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return list(value)
    return None


def restore_list_settings(scheduler, state) -> None:
    """The list settings of a checkpoint's scheduler state (a ``MultiStepLR``'s milestones)
    put back into ``scheduler``, as torch's ``load_state_dict`` (``__dict__.update``) does:
    skiff's restores the scalar settings only, so a resume with ``MultiStepLR(opt, [2, 6])``
    of a ``[2, 5]`` run went on with ``[2, 6]`` where torch goes on with ``[2, 5]``
    (round 40, h6). A setting this scheduler does not have as a list of numbers is left."""
    if scheduler is None or not isinstance(state, dict):
        return
    for key, value in state.items():
        if key.startswith("_") or key in _PROGRESS:
            continue
        here = scheduler.__dict__.get(key)
        saved = _numbers(value)
        if saved is None or not isinstance(here, list) or _numbers(here) is None:
            continue
        setattr(scheduler, key, saved)


def _described(name: str, settings: dict) -> str:
    if name == "constant":
        return "'constant' (no scheduler)"
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in settings.items())})"


def schedule_settings(scheduler) -> dict:
    """A scheduler's plain settings now ({} for none)."""
    return {} if scheduler is None else _settings(scheduler.state_dict())


def other_schedule(saved_name, saved_state, scheduler, here: dict, own: bool,
                   step) -> str | None:
    """The line a resume says when this run's schedule is not the checkpoint's: another
    class, or the same class with other settings (``StepLR`` step_size/gamma, a cosine's
    ``T_max``); None when it is the same, or the checkpoint (before round 39) has no record.
    ``here``: the scheduler's settings as this call made it; ``scheduler``: after the
    checkpoint's state was loaded into it (which settings go on).

    torch's ``load_state_dict`` of a scheduler is ``__dict__.update(state)``: a StepLR's
    state loads into a ``CosineAnnealingLR`` without an error (the cosine goes on at the
    StepLR's step count, with its own ``T_max``), and into a ``StepLR(opt, 5, 0.9)`` it
    brings back ``step_size=3, gamma=0.5``. skiff's does the same for numbers (and, since
    round 40, the Trainer puts a MultiStepLR's milestones back: ``restore_list_settings``),
    and the resume went on without a word.
    Skiff's own "cosine"/"linear" with another warm-up or total is replanned
    (``_replan_schedule``), not said here."""
    if not saved_name:
        return None
    here_name = schedule_name(scheduler)
    old = _settings(saved_state)
    at = f" at step {int(step)}" if step is not None else ""
    if saved_name != here_name:
        ours, theirs = _described(here_name, here), _described(saved_name, old)
        if scheduler is None:
            then = "the lr stays the one the checkpoint's optimizer had"
        elif saved_state is None:
            then = f"the {here_name} starts from its first step"
        else:
            then = (f"the {here_name} goes on from the {saved_name}'s step count (torch's "
                    "load_state_dict takes another class's state too, without an error)")
        return (f"resumed with schedule {ours} and the checkpoint's run had {theirs}{at}: "
                f"{then}; the lrs from here are neither run's")
    if own or scheduler is None:
        return None
    differ = [k for k in here if k in old and here[k] != old[k]]
    if not differ:
        return None
    now = schedule_settings(scheduler)
    ours = ", ".join(f"{k}={here[k]!r}" for k in differ)
    theirs = ", ".join(f"{k}={old[k]!r}" for k in differ)
    kept = [k for k in differ if now.get(k) == old[k]]
    mine = [k for k in differ if k not in kept]
    goes = []
    if kept:
        goes.append(f"the checkpoint's {', '.join(kept)} (its state restores "
                    f"{'it' if len(kept) == 1 else 'them'}, as torch's load_state_dict does)")
    if mine:
        goes.append(f"this call's {', '.join(mine)} (torch's load_state_dict would restore "
                    "the checkpoint's)")
    return (f"resumed with schedule {here_name}({ours}) and the checkpoint's run had "
            f"{here_name}({theirs}){at}: it goes on with {' and '.join(goes)}; to train with "
            "this call's schedule, start a run in another checkpoint_dir from the "
            "checkpoint's weights")
