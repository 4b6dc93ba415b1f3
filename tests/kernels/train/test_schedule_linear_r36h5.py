"""Round 36 (h5): ``Trainer(schedule="linear")``, transformers' default schedule.

A transformers user's ``lr_scheduler_type="linear"`` was pointed at ``schedule=``, which then
refused ``"linear"`` ("choose from cosine, constant"), as it refused "cosine_with_warmup" and
"warmup_cosine" without saying that "cosine" is warm-up then cosine. Now ``"linear"`` warms
up as ``"cosine"`` does and then falls in a straight line to ``min_lr_ratio * lr``, and other
libraries' names say skiff's. The oracle: transformers' ``get_linear_schedule_with_warmup``
and ``get_cosine_schedule_with_warmup`` on a torch optimizer (min_lr_ratio 0): equal after
the warm-up; in it skiff's step ``s`` takes transformers' lr of step ``s + 1`` (skiff's
warm-up does not begin with a step at lr 0)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import get_cosine_schedule_with_warmup, get_linear_schedule_with_warmup

import skiff
from skiff import nn

STEPS, WARMUP, LR = 20, 3, 0.1


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 3)).astype("f4")
    return x, (x @ np.array([1.0, -2.0, 0.5], "f4"))[:, None]


def _lrs(schedule, **kw):
    skiff.seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 1), optimizer="sgd", lr=LR, batch_size=4,
                            schedule=schedule, warmup_steps=WARMUP, min_lr_ratio=0.0, **kw)
    result = trainer.train(_data(), steps=STEPS)
    return np.array([h["lr"] for h in result.history]), result


def _transformers(make):
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=LR)
    sched = make(opt, num_warmup_steps=WARMUP, num_training_steps=STEPS)
    lrs = []
    for _ in range(STEPS + 1):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return np.array(lrs)


@pytest.mark.parametrize("name, make", [("linear", get_linear_schedule_with_warmup),
                                        ("cosine", get_cosine_schedule_with_warmup)])
def test_schedules_equal_transformers_after_the_warm_up(name, make):
    got, _ = _lrs(name)
    want = _transformers(make)
    np.testing.assert_allclose(got[WARMUP:], want[WARMUP:STEPS], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got[:WARMUP], want[1:WARMUP + 1], rtol=1e-6)


def test_linear_resumed_takes_the_uninterrupted_runs_lrs(tmp_path):
    whole, done = _lrs("linear")
    skiff.seed(0)
    model = nn.Linear(3, 1)
    kw = dict(optimizer="sgd", lr=LR, batch_size=4, schedule="linear", warmup_steps=WARMUP,
              min_lr_ratio=0.0, checkpoint_dir=tmp_path, checkpoint_every=5)
    stopped = skiff.Trainer(model, callbacks=[lambda m: m["step"] >= 8], **kw)
    assert len(stopped.train(_data(), steps=STEPS).history) == 8  # stopped by its callback
    skiff.seed(0)
    again = skiff.Trainer(nn.Linear(3, 1), resume=True, **kw).train(_data(), steps=STEPS)
    np.testing.assert_allclose([h["lr"] for h in again.history], whole, rtol=1e-7)
    np.testing.assert_allclose(again.losses, done.losses, rtol=1e-6)


@pytest.mark.parametrize("given, said", [("warmup_cosine", "did you mean cosine"),
                                         ("cosine_with_warmup", "did you mean cosine"),
                                         ("Linear", "did you mean 'linear'"),
                                         ("onecycle", "'cosine', 'linear', 'constant'")])
def test_other_names_say_skiffs(given, said):
    with pytest.raises(ValueError, match=said):
        skiff.Trainer(nn.Linear(3, 1), schedule=given)
