"""Round 36 (h5): multi-label classification (several 0/1 labels per row, ``loss="bce"`` or
``nn.BCEWithLogitsLoss()``) gets per-label metrics.

Before, ``evaluate(per_class=True)`` and ``result.class_metrics`` gave nothing for it (only
one class per row was reported), and ``loss=nn.BCEWithLogitsLoss()`` gave no
``val_accuracy`` where ``loss="bce"``, the same loss, did. Now each label's precision,
recall, F1 and support (its positive rows) and the macro F1 over every label (scikit-learn's
``average="macro"`` of an indicator matrix) come with it, in validation rows too.

The oracles: torch 2.13's ``BCEWithLogitsLoss`` for the losses, and the definitions of
precision, recall and F1 computed with numpy from ``predict``'s scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype("f4")
    y = (x[:, :4] + 0.6 * rng.normal(size=(n, 4)) > 0.3).astype("f4")
    y[:, 3] = 0.0  # a label never positive: F1 0 (scikit-learn's zero_division default)
    return x, y


def _model():
    skiff.seed(1)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _by_hand(scores, y):
    pred, truth = scores > 0, y > 0.5
    tp, fp, fn = ((truth & pred).sum(0), (~truth & pred).sum(0), (truth & ~pred).sum(0))
    precision = np.divide(tp, tp + fp, out=np.zeros(4), where=tp + fp > 0)
    recall = np.divide(tp, tp + fn, out=np.zeros(4), where=tp + fn > 0)
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros(4),
                   where=precision + recall > 0)
    return precision, recall, f1, truth.sum(0), float((pred == truth).mean())


@pytest.fixture(scope="module")
def runs():
    train, val = _data(200, 0), _data(60, 1)
    out = {}
    for name, loss in (("bce", "bce"), ("module", nn.BCEWithLogitsLoss())):
        trainer = skiff.Trainer(_model(), loss=loss, batch_size=32, lr=0.01, seed=3)
        out[name] = trainer, trainer.train(train, epochs=3, val_dataset=val)
    return out, train, val


def test_per_label_metrics_equal_their_definitions(runs):
    out, _, (xv, yv) = runs
    for trainer, result in out.values():
        precision, recall, f1, support, acc = _by_hand(trainer.predict(xv), yv)
        got = trainer.evaluate((xv, yv), per_class=True)
        per = got["per_class"]
        np.testing.assert_allclose(per["precision"], precision, atol=1e-6)
        np.testing.assert_allclose(per["recall"], recall, atol=1e-6)
        np.testing.assert_allclose(per["f1"], f1, atol=1e-6)
        assert per["support"] == support.tolist() and per["f1"][3] == 0.0
        assert got["val_f1"] == pytest.approx(f1.mean(), rel=1e-9)
        assert got["val_accuracy"] == pytest.approx(acc)  # each label of each row
        # the run's own report: the last validation's (the weights it ends with)
        assert result.class_metrics["f1"] == pytest.approx(f1.mean(), rel=1e-9)
        assert result.val_history[-1]["val_accuracy"] == pytest.approx(acc)


def test_the_module_and_the_name_are_one_loss_as_torchs(runs):
    out, (x, y), (xv, yv) = runs
    a, b = out["bce"][1], out["module"][1]
    np.testing.assert_allclose(a.losses, b.losses, rtol=1e-6)
    assert a.val_history[-1] == pytest.approx(b.val_history[-1])
    trainer = out["module"][0]
    with torch.no_grad():  # torch's loss on the trained model's scores
        want = torch.nn.BCEWithLogitsLoss()(torch.tensor(trainer.predict(xv)),
                                            torch.tensor(yv)).item()
    assert b.val_history[-1]["val_loss"] == pytest.approx(want, rel=1e-5)
