"""Round 38 (h5): a ``%%train`` cell's ``schedule`` and ``callbacks`` reach the Trainer. The
cell's names the job read were model, dataset, val_dataset, optimizer and loss: a cell that
set ``schedule = lambda opt: ReduceLROnPlateau(opt, ...)`` or ``callbacks = [...]`` (an EMA
of the weights) trained with the cosine schedule and no callback, silently. The oracle for
the lrs: torch 2.13's ``ReduceLROnPlateau`` stepped on the job's own validation losses."""

from __future__ import annotations

import numpy as np
import torch

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.entry import build_from_config, train_parts

CELL = '''
import numpy as np
import skiff
from skiff import nn
from skiff.optim.lr_scheduler import ReduceLROnPlateau

rng = np.random.default_rng(0)
x = rng.normal(size=(48, 4)).astype("f4")
noise = rng.normal(size=(48, 1)).astype("f4")
dataset = (x, (x @ np.array([1.0, -1.0, 0.5, 2.0], "f4"))[:, None] + noise)
model = nn.Linear(4, 1)
optimizer = "sgd"
schedule = lambda opt: ReduceLROnPlateau(opt, factor=0.5, patience=0)
steps_seen = []
callbacks = [lambda metrics: steps_seen.append(metrics["step"])]
'''


def test_a_cells_schedule_and_callbacks_are_the_trainers():
    config = {"source": CELL, "epochs": 6, "val_split": 0.25, "lr": 0.2, "batch_size": 12,
              "clip": 0}
    parts = build_from_config(config)
    result = train_parts(parts, config, NullReporter())
    assert parts["callbacks"][0].__globals__["steps_seen"] == list(range(1, 19))  # called
    lrs = [r["lr"] for r in result.history]
    assert len(result.val_history) == 6 and len(lrs) == 18
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.2)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    want = []
    for val in result.val_history:
        want += [opt.param_groups[0]["lr"]] * 3
        sched.step(val["val_loss"])
    assert len(set(want)) > 1
    np.testing.assert_allclose(lrs, want, rtol=1e-9)
