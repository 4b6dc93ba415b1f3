"""``Trainer(callbacks=[...])``: user code at step ends, validations and the run's end, and a
way to stop the run from it.

A callback is a function ``cb(metrics)``, called after every optimizer step with that step's
``{"step", "loss", "lr", "epoch", "grad_norm"}`` (the loss reduced over ranks), or an object
with any of ``on_step_end(trainer, metrics)``, ``on_validation_end(trainer, metrics)`` (the
validation's ``{"step", "epoch", "val_loss", ...}``) and ``on_train_end(trainer, result)``.
Returning ``True`` from a step or validation call, or setting ``trainer.should_stop = True``
(Lightning's name), ends the run at that step as a cancel does: the final checkpoint is
written and ``result.stopped`` says "stopped by a callback". Every rank calls its callbacks;
their decision must be the same on all (a loss-based rule is: the loss is global).
"""

from __future__ import annotations

__all__ = ["Callbacks"]

_HOOKS = ("on_step_end", "on_validation_end", "on_train_end")


class Callbacks:
    """The Trainer's callbacks, checked when it is made (a callable or an object with a hook)."""

    def __init__(self, callbacks):
        if callbacks is None:
            callbacks = []
        elif callable(callbacks) or any(hasattr(callbacks, h) for h in _HOOKS):
            callbacks = [callbacks]
        self.items = list(callbacks)
        for cb in self.items:
            if not (callable(cb) or any(hasattr(cb, h) for h in _HOOKS)):
                raise TypeError(f"a callback is a function cb(metrics) or an object with "
                                f"{', '.join(_HOOKS)}; got {type(cb).__name__}")

    def __bool__(self) -> bool:
        return bool(self.items)

    def _call(self, hook: str, trainer, values) -> bool:
        stop = False
        for cb in self.items:
            method = getattr(cb, hook, None)
            if method is not None:
                stop = method(trainer, values) is True or stop
            elif hook == "on_step_end" and callable(cb):
                stop = cb(values) is True or stop
        return stop or bool(getattr(trainer, "should_stop", False))

    def step_end(self, trainer, metrics: dict) -> bool:
        """Whether a callback asked to stop after this step."""
        return self._call("on_step_end", trainer, dict(metrics))

    def validation_end(self, trainer, metrics: dict) -> bool:
        return self._call("on_validation_end", trainer, dict(metrics))

    def train_end(self, trainer, result) -> None:
        for cb in self.items:
            method = getattr(cb, "on_train_end", None)
            if method is not None:
                method(trainer, result)
