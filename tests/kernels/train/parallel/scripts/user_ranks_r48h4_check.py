"""Round 48 (h4): a user's runs of ``Trainer(model, strategy="auto")`` on 2 ranks, one launch.

- ``cw``: a classifier with class weights, ``grad_accum=2``, 37 rows at batch 8 (the epoch's
  last batch of 5 rows falls 3 / 2 on the ranks, its window one micro-batch), a validation
  set, early stopping, then ``evaluate(per_class=True)``;
- ``cut:KIND``: a user's NAdam or ASGD of two parameter groups of other settings under a
  ``CosineAnnealingLR`` with ``eta_min`` (auto: zero2), cut after step 3 with a sharded
  checkpoint in ``DIR/two-KIND`` (the test resumes it in one process);
- ``resumed:KIND``: ``DIR/one-KIND`` (the test's one-process run cut at step 3) resumed to
  step 6 on the 2 ranks;
- ``twice:KIND``: the same optimizer, no schedule, ``train(steps=3)`` called twice.

usage: mpiexec -n 2 python user_ranks_r48h4_check.py DIR; prints ``RESULT {...}`` per rank.
The test imports the data, models and runs from here (no torch in the ranks)."""

import json
import sys
from pathlib import Path

import numpy as np

import skiff
from skiff import nn

# the classifier
N, BATCH, ACCUM, EPOCHS, SEED, LR = 37, 8, 2, 4, 3, 0.1
CLASS_WEIGHT = (1.0, 2.0, 4.0)
# the groups' run (as round 47's, 24 rows in order at batch 8)
STEPS, CUT = 6, 3
GROUPS = {
    "NAdam": ({"betas": (0.8, 0.99), "momentum_decay": 0.01},
              {"lr": 0.005, "decoupled_weight_decay": True, "weight_decay": 0.1},
              {"lr": 0.02}),
    "ASGD": ({"lambd": 1e-2, "t0": 1}, {"lr": 0.005, "alpha": 0.5}, {"lr": 0.02}),
}


def class_data():
    """(train, validation): 3 classes of unequal counts."""
    rng = np.random.default_rng(48)
    x = rng.standard_normal((N + 15, 5))
    y = (x[:, 0] + 0.5 * x[:, 1] > 0.3).astype(np.int64) + (x[:, 2] > 1).astype(np.int64)
    return (x[:N], y[:N]), (x[N:], y[N:])


def classifier():
    with skiff.random.fork_rng():
        skiff.manual_seed(7)
        return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3)).double()


def state(m) -> dict:
    return {k: np.asarray(v).tolist() for k, v in m.state_dict().items()}


def run_classifier(strategy="auto") -> dict:
    train, val = class_data()
    m = classifier()
    tr = skiff.Trainer(m, strategy=strategy, optimizer="sgd", lr=LR, schedule="constant",
                       clip=None, loss="cross_entropy", batch_size=BATCH, grad_accum=ACCUM,
                       seed=SEED, class_weight=list(CLASS_WEIGHT), early_stopping=1)
    result = tr.train(train, epochs=EPOCHS, val_dataset=val)
    return {"losses": result.losses, "strategy": tr.plan.get("strategy"),
            "val": [{k: v for k, v in row.items() if k in ("step", "val_loss", "val_accuracy")}
                    for row in result.val_history],
            "best_step": result.best_step, "w": state(m),
            "evaluate": tr.evaluate(val, per_class=True)}


def group_data():
    rng = np.random.default_rng(479)
    x = rng.standard_normal((24, 4))
    return x, np.tanh(x @ rng.standard_normal((4, 2)))


def group_net():
    # no LayerNorm (round 47's net has one): its fused kernel imports numba in each rank,
    # ~0.7 CPU s of the launch's ~3
    with skiff.random.fork_rng():
        skiff.manual_seed(5)
        return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()


def groups_of(lib, kind, named):
    """The first layer in one group, the head in the other."""
    first, rest, default = GROUPS[kind]
    return getattr(lib.optim, kind)(
        [{"params": [p for n, p in named if n.startswith("0.")], **first},
         {"params": [p for n, p in named if not n.startswith("0.")], **rest}], **default)


def schedule(lib, opt):
    return lib.optim.lr_scheduler.CosineAnnealingLR(opt, 5, eta_min=0.001)


def run_groups(kind, folder, resume=False, strategy="auto") -> dict:
    """``STEPS`` steps, cut after ``CUT`` unless resuming, checkpoints in ``folder``."""
    m = group_net()
    tr = skiff.Trainer(m, strategy=strategy, optimizer=groups_of(skiff, kind,
                                                                 list(m.named_parameters())),
                       schedule=lambda o: schedule(skiff, o), loss="mse", batch_size=8,
                       shuffle=False, clip=None, checkpoint_dir=folder, checkpoint_every=CUT,
                       resume=resume,
                       callbacks=None if resume else [lambda r: r["step"] >= CUT])
    result = tr.train(group_data(), steps=STEPS)
    return {"losses": result.losses, "strategy": tr.plan.get("strategy"), "w": state(m),
            "lrs": [g["lr"] for g in tr.optimizer.param_groups]}


def run_twice(kind, strategy="auto") -> dict:
    """``train(steps=3)`` called twice on one Trainer, no schedule: one optimizer's 6 steps."""
    m = group_net()
    tr = skiff.Trainer(m, strategy=strategy, optimizer=groups_of(skiff, kind,
                                                                 list(m.named_parameters())),
                       schedule="constant", loss="mse", batch_size=8, shuffle=False, clip=None)
    first = tr.train(group_data(), steps=CUT).losses
    return {"losses": first + tr.train(group_data(), steps=STEPS - CUT).losses,
            "strategy": tr.plan.get("strategy"), "w": state(m),
            "lrs": [g["lr"] for g in tr.optimizer.param_groups]}


if __name__ == "__main__":
    import abort_on_error  # noqa: F401

    from skiff.kernels.train.parallel import world

    folder = Path(sys.argv[1])
    out = {"rank": world().rank, "cw": run_classifier()}
    for kind in GROUPS:
        out[f"cut:{kind}"] = run_groups(kind, folder / f"two-{kind}")
        out[f"resumed:{kind}"] = run_groups(kind, folder / f"one-{kind}", resume=True)
        out[f"twice:{kind}"] = run_twice(kind)
    print("RESULT " + json.dumps(out), flush=True)
