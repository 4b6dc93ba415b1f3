"""Round 30: ``Trainer.train(..., val_dataset=...)`` of a classifier gives
``result.class_metrics`` (it was a job's only): macro F1, each class's precision, recall, F1
and support, and the confusion matrix of the weights the model holds at the end (after early
stopping, the best ones). The oracle: torch 2.13's forward of those weights, its argmax, and
the counts made with torch."""

from __future__ import annotations

import numpy as np
import torch

import skiff
from skiff import nn


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = (x[:, 0] > 0.3).astype(np.int64) + (x[:, 1] > 0.8).astype(np.int64)
    return x, y


def _torch_report(model, x, y, k):
    twin = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, k))
    twin.load_state_dict({n: torch.tensor(np.asarray(v)) for n, v in model.state_dict().items()})
    with torch.no_grad():
        pred = twin(torch.tensor(x)).argmax(-1)
    true = torch.tensor(y)
    conf = torch.zeros(k, k, dtype=torch.int64)
    conf.index_put_((true, pred), torch.ones_like(true), accumulate=True)
    tp = conf.diag().double()
    prec = torch.nan_to_num(tp / conf.sum(0).double())
    rec = torch.nan_to_num(tp / conf.sum(1).double())
    f1 = torch.nan_to_num(2 * prec * rec / (prec + rec))
    return conf.numpy(), prec.numpy(), rec.numpy(), f1.numpy()


def _check(result, model, xv, yv):
    conf, prec, rec, f1 = _torch_report(model, xv, yv, 3)
    got = result.class_metrics  # scores reported to 6 digits
    np.testing.assert_array_equal(np.asarray(got["confusion"]), conf)
    np.testing.assert_allclose(got["per_class"]["precision"], prec, atol=1e-6)
    np.testing.assert_allclose(got["per_class"]["recall"], rec, atol=1e-6)
    np.testing.assert_allclose(got["per_class"]["f1"], f1, atol=1e-6)
    np.testing.assert_array_equal(got["per_class"]["support"], np.bincount(yv, minlength=3))
    assert got["val_accuracy"] == np.trace(conf) / len(yv)
    assert result.to_json()["class_metrics"]["f1"] == got["f1"]


def test_class_metrics_of_a_direct_trainer_run():
    x, y = _data(200, 0)
    xv, yv = _data(70, 1)
    skiff.seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 3))
    trainer = skiff.Trainer(model, lr=0.02, batch_size=32, seed=2)
    result = trainer.train((x, y), epochs=2, val_dataset=(xv, yv))
    _check(result, model, xv, yv)
    assert sorted(result.val_history[-1]) == ["epoch", "step", "val_accuracy",
                                              "val_balanced_accuracy", "val_f1", "val_loss"]


def test_class_metrics_are_of_the_best_weights_after_early_stopping():
    x, y = _data(160, 2)
    xv, yv = _data(60, 3)
    skiff.seed(1)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 3))
    # a rate that overshoots: the validation loss rises after its best, the run stops early
    trainer = skiff.Trainer(model, lr=0.3, optimizer="sgd", schedule="constant", clip=None,
                            batch_size=16, seed=4, early_stopping=1)
    result = trainer.train((x, y), epochs=12, val_dataset=(xv, yv))
    assert result.best_step is not None and result.best_step < result.steps
    _check(result, model, xv, yv)  # the model holds the restored weights


def test_no_class_metrics_for_a_regression():
    x, _ = _data(64, 4)
    model = nn.Sequential(nn.Linear(3, 1))
    result = skiff.Trainer(model, batch_size=32).train((x, x[:, :1] * 2), epochs=1,
                                                       val_dataset=(x, x[:, :1] * 2))
    assert result.class_metrics is None
