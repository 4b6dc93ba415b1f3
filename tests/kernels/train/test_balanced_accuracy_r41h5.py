"""Round 41 (h5): a class-imbalanced classifier trained with ``class_weight="balanced"``: its
validation rows carry what its user reads at each validation, the macro F1 (``val_f1``, kept
only in ``result.class_metrics`` of the last or best step before) and the balanced accuracy
(``val_balanced_accuracy``, scikit-learn's ``balanced_accuracy_score``: the mean recall over
the classes among the targets; given nowhere before), and ``keep_best`` or early stopping
can watch them. Oracle: torch 2.13's forward of the weights after each epoch (the run cut
by ``steps``), its argmax counted with torch, and torch's
``CrossEntropyLoss(weight=...)`` for the weighted validation loss."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff import nn

torch = pytest.importorskip("torch")

K = 3


def _data(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.choice(K, size=n, p=[0.75, 0.17, 0.08])
    x = rng.normal(size=(n, 4)).astype(np.float32)
    x[:, 0] += 0.9 * y  # the rare classes are separable, not easily
    x[:, 1] -= 0.6 * (y == 2)
    return x, y.astype(np.int64)


def _model():
    skiff.manual_seed(3)
    return nn.Sequential(nn.Linear(4, 12), nn.Tanh(), nn.Linear(12, K))


def _torch_scores(model, x, y, weight):
    twin = torch.nn.Sequential(torch.nn.Linear(4, 12), torch.nn.Tanh(), torch.nn.Linear(12, K))
    twin.load_state_dict({n: torch.tensor(np.asarray(v)) for n, v in model.state_dict().items()})
    with torch.no_grad():
        out = twin(torch.tensor(x))
    true, pred = torch.tensor(y), out.argmax(-1)
    loss = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight, dtype=torch.float32))(out, true)
    recall, f1 = [], []
    for k in range(K):
        tp = int(((pred == k) & (true == k)).sum())
        support, predicted = int((true == k).sum()), int((pred == k).sum())
        r = tp / support if support else 0.0
        p = tp / predicted if predicted else 0.0
        if support:
            recall.append(r)
        if support or predicted:
            f1.append(2 * p * r / (p + r) if p + r else 0.0)
    return float(loss), float(np.mean(recall)), float(np.mean(f1))


def test_each_validation_has_f1_and_balanced_accuracy():
    x, y = _data(400, 0)
    xv, yv = _data(150, 1)
    model = _model()
    trainer = skiff.Trainer(model, lr=0.02, batch_size=32, class_weight="balanced",
                            schedule="constant")
    weight = len(y) / (K * np.bincount(y, minlength=K))  # scikit-learn's "balanced"
    rows = []
    for _ in (1, 2):  # each epoch's row against torch on the weights of that moment
        r = trainer.train((x, y), epochs=1, val_dataset=(xv, yv))
        row = r.val_history[-1]
        loss, bal, f1 = _torch_scores(model, xv, yv, weight)
        assert row["val_loss"] == pytest.approx(loss, rel=1e-5)
        assert row["val_balanced_accuracy"] == pytest.approx(bal, abs=1e-12)
        assert row["val_f1"] == pytest.approx(f1, abs=1e-12)
        rows.append(row)
    assert r.class_metrics["balanced_accuracy"] == rows[-1]["val_balanced_accuracy"]
    # the plain accuracy of the majority class flatters: the balanced one is what moved
    assert rows[-1]["val_balanced_accuracy"] != pytest.approx(rows[-1]["val_accuracy"])


def test_early_stopping_watches_the_balanced_accuracy():
    x, y = _data(300, 0)
    xv, yv = _data(100, 1)
    trainer = skiff.Trainer(_model(), lr=0.05, batch_size=32, class_weight="balanced",
                            early_stopping=2, monitor="balanced_accuracy")
    r = trainer.train((x, y), epochs=6, val_dataset=(xv, yv))
    scores = {v["step"]: v["val_balanced_accuracy"] for v in r.val_history}
    assert trainer.monitor_mode == "max"  # an accuracy: larger is better
    assert r.best_metric == {"val_balanced_accuracy": max(scores.values())}
    assert r.best_step == min(s for s, v in scores.items() if v == max(scores.values()))
