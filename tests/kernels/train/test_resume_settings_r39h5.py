"""Round 39 (h5): a resume with other settings than the checkpoint's run.

- Another optimizer: ``Trainer(optimizer="sgd", resume=True)`` on an AdamW checkpoint loaded
  AdamW's moments and its lr and weight decay into SGD and trained on, silently (torch's
  ``SGD.load_state_dict`` of an AdamW state fails at the step, KeyError 'momentum'). Refused,
  saying what to do.
- Another batch size: the data position counts batches, so a run cut after 4 batches of 8
  rows and resumed at ``batch_size=4`` went on at row 16, training rows 16-31 of that epoch
  twice (from 4 rows to 8 it skipped rows). The epoch now goes on after the rows it had seen
  (oracle: every row once in that epoch, the rest in the epoch's own order), and the change
  is a ``UserWarning`` in a script (transformers warns of another batch size too); so is
  another ``grad_accum``."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff import nn

N, SEED = 48, 3
rng = np.random.default_rng(0)
X = rng.normal(size=(N, 3)).astype("f4")
Y = X @ np.array([[1.0], [-1.0], [0.5]], "f4")


class Rows:
    """A map-style dataset that records which rows were read."""

    def __init__(self):
        self.read = []

    def __len__(self):
        return N

    def __getitem__(self, i):
        self.read.append(int(i))
        return X[i], Y[i]


def _run(folder, steps, resume=False, data=None, **kw):
    skiff.seed(0)
    opts = dict(optimizer="adamw", batch_size=8, loss="mse", seed=SEED, clip=None)
    skiff.Trainer(nn.Linear(3, 1), checkpoint_dir=folder, resume=resume,
                  **{**opts, **kw}).train(data if data is not None else (X, Y), steps=steps)


def test_another_optimizer_is_refused(tmp_path):
    _run(tmp_path, 2)
    with pytest.raises(ValueError, match=r"holds AdamW's optimizer state and this run's "
                                         r"optimizer is SGD: resume with AdamW, or start"):
        _run(tmp_path, 4, resume=True, optimizer="sgd")


def test_another_batch_size_goes_on_after_the_rows_seen(tmp_path):
    _run(tmp_path, 8)  # epoch 0: 6 batches of 8; epoch 1: 2 batches (16 rows) seen
    data = Rows()
    with pytest.warns(UserWarning, match=r"resumed with batch_size 4 \(the checkpoint's run "
                                         r"had 8\): the epoch goes on after the rows"):
        _run(tmp_path, 8 + 8, resume=True, data=data, batch_size=4)
    order = np.random.default_rng([SEED, 1]).permutation(N)  # epoch 1's order
    rest = data.read[-32:]  # the 8 steps of 4 rows after the resume
    assert rest == order[16:].tolist()
    assert sorted(order[:16].tolist() + rest) == list(range(N))  # each row once


def test_another_grad_accum_is_said(tmp_path):
    _run(tmp_path, 2, grad_accum=2)
    with pytest.warns(UserWarning, match=r"resumed with grad_accum 1 \(the checkpoint's run "
                                         r"had 2\)"):
        _run(tmp_path, 3, resume=True)
