"""Round 48 (h3): ``class_weight`` with the user's own ``nn.CrossEntropyLoss``.

``Trainer(loss=nn.CrossEntropyLoss(label_smoothing=0.2), class_weight="balanced")`` (an
imbalanced classifier with label smoothing, a Keras/scikit-learn user's habit) was refused:
"loss=CrossEntropyLoss() is not cross-entropy". The class weights now go into that loss with
its ``label_smoothing``, ``ignore_index`` and ``reduction``, as torch's
``CrossEntropyLoss(weight=w, label_smoothing=0.2)``; the validation loss is that criterion's
mean over the whole held-out set. Oracle: torch 2.13's loop on the same init and order,
float64."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402


@pytest.mark.parametrize("reduction,ignore", [("mean", -1), ("sum", -100)])
def test_balanced_weights_with_label_smoothing_as_torch(reduction, ignore):
    rng = np.random.default_rng(48)
    x, xv = rng.normal(size=(30, 4)), rng.normal(size=(13, 4))
    y = np.array([0] * 17 + [1] * 8 + [2] * 4 + [ignore])  # imbalanced, one ignored row
    rng.shuffle(y)
    yv = np.array([0, 1, 2, 0, 0, 1, 2, 0, 1, ignore, 0, 0, 2])
    with skiff.random.fork_rng():
        skiff.manual_seed(2)
        m = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double()
    tm = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(),
                             torch.nn.Linear(5, 3)).double()
    tm.load_state_dict({k: torch.tensor(np.array(v)) for k, v in m.state_dict().items()})
    trainer = skiff.Trainer(
        m, optimizer=skiff.optim.SGD(m.parameters(), lr=0.1), batch_size=10, shuffle=False,
        clip=None, schedule="constant", class_weight="balanced",
        loss=nn.CrossEntropyLoss(label_smoothing=0.2, reduction=reduction, ignore_index=ignore))
    trainer.train((x, y), epochs=2)
    kept = y[y != ignore]
    w = torch.tensor(len(kept) / (3 * np.bincount(kept)))  # scikit-learn's "balanced"
    lf = torch.nn.CrossEntropyLoss(weight=w, label_smoothing=0.2, reduction=reduction,
                                   ignore_index=ignore)
    opt = torch.optim.SGD(tm.parameters(), lr=0.1)
    for _ in range(2):
        for i in range(0, len(y), 10):
            loss = lf(tm(torch.tensor(x[i:i + 10])), torch.tensor(y[i:i + 10]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    for k, v in tm.state_dict().items():  # float64, 6 steps: ~1e-16 seen; 1e-12 is far above
        np.testing.assert_allclose(np.asarray(m.state_dict()[k]), v.numpy(), rtol=0,
                                   atol=1e-12, err_msg=k)
    if reduction == "mean":  # batches of 5, 5, 3: the whole set's weighted mean, as torch's
        with torch.no_grad():
            want = float(lf(tm(torch.tensor(xv)), torch.tensor(yv)))
        got = trainer.evaluate((xv, yv), batch_size=5)["val_loss"]
        assert abs(got - want) < 1e-12, (got, want)


def test_weights_in_both_places_are_refused_in_one_line():
    m = nn.Linear(4, 3)
    with pytest.raises(ValueError, match="both weigh the classes: give the weights in one"):
        skiff.Trainer(m, class_weight="balanced",
                      loss=nn.CrossEntropyLoss(weight=np.ones(3, np.float32)))
