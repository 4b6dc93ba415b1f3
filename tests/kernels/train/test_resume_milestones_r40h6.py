"""Round 40 (h6): a resume with ``MultiStepLR`` of other milestones.

torch's ``LRScheduler.load_state_dict`` is ``__dict__.update(state)``: a ``MultiStepLR(opt,
[3, 7])`` resumed from a ``[3, 5]`` run's state goes on with ``[3, 5]`` (the Counter in the
state). skiff's Trainer went on with this call's ``[3, 7]`` (its scheduler's
``load_state_dict`` restores scalar settings only), so the lr of steps 6-7 was not torch's.
The oracle: torch's SGD and MultiStepLR through the same steps, the state loaded into
``MultiStepLR(opt, [3, 7])`` halfway."""

from __future__ import annotations

import warnings

import numpy as np
import torch

import skiff
from skiff import nn
from skiff.optim import lr_scheduler as L

rng = np.random.default_rng(1)
X = rng.normal(size=(32, 3)).astype("f4")
Y = X @ np.array([[1.0], [-1.0], [0.5]], "f4")
FIRST, ALL = 4, 9


def _run(folder, steps, milestones, resume=False):
    skiff.seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 1), optimizer="sgd", lr=0.1, batch_size=8,
                            loss="mse", clip=None, checkpoint_dir=folder, resume=resume,
                            schedule=lambda opt: L.MultiStepLR(opt, milestones, 0.5))
    result = trainer.train((X, Y), steps=steps)
    return trainer, result


def _torch_lrs():
    """The lr of each step of torch's loop: [3, 5] for FIRST steps, then its state loaded
    into a MultiStepLR(opt, [3, 7]) on a new SGD (the resumed process)."""
    p = [torch.nn.Parameter(torch.zeros(1))]
    opt = torch.optim.SGD(p, lr=0.1)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [3, 5], 0.5)
    lrs = []
    for _ in range(FIRST):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    opt2 = torch.optim.SGD(p, lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    sched2 = torch.optim.lr_scheduler.MultiStepLR(opt2, [3, 7], 0.5)
    sched2.load_state_dict(sched.state_dict())
    for _ in range(ALL - FIRST):
        lrs.append(opt2.param_groups[0]["lr"])
        opt2.step()
        sched2.step()
    return lrs, sorted(sched2.milestones)


def test_resumed_multistep_goes_on_with_the_checkpoints_milestones_as_torch(tmp_path):
    _, first = _run(tmp_path, FIRST, [3, 5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the other-settings line (round 39)
        trainer, result = _run(tmp_path, ALL, [3, 7], resume=True)
    lrs, milestones = _torch_lrs()
    assert milestones == [3, 5]
    assert list(trainer.scheduler.milestones) == milestones
    got = [row["lr"] for row in result.history]
    assert len(got) == ALL
    np.testing.assert_allclose(got, lrs, rtol=1e-7)
    # the uninterrupted [3, 5] run's lrs are the same: the resume is the run's own
    _, whole = _run(tmp_path / "whole", ALL, [3, 5])
    np.testing.assert_allclose([row["lr"] for row in whole.history], lrs, rtol=1e-7)
