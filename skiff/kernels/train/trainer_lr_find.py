"""``trainer.lr_find(data)``: the learning-rate range test (Lightning's ``Tuner.lr_find``,
fastai's ``lr_find``), run on the Trainer's own settings and put back after.

``steps`` optimizer steps with the learning rate growing geometrically from ``min_lr`` to
``max_lr`` (Lightning's "exponential" mode: step ``s`` at ``min_lr * (max_lr / min_lr) **
(s / (steps - 1))``); the loss is smoothed as Lightning smooths it (an exponential average,
``beta`` 0.98, bias-corrected) and the test stops once the smoothed loss passes ``4 x`` its
best (or the loss is not finite). The suggestion is Lightning's: the lr where the smoothed
loss falls fastest (the least ``np.gradient``, leaving out the first 10 points and the
last). The model's weights are put back, and the Trainer's optimizer and schedule are made
afresh by its next ``train``, so the test changes nothing.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["lr_find", "suggestion"]

BETA, STOP_FACTOR, SKIP_BEGIN, SKIP_END = 0.98, 4.0, 10, 1


def suggestion(lrs, smoothed) -> float | None:
    """Lightning's pick: the lr of the steepest fall of the smoothed loss (None: too few
    points to say)."""
    losses = np.asarray(smoothed[SKIP_BEGIN:-SKIP_END], np.float64)
    if len(losses) < 2:
        return None
    return float(lrs[SKIP_BEGIN + int(np.argmin(np.gradient(losses)))])


def lr_find(trainer, data, *, min_lr: float = 1e-8, max_lr: float = 1.0,
            steps: int = 100) -> dict:
    """``{"lr": [...], "loss": [...] (smoothed), "raw_loss": [...], "suggestion": lr}`` of a
    range test on ``data`` with ``trainer``'s model and settings. On several ranks (a script
    under ``mpiexec``, a ``--np 2`` job) every rank calls it, as it calls ``train``: rank 0
    runs the test alone, on its model and data at the Trainer's batch size (the global
    batch a dp step averages over), and every rank gets its result (round 37: it was refused,
    "call it before the ranks start"); the other ranks' models are not touched."""
    size = getattr(trainer.reporter, "world_size", 1)
    if size <= 1:
        return _lr_find(trainer, data, min_lr=min_lr, max_lr=max_lr, steps=steps)
    from .parallel.world import world

    comm = world()
    out: dict = {}
    if comm.rank == 0:
        try:
            out = _lr_find(trainer, data, min_lr=min_lr, max_lr=max_lr, steps=steps)
        except Exception as exc:  # said to the peers, which would wait for ever
            comm.bcast_object({"error": f"{type(exc).__name__}: {exc}"})
            raise
    out = comm.bcast_object(out)
    if "error" in out:
        raise RuntimeError(f"lr_find failed on rank 0, which runs the range test: "
                           f"{out['error']}")
    return out


def _lr_find(trainer, data, *, min_lr: float, max_lr: float, steps: int) -> dict:
    """The range test in this process."""
    from .core.lr_scheduler import LambdaLR

    if not (0 < min_lr < max_lr and math.isfinite(max_lr)):
        raise ValueError(f"lr_find needs 0 < min_lr < max_lr, got {min_lr!r}, {max_lr!r}")
    if not isinstance(steps, int) or steps < 2:
        raise ValueError(f"lr_find needs steps >= 2, got {steps!r}")
    spec = trainer.optimizer_spec
    if spec is not None and not isinstance(spec, str) and hasattr(spec, "param_groups"):
        raise ValueError("lr_find makes its own optimizer: give the Trainer's optimizer as a "
                         "name ('adamw', 'sgd') or a factory make(params), not an instance "
                         "(whose state the test would change)")
    ratio = max_lr / min_lr
    lrs, raw, smoothed = [], [], []
    state = {"avg": 0.0, "best": math.inf}

    def watch(metrics):  # each step: Lightning's smoothed loss, and its stop
        loss = float(metrics["loss"])
        lrs.append(float(metrics["lr"]))
        raw.append(loss)
        state["avg"] = BETA * state["avg"] + (1 - BETA) * loss
        value = state["avg"] / (1 - BETA ** len(raw))
        smoothed.append(value)
        state["best"] = min(state["best"], value)
        return not math.isfinite(value) or (len(raw) > 1 and
                                            value > STOP_FACTOR * state["best"])

    weights = {k: np.array(v, copy=True) for k, v in trainer.model.state_dict().items()}
    was_training = getattr(trainer.model, "training", True)
    ranged = type(trainer)(  # the Trainer's own class: no import of trainer.py here
        trainer.model, strategy="single", optimizer=spec, lr=min_lr,
        batch_size=trainer.batch_size, loss=trainer.loss_spec, device=trainer.device,
        grad_accum=trainer.grad_accum, clip=trainer.clip if trainer.clip_value is None
        else trainer.clip_value, clip_by="norm" if trainer.clip_value is None else "value",
        schedule=lambda opt: LambdaLR(opt, lambda s: ratio ** (min(s, steps - 1) /
                                                               (steps - 1))),
        # the built-in optimizer's settings (a user's optimizer decays as it was built:
        # said once, by the user's Trainer)
        weight_decay=trainer.weight_decay if spec is None or isinstance(spec, str) else None,
        decay_bias_norm=getattr(trainer, "decay_bias_norm", True)
        if spec is None or isinstance(spec, str) else True, seed=trainer.seed,
        # left as the user left it: a stream in its order (round 44 h11)
        shuffle=trainer.shuffle if trainer.__dict__.get("_shuffle_given", True) else None,
        drop_last=trainer.drop_last, precision=trainer.precision, callbacks=[watch],
        class_weight=trainer.class_weight, cuda_graph=False)
    try:
        ranged.train(data, steps=steps)
    except FloatingPointError:  # TrainingDiverged: a loss that is not finite
        pass  # the points before it stand
    finally:
        trainer.model.load_state_dict(weights)
        trainer.model.train(was_training)
    return {"lr": lrs, "loss": smoothed, "raw_loss": raw,
            "suggestion": suggestion(lrs, smoothed)}
