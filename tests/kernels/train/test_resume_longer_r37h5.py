"""Round 37 (h5): a run resumed with more steps than it was started with.

``Trainer(..., checkpoint_dir=d).train(data, steps=5)``, then ``resume=True`` with
``steps=12`` (a user who wants more of a run that went well, Lightning's larger
``max_steps``): the checkpoint's built-in schedule had ended at step 5, and the 7 steps after
it ran at its floor (``min_lr_ratio`` of the lr) without a word. Now the schedule goes on
over the 12 steps asked, as transformers' Trainer resumes (its schedule made for the new
``num_training_steps``, its step count restored). The oracle: transformers'
``get_{cosine,linear}_schedule_with_warmup`` on a torch optimizer for 12 steps (skiff's step
``s`` takes transformers' lr of step ``s + 1`` in the warm-up, and of step ``s`` after it,
round 36), and the uninterrupted 12-step run's lrs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import get_cosine_schedule_with_warmup, get_linear_schedule_with_warmup

import skiff
from skiff import nn

FIRST, STEPS, WARMUP, LR = 5, 12, 2, 0.1


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("f4")
    return x, (x @ np.array([1.0, -2.0, 0.5], "f4"))[:, None]


def _run(schedule, steps, **kw):
    skiff.seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 1), optimizer="sgd", lr=LR, batch_size=8,
                            schedule=schedule, warmup_steps=WARMUP, min_lr_ratio=0.0,
                            seed=1, **kw)
    return trainer.train(_data(), steps=steps)


def _transformers(make):
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=LR)
    sched = make(opt, num_warmup_steps=WARMUP, num_training_steps=STEPS)
    lrs = []
    for _ in range(STEPS + 1):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return np.array(lrs)


@pytest.mark.parametrize("name, make", [("cosine", get_cosine_schedule_with_warmup),
                                        ("linear", get_linear_schedule_with_warmup)])
def test_a_longer_resume_goes_on_over_the_steps_asked(tmp_path, name, make):
    _run(name, FIRST, checkpoint_dir=tmp_path)
    again = _run(name, STEPS, checkpoint_dir=tmp_path, resume=True)
    lrs = np.array([h["lr"] for h in again.history])
    assert len(lrs) == STEPS
    later = lrs[FIRST:]  # the steps trained after the resume
    np.testing.assert_allclose(later, _transformers(make)[FIRST:STEPS], rtol=1e-6)
    whole = np.array([h["lr"] for h in _run(name, STEPS).history])
    np.testing.assert_allclose(later, whole[FIRST:], rtol=1e-7)
    assert later[0] > 0.5 * LR  # not held at the first run's end (0 here)


def test_the_same_steps_resume_as_before(tmp_path):
    """A run stopped at step 5 of 12 (its callback) and resumed with steps=12: the
    uninterrupted run's lrs and losses, as before."""
    whole = _run("cosine", STEPS)
    _run("cosine", STEPS, checkpoint_dir=tmp_path, callbacks=[lambda m: m["step"] >= FIRST])
    again = _run("cosine", STEPS, checkpoint_dir=tmp_path, resume=True)
    np.testing.assert_allclose(again.losses, whole.losses, rtol=1e-6)
    np.testing.assert_allclose([h["lr"] for h in again.history],
                               [h["lr"] for h in whole.history], rtol=1e-7)


def test_a_resume_takes_this_calls_floor(tmp_path):
    """``min_lr_ratio`` given anew on the resume is the schedule's floor from there on (it
    was the checkpoint's): the lrs of an uninterrupted run with it."""
    _run("cosine", STEPS, checkpoint_dir=tmp_path, callbacks=[lambda m: m["step"] >= FIRST])
    skiff.seed(0)
    again = skiff.Trainer(nn.Linear(3, 1), optimizer="sgd", lr=LR, batch_size=8,
                          schedule="cosine", warmup_steps=WARMUP, min_lr_ratio=0.5, seed=1,
                          checkpoint_dir=tmp_path, resume=True).train(_data(), steps=STEPS)
    skiff.seed(0)
    whole = skiff.Trainer(nn.Linear(3, 1), optimizer="sgd", lr=LR, batch_size=8,
                          schedule="cosine", warmup_steps=WARMUP, min_lr_ratio=0.5,
                          seed=1).train(_data(), steps=STEPS)
    np.testing.assert_allclose([h["lr"] for h in again.history][FIRST:],
                               [h["lr"] for h in whole.history][FIRST:], rtol=1e-7)
    assert again.history[-1]["lr"] > 0.5 * LR
