"""Round 30: a torch user's schedule, ``schedule=lambda opt:
torch.optim.lr_scheduler.StepLR(opt, ...)``, failed with torch's own "SGD is not an
Optimizer" (the Trainer's optimizer is skiff's). The message now names skiff's scheduler of
the same name; the advice, followed, gives the rates torch's scheduler gives a torch
optimizer (the oracle), step by step."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("f4")
    return x, (x @ np.array([1.0, -2.0, 0.5], "f4"))[:, None]


def _torch_rates(make, steps):
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    sched = make(torch.optim.lr_scheduler, opt)
    rates = []
    for _ in range(steps):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return rates


CASES = {
    "StepLR": lambda mod, opt: mod.StepLR(opt, step_size=3, gamma=0.5),
    "OneCycleLR": lambda mod, opt: mod.OneCycleLR(opt, max_lr=0.5, total_steps=12),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_torch_scheduler_is_refused_naming_skiffs_and_skiffs_gives_torchs_rates(name):
    x, y = _data()
    make = CASES[name]
    skiff.seed(0)
    trainer = skiff.Trainer(nn.Sequential(nn.Linear(3, 1)), optimizer="sgd", lr=0.1,
                            batch_size=16, schedule=lambda opt: make(torch.optim.lr_scheduler,
                                                                     opt))
    with pytest.raises(TypeError, match=f"skiff.optim.lr_scheduler.{name} "):
        trainer.train((x, y), epochs=3)
    skiff.seed(0)
    trainer = skiff.Trainer(nn.Sequential(nn.Linear(3, 1)), optimizer="sgd", lr=0.1,
                            batch_size=16, schedule=lambda opt: make(skiff.optim.lr_scheduler,
                                                                     opt))
    result = trainer.train((x, y), epochs=3)
    np.testing.assert_allclose([h["lr"] for h in result.history], _torch_rates(make, 12),
                               rtol=1e-12)
