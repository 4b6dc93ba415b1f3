"""Cross-entropy with class weights and label smoothing against torch's, forward and
gradient, with ignored targets and every reduction; and through a Trainer on imbalanced
classes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skiff.kernels.train.core import nn
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.tensor import Tensor


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted,smoothing", [(True, 0.0), (False, 0.1), (True, 0.2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equal_to_torch(reduction, weighted, smoothing, dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((7, 5)) * 3).astype(dtype)
    t = rng.integers(0, 5, 7)
    t[2] = -100  # ignored
    w = rng.uniform(0.2, 3.0, 5).astype(dtype) if weighted else None
    g = rng.standard_normal(7).astype(dtype) if reduction == "none" else None
    xs = Tensor(x, requires_grad=True, dtype=dtype)
    loss = F.cross_entropy(xs, t, reduction=reduction, weight=w, label_smoothing=smoothing)
    loss.backward(g if g is not None else None)
    xt = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.cross_entropy(
        xt, torch.tensor(t), reduction=reduction, label_smoothing=smoothing,
        weight=None if w is None else torch.tensor(w))
    want.backward(torch.tensor(g) if g is not None else None)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(np.asarray(loss.data), want.detach().numpy(), **tol)
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), **tol)


def test_the_module_and_its_checks():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 3)).astype("f4")
    t = np.array([0, 1, 2, 2, 2, 2])
    crit = nn.CrossEntropyLoss(weight=[3.0, 2.0, 0.5], label_smoothing=0.05)
    got = crit(Tensor(x), t)
    want = torch.nn.CrossEntropyLoss(weight=torch.tensor([3.0, 2.0, 0.5]),
                                     label_smoothing=0.05)(torch.tensor(x), torch.tensor(t))
    assert float(got.item()) == pytest.approx(float(want), rel=1e-5)
    with pytest.raises(ValueError, match="one value per class"):
        F.cross_entropy(Tensor(x), t, weight=[1.0, 2.0])
    with pytest.raises(ValueError, match="finite and >= 0"):
        F.cross_entropy(Tensor(x), t, weight=[1.0, -2.0, 1.0])
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        nn.CrossEntropyLoss(label_smoothing=1.0)


def test_class_weights_raise_a_rare_classs_recall_in_training():
    from skiff.kernels.train.trainer import Trainer

    rng = np.random.default_rng(3)
    x = rng.standard_normal((600, 2)).astype("f4")
    noise = rng.standard_normal(600)
    y = ((x[:, 0] + 0.5 * x[:, 1] + noise) > 2.0).astype("i8")  # ~8% positives, overlapping
    recall = {}
    for name, weight in (("plain", None), ("weighted", [1.0, 9.0])):
        model = nn.Sequential(nn.Linear(2, 2))
        model.load_state_dict({k: np.zeros_like(v) for k, v in model.state_dict().items()})
        trainer = Trainer(model, lr=5e-2, batch_size=64, seed=0,
                          loss=nn.CrossEntropyLoss(weight=weight))
        trainer.train((x, y), epochs=15)
        pred = trainer.predict(x).argmax(1)
        recall[name] = float((pred[y == 1] == 1).mean())
    assert recall["weighted"] > recall["plain"] + 0.2, recall


def test_a_float16_mean_counts_beyond_2048_targets_exactly():
    """The count of targets stays on the device (no host sync in a step) and in float32 at
    least: float16 holds whole numbers exactly only up to 2048 (3001 would be 3000)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3001, 4)).astype(np.float16)
    t = rng.integers(0, 4, 3001)
    t[7] = -100  # ignored: 3000 counted
    got = F.cross_entropy(Tensor(x, dtype=np.float16, requires_grad=True), t)
    assert got.dtype == np.float16 and float(got._node.count) == 3000.0
    t[7] = 1
    got = F.cross_entropy(Tensor(x, dtype=np.float16, requires_grad=True), t)
    assert float(got._node.count) == 3001.0
    want = torch.nn.functional.cross_entropy(torch.tensor(x).double(), torch.tensor(t))
    assert float(got.item()) == pytest.approx(float(want), rel=5e-3)
