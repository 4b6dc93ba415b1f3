"""Round 30: ``Trainer(class_weight=...)`` trains as torch 2.13's
``nn.CrossEntropyLoss(weight=...)`` does, with "balanced" meaning scikit-learn's
``n_samples / (n_classes * bincount(y))`` (written out here from its definition)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    score = x[:, 0] + 0.5 * x[:, 1]
    y = np.where(score > 1.0, 2, np.where(score > 0.2, 1, 0)).astype(np.int64)  # imbalanced
    return x, y


def _torch_run(start, x, y, weight, epochs, seed, xv, yv, batch=32, lr=0.05):
    twin = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 3)).double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=lr, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight, dtype=torch.float64))
    losses = []
    for epoch in range(epochs):
        order = np.random.default_rng([seed, epoch]).permutation(len(x))
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            value = crit(twin(torch.tensor(x[idx], dtype=torch.float64)), torch.tensor(y[idx]))
            opt.zero_grad()
            value.backward()
            opt.step()
            losses.append(value.item())
    with torch.no_grad():  # torch's criterion over the whole held-out set
        val = crit(twin(torch.tensor(xv, dtype=torch.float64)), torch.tensor(yv)).item()
    return losses, val, twin


def _model(seed):
    skiff.seed(seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    return model, {k: np.array(v, copy=True) for k, v in model.state_dict().items()}


@pytest.mark.parametrize("spec", ["balanced", "dict", "array"])
def test_class_weight_trains_as_torchs_weighted_cross_entropy(spec):
    x, y = _data()
    xv, yv = _data(90, seed=1)
    counts = np.bincount(y)
    balanced = len(y) / (3 * counts)
    weight = {"balanced": balanced, "dict": np.array([1.0, 2.5, 1.0]),
              "array": np.array([0.5, 1.0, 4.0])}[spec]
    given = {"balanced": "balanced", "dict": {1: 2.5}, "array": [0.5, 1.0, 4.0]}[spec]
    model, start = _model(4)
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.05, schedule="constant", clip=None,
                            batch_size=32, seed=7, class_weight=given)
    result = trainer.train((x, y), epochs=3, val_dataset=(xv, yv))
    want, want_val, twin = _torch_run(start, x, y, weight, 3, 7, xv, yv)
    np.testing.assert_allclose(result.losses, want, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(result.val_history[-1]["val_loss"], want_val, rtol=2e-5)
    np.testing.assert_allclose(trainer.class_weights_[1] if spec == "dict"
                               else np.asarray(list(trainer.class_weights_.values())
                                               if spec == "balanced"
                                               else trainer.class_weights_), weight[1]
                               if spec == "dict" else weight, rtol=1e-12)
    with torch.no_grad():
        ref = twin(torch.tensor(x, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(trainer.predict(x), ref, atol=5e-5)


def test_balanced_counts_only_the_training_rows_of_a_val_split():
    x, y = _data()
    model, _ = _model(2)
    trainer = skiff.Trainer(model, class_weight="balanced", batch_size=64, seed=1)
    trainer.train((x, y), epochs=1, val_split=0.25)
    kept = y[:180]  # the Trainer keeps the last quarter apart, in order (Keras' split)
    counts = np.bincount(kept, minlength=3)
    want = {c: len(kept) / (np.count_nonzero(counts) * counts[c]) for c in range(3)
            if counts[c]}
    assert trainer.class_weights_.keys() == want.keys()
    np.testing.assert_allclose(list(trainer.class_weights_.values()), list(want.values()))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"class_weight": "balance"}, "'balanced'"),
    ({"class_weight": {"cat": 2.0}}, "class ids"),
    ({"class_weight": [1.0, -1.0, 1.0]}, ">= 0"),
    ({"class_weight": "balanced", "loss": "mse"}, "not cross-entropy"),
])
def test_bad_class_weights_are_refused_when_the_trainer_is_made(kwargs, match):
    model, _ = _model(0)
    with pytest.raises(ValueError, match=match):
        skiff.Trainer(model, **kwargs)


def test_a_weight_per_class_must_match_the_outputs():
    x, y = _data(64)
    model, _ = _model(0)
    trainer = skiff.Trainer(model, class_weight=[1.0, 2.0])
    with pytest.raises(ValueError, match="2 weights, but the model has 3 outputs"):
        trainer.train((x, y), steps=1)


def test_float_targets_are_refused_for_balanced():
    x, _ = _data(64)
    model = nn.Sequential(nn.Linear(4, 1))
    trainer = skiff.Trainer(model, class_weight="balanced")
    with pytest.raises(TypeError, match="classification"):
        trainer.train((x, x[:, :1]), steps=1)
