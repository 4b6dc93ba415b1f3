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
A callback with ``state_dict()`` and ``load_state_dict(state)`` (an EMA of the weights kept
in ``on_step_end``) has its state in each checkpoint and back on resume, as Lightning keeps
a stateful callback's, where every rank holds the whole model (one process, dp, zero1/2).
"""

from __future__ import annotations

__all__ = ["Callbacks", "OTHER_HOOKS", "BUILT_INS"]

_HOOKS = ("on_step_end", "on_validation_end", "on_train_end")

_AFTER_VALIDATION = "on_validation_end(trainer, metrics) (after each validation: every epoch " \
    "with val data)"
_AFTER_STEP = "on_step_end(trainer, metrics) (after each optimizer step)"
_BEFORE = "none: skiff has no hook before the run or an epoch (run it before train())"
# other libraries' hooks, which skiff never calls (round 37: a Lightning callback's
# on_train_epoch_end was silently never run), and what skiff calls instead
OTHER_HOOKS = {
    "on_epoch_end": ("Keras' and transformers'", _AFTER_VALIDATION),
    "on_train_epoch_end": ("Lightning's", _AFTER_VALIDATION),
    "on_validation_epoch_end": ("Lightning's", _AFTER_VALIDATION),
    "on_evaluate": ("transformers'", _AFTER_VALIDATION),
    "on_batch_end": ("Keras'", _AFTER_STEP),
    "on_train_batch_end": ("Keras' and Lightning's", _AFTER_STEP),
    "on_log": ("transformers'", _AFTER_STEP),
    "on_fit_end": ("Lightning's", "on_train_end(trainer, result)"),
    "on_train_begin": ("Keras' and transformers'", _BEFORE),
    "on_train_start": ("Lightning's", _BEFORE),
    "on_fit_start": ("Lightning's", _BEFORE),
    "on_epoch_begin": ("Keras' and transformers'", _BEFORE),
    "on_train_epoch_start": ("Lightning's", _BEFORE),
}


def _other_hooks(cb) -> str:
    """What ``cb``'s hooks of other libraries would be in skiff ('' when it has none)."""
    found = [h for h in OTHER_HOOKS if callable(getattr(cb, h, None))]
    return "; ".join(f"{h} is {OTHER_HOOKS[h][0]} hook, skiff's is {OTHER_HOOKS[h][1]}"
                     for h in found)


def _setting(cb, *names, default=None):
    """The first of ``names`` ``cb`` has (Keras', Lightning's and transformers' spellings)."""
    for name in names:
        value = getattr(cb, name, None)
        if value is not None:
            return value
    return default


def _early_stopping(cb) -> str:
    patience = _setting(cb, "patience", "early_stopping_patience", default=1)
    monitor = _setting(cb, "monitor", default="val_loss")
    if not isinstance(monitor, str):
        monitor = "val_loss"
    mode = _setting(cb, "mode", default="auto")
    mode = mode if mode in ("min", "max", "auto") else "auto"
    return (f"Trainer(model, early_stopping={int(patience)}, monitor={monitor!r}, "
            f"mode={mode!r}) with val_dataset= or val_split= (validations without "
            "improvement before it stops)")


def _model_checkpoint(cb) -> str:
    top = _setting(cb, "save_top_k", default=1)
    best = "True" if top in (1, None) else str(int(top)) if int(top) > 0 else "False"
    folder = _setting(cb, "dirpath", "filepath", default="DIR")
    folder = str(folder) if folder != "DIR" else folder
    where = repr(folder) if folder != "DIR" else "DIR"
    return (f"Trainer(model, checkpoint_dir={where}, checkpoint_every='epoch', "
            f"keep_best={best}) (the best validations' checkpoints; monitor= and mode= "
            "choose the metric)")


# other libraries' built-in callbacks and skiff's setting for each (round 44 h11: refused
# as "a callback is a function cb(metrics) or an object with on_step_end, ...", naming
# nothing of what does the same)
BUILT_INS = {
    "EarlyStopping": _early_stopping,
    "EarlyStoppingCallback": _early_stopping,
    "ModelCheckpoint": _model_checkpoint,
    "ReduceLROnPlateau": lambda cb: (
        "Trainer(model, schedule=torch.optim.lr_scheduler.ReduceLROnPlateau(opt, ...)) "
        "with the optimizer instance opt as optimizer= (stepped after each validation on "
        "monitor=)"),
    "LearningRateScheduler": lambda cb: (
        "Trainer(model, schedule=...) (a name, 'cosine', 'linear', 'constant', or a "
        "torch scheduler instance on the optimizer given as optimizer=)"),
    "LearningRateMonitor": lambda cb: "none needed: each row of result.history has its lr",
    "CSVLogger": lambda cb: (
        "none needed: result.history holds each logged step's row "
        "(pandas.DataFrame(result.history).to_csv(path))"),
    "TerminateOnNaN": lambda cb: "Trainer(model, stop_on_divergence=True)",
    "GradientAccumulationScheduler": lambda cb: "Trainer(model, grad_accum=K) (one K for "
                                                "the run)",
}


_LIBRARIES = {"pytorch_lightning": "Lightning's", "lightning": "Lightning's",
              "keras": "Keras'", "tf_keras": "Keras'", "tensorflow": "Keras'",
              "transformers": "transformers'"}


def _built_in(cb) -> str | None:
    """Skiff's setting for another library's built-in callback ``cb`` (None: not one)."""
    name = type(cb).__name__
    known = BUILT_INS.get(name)
    lib = _LIBRARIES.get(type(cb).__module__.split(".")[0])
    if known is None or (lib is None and (callable(cb) or any(hasattr(cb, h)
                                                              for h in _HOOKS))):
        return None  # a user's own class of that name, with skiff's hooks: called
    lib = lib or "another library's"
    return (f"{name} is {lib} built-in callback, which skiff does not call; skiff's: "
            f"{known(cb)}")


def _check(cb) -> None:
    """Refuse a callback skiff cannot call as written: transformers' ``TrainerCallback``
    (its ``on_step_end(args, state, control)`` failed at the first step with "missing 1
    required positional argument: 'control'"), an object with none of skiff's hooks; warn of
    other libraries' hooks beside skiff's (never called)."""
    name = type(cb).__name__
    built_in = _built_in(cb)
    if built_in is not None:
        raise TypeError(built_in)
    if any(c.__module__.split(".")[0] in ("lightning", "pytorch_lightning")
           for c in type(cb).__mro__):  # its hooks are called (trainer, pl_module)
        raise TypeError(f"{name} is a Lightning Callback, called as "
                        f"on_validation_end(trainer, pl_module); skiff calls "
                        f"on_step_end(trainer, metrics), on_validation_end(trainer, metrics) "
                        f"and on_train_end(trainer, result): write them on a plain object")
    if any(c.__module__.split(".")[0] == "transformers" for c in type(cb).__mro__):
        raise TypeError(f"{name} is a transformers TrainerCallback, called as "
                        f"on_step_end(args, state, control); skiff calls "
                        f"on_step_end(trainer, metrics), on_validation_end(trainer, metrics) "
                        f"and on_train_end(trainer, result): write them on a plain object")
    others = _other_hooks(cb)
    if not (callable(cb) or any(hasattr(cb, h) for h in _HOOKS)):
        raise TypeError(f"a callback is a function cb(metrics) or an object with "
                        f"{', '.join(_HOOKS)}; got {name}" + (f" ({others})" if others else ""))
    if others:
        import warnings

        warnings.warn(f"{name}'s other hooks are never called: {others}", UserWarning,
                      stacklevel=4)


def _host(state):
    """``state`` with each skiff Tensor as a host numpy copy (dicts, lists, tuples walked)."""
    if hasattr(state, "_data") and callable(getattr(state, "numpy", None)):
        import numpy as np

        return np.array(state.numpy())
    if isinstance(state, dict):
        return {k: _host(v) for k, v in state.items()}
    if type(state) in (list, tuple):
        return type(state)(_host(v) for v in state)
    return state


class Callbacks:
    """The Trainer's callbacks, checked when it is made (a callable or an object with a hook)."""

    def __init__(self, callbacks):
        if callbacks is None:
            callbacks = []
        elif callable(callbacks) or any(hasattr(callbacks, h) for h in (*_HOOKS, *OTHER_HOOKS)):
            callbacks = [callbacks]
        self.items = list(callbacks)
        for cb in self.items:
            _check(cb)

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

    def _stateful(self) -> dict:
        """The callbacks with ``state_dict()`` and ``load_state_dict(state)`` (Lightning's
        stateful callbacks: an EMA of the weights, a counter), by position and class name."""
        return {f"{i}:{type(cb).__qualname__}": cb for i, cb in enumerate(self.items)
                if callable(getattr(cb, "state_dict", None))
                and callable(getattr(cb, "load_state_dict", None))}

    def state_dict(self) -> dict | None:
        """What a checkpoint keeps of them (None: no stateful callback); a Tensor in a state
        is kept as its host array (it comes back an array, as ``model.state_dict()``'s do;
        it failed the run at its first checkpoint: "cannot store Tensor")."""
        return {key: _host(cb.state_dict()) for key, cb in self._stateful().items()} or None

    def load_state_dict(self, states: dict | None) -> list[str]:
        """A checkpoint's states into the callbacks of the same place and class; the keys of
        the stateful callbacks the checkpoint has no state for (they start afresh)."""
        states = states or {}
        mine = self._stateful()
        # a state kept for the one callback of a class at another place (a printer or a
        # lambda added before the EMA, or taken out) is still that callback's, as
        # Lightning's state_key (the class's name) finds it; it started afresh, round 39
        by_class: dict[str, list] = {}
        for key in states:
            if key not in mine:
                by_class.setdefault(key.split(":", 1)[-1], []).append(key)
        classes = [key.split(":", 1)[-1] for key in mine]
        fresh = []
        for key, cb in mine.items():
            name = key.split(":", 1)[-1]
            if key in states:
                cb.load_state_dict(states[key])
            elif len(by_class.get(name, ())) == 1 and classes.count(name) == 1:
                cb.load_state_dict(states[by_class[name][0]])
            else:
                fresh.append(key)
        return fresh

    def train_end(self, trainer, result) -> None:
        for cb in self.items:
            method = getattr(cb, "on_train_end", None)
            if method is not None:
                method(trainer, result)
