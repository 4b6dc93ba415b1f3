"""Round 31: ``evaluate`` and ``train(val_dataset=...)`` take a DataFrame's columns by name,
as ``predict`` does since round 30: a validation frame whose columns came in another order
(``df[["c", "a", "b"]]``, a CSV saved by another script) was scored on the wrong features,
silently (1.196 where the model's loss on its own columns is 1.222). The oracle is torch
2.13's cross-entropy of the model's outputs on the columns in training order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import skiff
from skiff import nn


def _frames(n=60, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": 10 * rng.normal(size=n),
                       "c": rng.normal(size=n)})
    y = ((df.a + df.b / 10 > 0).astype(int) + (df.c > 1).astype(int)).to_numpy()
    return df, y


def _torch_loss(trainer, df, y):
    w = trainer.model.state_dict()
    x = torch.tensor(df[["a", "b", "c"]].to_numpy(), dtype=torch.float64)
    out = x @ torch.tensor(np.asarray(w["weight"]), dtype=torch.float64).T + \
        torch.tensor(np.asarray(w["bias"]), dtype=torch.float64)
    return torch.nn.functional.cross_entropy(out, torch.tensor(y)).item()


def _trained():
    df, y = _frames()
    skiff.seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 3), strategy="single", batch_size=16, seed=1)
    trainer.train((df, y), epochs=2)
    return trainer


def test_evaluate_takes_a_reordered_frame_by_name():
    trainer = _trained()
    df, y = _frames(40, seed=1)
    want = _torch_loss(trainer, df, y)
    for frame in (df, df[["c", "a", "b"]], df[["b", "c", "a"]]):
        np.testing.assert_allclose(trainer.evaluate((frame, y))["val_loss"], want, rtol=1e-5)
    with pytest.raises(ValueError, match=r"DataFrame to evaluate lacks \['c'\]"):
        trainer.evaluate((df[["a", "b"]], y))


def test_validation_frame_in_another_order_is_taken_by_name():
    df, y = _frames()
    dv, yv = _frames(40, seed=2)
    losses = []
    for frame in (dv, dv[["c", "b", "a"]]):
        skiff.seed(0)
        trainer = skiff.Trainer(nn.Linear(3, 3), strategy="single", batch_size=16, seed=1)
        result = trainer.train((df, y), epochs=2, val_dataset=(frame, yv))
        losses.append(result.val_history[-1]["val_loss"])
        np.testing.assert_allclose(losses[-1], _torch_loss(trainer, dv, yv), rtol=1e-5)
    with pytest.raises(ValueError, match=r"DataFrame to validate on has \['d'\]"):
        skiff.Trainer(nn.Linear(3, 3), strategy="single").train(
            (df, y), epochs=1, val_dataset=(dv.assign(d=1.0), yv))
