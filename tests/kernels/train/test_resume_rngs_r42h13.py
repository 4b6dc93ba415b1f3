"""Round 42 (h13), as a user: a dataset that draws its augmentations from numpy's,
Python's and torch's global generators in ``__getitem__`` (random flips, noise), trained with
validation every 2 steps, early stopping on ``val_accuracy`` (mode max) and ``keep_best``,
cut at step 4 and resumed. transformers keeps those generators in its checkpoints
(``rng_state.pth``); skiff kept only its own, so the resumed run drew other augmentations
and its losses left the uninterrupted run's from step 5 (1e-2). The oracle: the
uninterrupted run of the same script."""

from __future__ import annotations

import random

import numpy as np
import torch

import skiff
from skiff import nn
from skiff.kernels.train.trainer import Trainer

from .flips_data import Flips


def _Flips(n, seed, augment=True):
    return Flips(n, seed, augment, torch_scale=True)


def _run(where, stop_at=None, resume=False):
    np.random.seed(7)
    random.seed(7)
    torch.manual_seed(7)
    skiff.seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(72, 2))
    tr = Trainer(model, lr=0.02, batch_size=8, seed=0, checkpoint_dir=where,
                 checkpoint_every=2, eval_every=2, monitor="val_accuracy", mode="max",
                 early_stopping=3, keep_best=True, resume=resume,
                 callbacks=[lambda m: m["step"] == stop_at] if stop_at else None)
    return tr.train(_Flips(24, 0), epochs=3, val_dataset=_Flips(8, 1, augment=False))


def test_a_resume_draws_the_augmentations_the_uninterrupted_run_drew(tmp_path):
    whole = _run(tmp_path / "whole")
    assert _run(tmp_path / "cut", stop_at=4).steps == 4
    rest = _run(tmp_path / "cut", resume=True)
    assert rest.resumed["from_step"] == 4
    assert len(whole.history) > 6
    assert [h["loss"] for h in rest.history] == [h["loss"] for h in whole.history]
    assert [v["val_accuracy"] for v in rest.val_history] == \
        [v["val_accuracy"] for v in whole.val_history]
    assert (rest.steps, rest.best_step) == (whole.steps, whole.best_step)
