"""``Trainer(schedule=make)``: a torch-style lr scheduler of the user's (``make(optimizer)``),
stepped after every optimizer step as a torch loop steps it, and carried across a resume.
The oracles: torch 2.13's same scheduler on its own optimizer (the lrs per step), and the
uninterrupted run (a run stopped at step 7 and resumed has the same lrs and losses).

Found by a user: ``schedule=`` took only "cosine" or "constant"; a StepLR / OneCycleLR /
MultiStepLR from a torch recipe had no way in.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.nn import Linear, ReLU, Sequential
from tests.helpers.stop_at import StopAtStep

STEPS = 16
SCHEDULES = {
    "StepLR": lambda m, opt: m.StepLR(opt, step_size=5, gamma=0.5),
    "MultiStepLR": lambda m, opt: m.MultiStepLR(opt, milestones=[3, 9], gamma=0.1),
    "OneCycleLR": lambda m, opt: m.OneCycleLR(opt, max_lr=0.05, total_steps=STEPS),
    "CosineAnnealingLR": lambda m, opt: m.CosineAnnealingLR(opt, T_max=10, eta_min=1e-4),
}


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    return x, (x[:, :2].sum(1) > 0).astype(np.int64)


def _run(name, folder=None, stop=None, resume=False):
    skiff.seed(0)
    model = Sequential(Linear(8, 16), ReLU(), Linear(16, 2))
    make = SCHEDULES[name]
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.01, batch_size=8, shuffle=False,
                            clip=None, checkpoint_dir=folder, resume=resume,
                            reporter=StopAtStep(stop),
                            schedule=lambda opt: make(skiff.optim.lr_scheduler, opt))
    result = trainer.train(_data(), steps=STEPS)
    return [r["lr"] for r in result.history], [r["loss"] for r in result.history]


def _torch_lrs(name):
    opt = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.01, momentum=0.9)
    scheduler = SCHEDULES[name](torch.optim.lr_scheduler, opt)
    lrs = []
    for _ in range(STEPS):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step()
    return lrs


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_user_scheduler_steps_as_torch_and_resumes(name, tmp_path):
    lrs, losses = _run(name)
    np.testing.assert_allclose(lrs, _torch_lrs(name), rtol=1e-6)
    _run(name, tmp_path, stop=7)
    lrs2, losses2 = _run(name, tmp_path, resume=True)
    assert lrs2 == lrs and losses2 == losses


def test_a_factory_that_makes_no_scheduler_or_a_plateau_one_says_what_to_do():
    model = Sequential(Linear(8, 2))
    with pytest.raises(TypeError, match="must return an lr scheduler"):
        skiff.Trainer(model, schedule=lambda opt: 0.1).train(_data(), steps=1)
    with pytest.raises(ValueError, match="give val_dataset= or val_split="):
        skiff.Trainer(model, schedule=skiff.optim.lr_scheduler.ReduceLROnPlateau).train(
            _data(), steps=1)
