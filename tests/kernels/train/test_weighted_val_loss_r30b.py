"""Round 30b: a weighted cross-entropy's validation loss is torch 2.13's
``CrossEntropyLoss(weight=...)`` (reduction mean) over the whole held-out set, which divides
by the sum of the targets' weights, whatever the batch size (batch means averaged by rows
depended on it: 1.745 at 7 rows a batch, 1.694 at 16, torch 1.643)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    s = x[:, 0] + 0.5 * x[:, 1]
    return x, np.where(s > 1.2, 2, np.where(s > 0.3, 1, 0)).astype(np.int64)  # imbalanced


def _torch_twin(model):
    twin = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in
                          model.state_dict().items()})
    return twin


def _model():
    skiff.seed(5)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


@pytest.mark.parametrize("spec", ["balanced", "dict"])
def test_the_weighted_validation_loss_is_torchs_over_the_whole_set(spec):
    x, y = _data(96, 0)
    xv, yv = _data(53, 1)  # 53 rows: every batch size below leaves a short last batch
    model = _model()
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.1, batch_size=16, seed=2,
                            class_weight="balanced" if spec == "balanced" else {2: 6.0})
    result = trainer.train((x, y), epochs=2, val_dataset=(xv, yv))
    if spec == "balanced":  # scikit-learn's n / (k * bincount) over the training rows
        weight = len(y) / (3 * np.bincount(y, minlength=3))
    else:
        weight = np.array([1.0, 1.0, 6.0])
    crit = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight, dtype=torch.float32))
    with torch.no_grad():
        want = crit(_torch_twin(model)(torch.tensor(xv)), torch.tensor(yv)).item()
    np.testing.assert_allclose(result.val_history[-1]["val_loss"], want, rtol=2e-5)
    for batch in (5, 16, 53, 64):
        got = trainer.evaluate((xv, yv), batch_size=batch)
        np.testing.assert_allclose(got["val_loss"], want, rtol=2e-5)


def test_a_loss_module_with_weights_and_ignored_targets_is_torchs_over_the_whole_set():
    x, y = _data(64, 3)
    yv = y.copy()
    yv[::7] = -1  # rows left out of the loss and of its mean
    weight = np.array([0.5, 2.0, 7.0], np.float32)
    model = _model()
    trainer = skiff.Trainer(model, loss=nn.CrossEntropyLoss(weight=weight, ignore_index=-1),
                            batch_size=8)
    crit = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight), ignore_index=-1)
    with torch.no_grad():
        want = crit(_torch_twin(model)(torch.tensor(x)), torch.tensor(yv)).item()
    for batch in (3, 10, 64):
        got = trainer.evaluate((x, yv), batch_size=batch)["val_loss"]
        np.testing.assert_allclose(got, want, rtol=2e-5)


def test_an_unweighted_loss_is_still_the_mean_over_rows():
    x, y = _data(50, 4)
    model = _model()
    trainer = skiff.Trainer(model, batch_size=8)
    with torch.no_grad():
        want = torch.nn.functional.cross_entropy(_torch_twin(model)(torch.tensor(x)),
                                                 torch.tensor(y)).item()
    for batch in (7, 50):
        np.testing.assert_allclose(trainer.evaluate((x, y), batch_size=batch)["val_loss"],
                                   want, rtol=2e-5)


@pytest.mark.parametrize("given", [{2: 6.0}, [1.0, 0.5, 6.0]])
def test_given_weights_count_in_evaluate_before_any_training(given):
    """``Trainer(model, class_weight=...)`` given its weights: ``evaluate`` before ``train``
    is weighted too, as torch's criterion made with them is (it was unweighted until a
    train() counted them)."""
    x, y = _data(40, 5)
    model = _model()
    weight = np.ones(3) if isinstance(given, dict) else np.asarray(given)
    if isinstance(given, dict):
        weight[2] = 6.0
    crit = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight, dtype=torch.float32))
    with torch.no_grad():
        want = crit(_torch_twin(model)(torch.tensor(x)), torch.tensor(y)).item()
    got = skiff.Trainer(model, class_weight=given).evaluate((x, y), batch_size=9)["val_loss"]
    np.testing.assert_allclose(got, want, rtol=2e-5)


def test_token_targets_with_ignored_ones_are_torchs_over_the_whole_set():
    """Per-token targets with -100 (prompt tokens, padding) in varying numbers per row: the
    validation loss and accuracy are torch's over every scored token of the set, whatever
    the batch size (batch means averaged by rows weighed a batch of few scored tokens as
    much as a full one)."""
    skiff.seed(0)
    model = nn.Sequential(nn.Embedding(7, 6), nn.Linear(6, 7))
    rng = np.random.default_rng(0)
    x = rng.integers(0, 7, (13, 5))
    y = rng.integers(0, 7, (13, 5))
    y[np.arange(5)[None, :] < rng.integers(0, 5, (13, 1))] = -100  # 0-4 prompt tokens a row
    twin = torch.nn.Sequential(torch.nn.Embedding(7, 6), torch.nn.Linear(6, 7))
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in
                          model.state_dict().items()})
    with torch.no_grad():
        out = twin(torch.tensor(x))
        t = torch.tensor(y)
        want = torch.nn.functional.cross_entropy(out.reshape(-1, 7), t.reshape(-1)).item()
        keep = t != -100
        acc = (out.argmax(-1) == t)[keep].float().mean().item()
    trainer = skiff.Trainer(model)
    for batch in (2, 5, 13):
        got = trainer.evaluate((x, y), batch_size=batch)
        np.testing.assert_allclose(got["val_loss"], want, rtol=2e-5)
        np.testing.assert_allclose(got["val_accuracy"], acc, rtol=1e-6)
