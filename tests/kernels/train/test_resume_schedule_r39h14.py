"""Round 39 (h14): a resume with another schedule than the checkpoint's run.

A checkpoint of a ``StepLR(opt, 3, 0.5)`` run resumed with ``schedule=lambda opt:
CosineAnnealingLR(opt, 10)`` (or with ``StepLR(opt, 5, 0.9)``) went on without a word in a
script: the cosine took the StepLR's step count, the StepLR(5, 0.9) got step_size 3 and gamma
0.5 back from the checkpoint's state. torch does the same (``load_state_dict`` is
``__dict__.update``; the oracle below), so the resume still does it, and says so, naming
both schedules: a ``UserWarning`` in a script, a warning line in a job's log (as another
batch size is, round 39 h5)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import skiff
from skiff import nn
from skiff.kernels.backend.report import Reporter
from skiff.optim import lr_scheduler as L

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 3)).astype("f4")
Y = X @ np.array([[1.0], [-1.0], [0.5]], "f4")
FIRST, MORE = 4, 6


class Lines(Reporter):
    """A job's reporter: keeps the log lines."""

    def __init__(self):
        self.lines = []

    def log(self, message, *, level="info"):
        self.lines.append((level, message))


def _run(folder, steps, schedule, resume=False, **kw):
    skiff.seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 1), optimizer="sgd", lr=0.1, batch_size=8,
                            loss="mse", clip=None, checkpoint_dir=folder, resume=resume,
                            schedule=schedule, **kw)
    trainer.train((X, Y), steps=steps)
    return trainer


def _torch_after(other):
    """torch's scheduler after a StepLR(3, 0.5) state of FIRST steps is loaded into
    ``other(opt)``."""
    p = [torch.nn.Parameter(torch.zeros(1))]
    opt = torch.optim.SGD(p, lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 3, 0.5)
    for _ in range(FIRST):
        opt.step()
        sched.step()
    after = other(torch.optim.SGD(p, lr=0.1))
    after.load_state_dict(sched.state_dict())  # no error: another class's state loads
    return after


def test_another_schedule_class_is_said_naming_both(tmp_path):
    _run(tmp_path, FIRST, lambda opt: L.StepLR(opt, 3, 0.5))
    with pytest.warns(UserWarning, match=r"resumed with schedule CosineAnnealingLR\(T_max=10, "
                                         r"eta_min=0\.0\) and the checkpoint's run had "
                                         r"StepLR\(step_size=3, gamma=0\.5\) at step 4: the "
                                         r"CosineAnnealingLR goes on from the StepLR's step"):
        trainer = _run(tmp_path, FIRST + MORE, lambda opt: L.CosineAnnealingLR(opt, 10),
                       resume=True)
    oracle = _torch_after(lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, 10))
    assert oracle.last_epoch == FIRST and oracle.T_max == 10  # the step count, its own T_max
    assert trainer.scheduler.last_epoch == FIRST + MORE and trainer.scheduler.T_max == 10


def test_same_class_other_settings_is_said_and_the_checkpoints_go_on(tmp_path):
    _run(tmp_path, FIRST, lambda opt: L.StepLR(opt, 3, 0.5))
    with pytest.warns(UserWarning, match=r"resumed with schedule StepLR\(step_size=5, "
                                         r"gamma=0\.9\) and the checkpoint's run had "
                                         r"StepLR\(step_size=3, gamma=0\.5\) at step 4: it goes "
                                         r"on with the checkpoint's step_size, gamma \(its"):
        trainer = _run(tmp_path, FIRST + MORE, lambda opt: L.StepLR(opt, 5, 0.9), resume=True)
    oracle = _torch_after(lambda opt: torch.optim.lr_scheduler.StepLR(opt, 5, 0.9))
    got = trainer.scheduler
    assert (got.step_size, got.gamma) == (oracle.step_size, oracle.gamma) == (3, 0.5)


def test_milestones_from_the_checkpoint_are_said_as_such(tmp_path):
    # round 40 (h6): the checkpoint's milestones go on, as torch's load_state_dict restores
    # them (round 39 kept this call's); the line says which settings go on, after the load
    _run(tmp_path, FIRST, lambda opt: L.MultiStepLR(opt, [2, 5]))
    with pytest.warns(UserWarning, match=r"MultiStepLR\(milestones=\[2, 6\]\) and the "
                                         r"checkpoint's run had MultiStepLR\(milestones="
                                         r"\[2, 5\]\) at step 4: it goes on with the "
                                         r"checkpoint's milestones"):
        trainer = _run(tmp_path, FIRST + 2, lambda opt: L.MultiStepLR(opt, [2, 6]),
                       resume=True)
    assert list(trainer.scheduler.milestones) == [2, 5]


def test_a_jobs_log_keeps_the_line_and_the_same_schedule_says_nothing(tmp_path):
    _run(tmp_path, FIRST, "cosine")
    rep = Lines()
    _run(tmp_path, FIRST + 2, "linear", resume=True, reporter=rep)
    said = [m for level, m in rep.lines if level == "warning" and "schedule" in m]
    assert len(said) == 1 and "resumed with schedule WarmupLinear(" in said[0]
    assert "the checkpoint's run had WarmupCosine(" in said[0]
    same = tmp_path / "same"
    _run(same, FIRST, lambda opt: L.StepLR(opt, 3, 0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # nothing to say
        _run(same, FIRST + 2, lambda opt: L.StepLR(opt, 3, 0.5), resume=True)
