"""Round 36 (h5): ``trainer.lr_find(data)``, the learning-rate range test (Lightning's
``Tuner.lr_find``; there was none: a user found a rate by hand).

The oracle: a torch 2.13 float64 loop of the same test as Lightning writes it (the lr
``min_lr * (max_lr / min_lr) ** (s / (steps - 1))`` at step ``s``, SGD with momentum, the
loss smoothed by ``beta`` 0.98 with bias correction, stopped once it passes 4x its best, the
suggestion at the least ``np.gradient`` of the smoothed curve past its first 10 points):
the same lrs, losses, stop and suggestion; the model's weights are as before the test."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn

MIN_LR, MAX_LR, STEPS, BATCH = 1e-4, 30.0, 40, 32


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS * BATCH, 6)).astype("f4")
    return x, (x @ rng.normal(size=6) > 0).astype(np.int64)


def _model():
    skiff.seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))


def _torch_range_test(start, x, y):
    twin = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 2)).double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=MIN_LR, momentum=0.9)
    lrs, raw, smooth, avg, best = [], [], [], 0.0, np.inf
    for s in range(STEPS):
        lr = MIN_LR * (MAX_LR / MIN_LR) ** (s / (STEPS - 1))
        for g in opt.param_groups:
            g["lr"] = lr
        rows = slice(s * BATCH, (s + 1) * BATCH)
        loss = torch.nn.functional.cross_entropy(twin(torch.tensor(x[rows], dtype=torch.float64)),
                                                 torch.tensor(y[rows]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        lrs.append(lr)
        raw.append(loss.item())
        avg = 0.98 * avg + 0.02 * loss.item()
        smooth.append(avg / (1 - 0.98 ** (s + 1)))
        best = min(best, smooth[-1])
        if s > 0 and smooth[-1] > 4 * best:
            break
    grads = np.gradient(np.array(smooth[10:-1]))
    return lrs, raw, smooth, lrs[10 + int(np.argmin(grads))]


def test_the_range_test_is_lightnings_and_leaves_the_model_as_it_was():
    model = _model()
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, optimizer="sgd", batch_size=BATCH, clip=None,
                            shuffle=False)
    found = trainer.lr_find(_data(), min_lr=MIN_LR, max_lr=MAX_LR, steps=STEPS)
    lrs, raw, smooth, pick = _torch_range_test(start, *_data())
    assert 20 < len(lrs) < STEPS  # it stopped on the loss, as Lightning's does
    assert len(found["lr"]) == len(lrs)
    np.testing.assert_allclose(found["lr"], lrs, rtol=1e-9)
    n = len(lrs) - 3  # the last steps run away (float32 against float64 apart there)
    np.testing.assert_allclose(found["raw_loss"][:n], raw[:n], rtol=1e-4)
    np.testing.assert_allclose(found["loss"][:n], smooth[:n], rtol=1e-4)
    assert found["suggestion"] == pytest.approx(pick, rel=1e-9)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(np.asarray(v), start[k])
    # the Trainer trains as before the test: its next train() makes its own optimizer
    after = trainer.train(_data(), steps=3)
    fresh = skiff.Trainer(_model(), optimizer="sgd", batch_size=BATCH, clip=None,
                          shuffle=False).train(_data(), steps=3)
    assert after.losses == pytest.approx(fresh.losses, rel=1e-6)


def test_an_optimizer_instance_is_refused():
    model = _model()
    opt = skiff.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="lr_find makes its own optimizer"):
        skiff.Trainer(model, optimizer=opt).lr_find(_data())
