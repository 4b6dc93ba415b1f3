"""Round 47 (h3): ZeRO steps a user's parameter groups group by group.

ZeRO-1/2 step one flat slice of all the parameters on each rank. A user's optimizer of
groups of other betas, momentum, eps or amsgrad was refused ("groups of other settings
(betas, ...)"), and a scheduler that moves the groups by other ratios (a
``CosineAnnealingLR`` with ``eta_min``, a ``LambdaLR`` of one lambda per group) followed the
first group's ratio (the round 45 h5 scaling). ``parallel/zero_groups.py`` now steps each
group's segments of the slice with its own settings and lr; a checkpoint keeps every
group's settings and moments across zero1/zero2, dp and one process
(``parallel/relayout.py`` wrote one group). Oracle: torch 2.13's optimizer of the same
groups and scheduler in one process, float64, weights to 1e-12. ZeRO runs in one process
(``SelfComm``) through the flat-slice code; 2 ranks: ``test_same_data_r29.py``'s launch.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff.kernels.train.parallel import SelfComm  # noqa: E402
from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO  # noqa: E402

from .zero_reference import (  # noqa: E402
    assert_lrs,
    assert_weights,
    by_ndim,
    skiff_model,
    skiff_train,
    torch_run,
)

RNG = np.random.default_rng(47)
X = RNG.standard_normal((24, 4))
Y = np.tanh(X @ RNG.standard_normal((4, 2)))


def _groups(lib, named, kind):
    """Matrices in one group, vectors (biases, the norm's) in the other: the groups
    interleave in the flat vector, each with settings of its own."""
    mats, vecs = by_ndim(named)
    if kind == "adamw":
        return lib.optim.AdamW([{"params": mats, "lr": 0.05, "betas": (0.8, 0.99),
                                 "weight_decay": 0.2},
                                {"params": vecs, "lr": 0.01, "eps": 1e-6,
                                 "weight_decay": 0.0}])
    if kind == "adam":
        return lib.optim.Adam([{"params": mats, "lr": 0.03, "betas": (0.7, 0.9)},
                               {"params": vecs, "lr": 0.01, "weight_decay": 0.1,
                                "amsgrad": True}])
    return lib.optim.SGD([{"params": mats, "lr": 0.05, "momentum": 0.9, "nesterov": True},
                          {"params": vecs, "lr": 0.02, "momentum": 0.5,
                           "weight_decay": 0.01}])


def _schedule(lib, opt, which):
    if which == "cosine":  # the groups' lrs move apart: each toward eta_min
        return lib.optim.lr_scheduler.CosineAnnealingLR(opt, 5, eta_min=0.004)
    return lib.optim.lr_scheduler.LambdaLR(opt, [lambda s: 1.0 / (1 + s), lambda s: 0.9 ** s])


def _torch(kind, which, steps=6):
    return torch_run(skiff_model(1).state_dict(), X, Y,
                     lambda lib, named: _groups(lib, named, kind),
                     lambda lib, opt: _schedule(lib, opt, which), steps)


def _strategy(name):
    return {"zero1": lambda: ZeRO(1, SelfComm()), "zero2": lambda: ZeRO(2, SelfComm()),
            "dp": lambda: DataParallel(SelfComm()), "one": lambda: "auto"}[name]()


def _skiff(kind, which, layout, ck=None, stop=None, resume=False):
    m = skiff_model(1)
    trainer = skiff_train(m, _strategy(layout), _groups(skiff, list(m.named_parameters()), kind),
                          lambda o: _schedule(skiff, o, which), (X, Y), 6, ck,
                          1 if ck else None, resume, stop)
    return m, trainer


@pytest.mark.parametrize("kind,which,layout", [("adamw", "cosine", "zero2"),
                                               ("adam", "lambda", "zero1"),
                                               ("sgd", "cosine", "zero2")])
def test_zero_steps_groups_of_other_settings_as_torch(kind, which, layout):
    """Other betas and eps (AdamW), betas and amsgrad (Adam's L2 on one group), momentum
    and Nesterov (SGD): refused before; the schedules move the groups apart."""
    want, opt = _torch(kind, which)
    m, trainer = _skiff(kind, which, layout)
    assert_weights(m, want, layout)
    assert_lrs(trainer, [g["lr"] for g in opt.param_groups])


@pytest.mark.parametrize("kind,moves", [
    ("adamw", (("zero2", "zero2"), ("dp", "zero1"), ("zero1", "one"))),
    ("sgd", (("zero2", "dp"), ("one", "zero2")))])
def test_a_resume_keeps_every_groups_state_across_layouts(tmp_path, kind, moves):
    """Cut at step 3 under one layout, resumed under another to step 6: torch's 6 steps.
    Before, dp <-> ZeRO wrote one group (a dp resume failed: 'different number of
    parameter groups') and a dp checkpoint's moments were joined in the groups' order,
    not the flat vector's (the groups interleave here)."""
    want, opt = _torch(kind, "cosine")
    for i, (a, b) in enumerate(moves):
        ck = tmp_path / f"{a}-{b}-{i}"
        _skiff(kind, "cosine", a, ck, stop=3)
        m, trainer = _skiff(kind, "cosine", b, ck, resume=True)
        assert_weights(m, want, f"{a} -> {b}")
        for mine, theirs in zip(trainer.optimizer.param_groups, opt.param_groups):
            for key in ("lr", "betas", "eps", "momentum", "weight_decay", "amsgrad"):
                if key in theirs:
                    assert mine[key] == pytest.approx(theirs[key], rel=1e-12), (a, b, key)


def test_other_optimizers_of_other_groups_are_refused_naming_what_works():
    m = skiff_model(1)
    mats, vecs = by_ndim(list(m.named_parameters()))
    opt = skiff.optim.Adafactor([{"params": mats, "beta2_decay": -0.7}, {"params": vecs}],
                                lr=0.01)
    with pytest.raises(ValueError, match=r"Adafactor of 2 parameter groups of other settings "
                                         r"\(beta2_decay\).*element-wise optimizers only"):
        skiff.Trainer(m, strategy=ZeRO(1, SelfComm()), optimizer=opt, loss="mse",
                      batch_size=8).train((X, Y), steps=1)
