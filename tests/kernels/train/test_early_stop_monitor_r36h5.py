"""Round 36 (h5): early stopping on a metric to maximise (Keras' and Lightning's
``monitor="val_accuracy"``, transformers' ``metric_for_best_model``).

``Trainer(early_stopping=N)`` watched the validation loss only; a user who stops on
accuracy (or macro F1) had no way but a callback, and ``monitor=`` was an unknown keyword.
Now ``monitor=`` names a validation row's metric (``"val_f1"``: the class report's macro
F1) and ``mode=`` its direction (``"auto"``: larger is better for an accuracy or F1). The
oracles: the patience rule applied by hand to the recorded validations; the model's weights
equal a run of ``best_step`` steps without early stopping; its accuracy and macro F1 on the
validation rows computed from its predictions with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff import nn


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 10)).astype("f4")
    y = ((x[:, 0] + rng.normal(size=120) * 1.2) > 0).astype("i8")
    xv = rng.normal(size=(60, 10)).astype("f4")
    yv = ((xv[:, 0] + rng.normal(size=60) * 1.2) > 0).astype("i8")
    return (x, y), (xv, yv)


def _run(epochs=30, ckpt=None, **kw):
    skiff.seed(1)
    model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 2))
    if ckpt is not None:
        kw.update(checkpoint_dir=ckpt, checkpoint_every=8)
    trainer = skiff.Trainer(model, lr=0.03, batch_size=16, seed=2, schedule="constant", **kw)
    train, val = _data()
    return trainer, trainer.train(train, epochs=epochs, val_dataset=val)


def _by_hand(values, patience, sign):
    """(best index, stop index) of the patience rule: better by more than 1e-4 of |best|."""
    best, best_i, since = None, None, 0
    for i, v in enumerate(values):
        if best is None or sign * v < sign * best - 1e-4 * abs(best):
            best, best_i, since = v, i, 0
        else:
            since += 1
            if since >= patience:
                return best_i, i
    return best_i, len(values) - 1


def _macro_f1(y, pred):
    f1 = []
    for c in (0, 1):
        tp = np.sum((pred == c) & (y == c))
        p, r = tp / max(np.sum(pred == c), 1), tp / max(np.sum(y == c), 1)
        f1.append(0.0 if p + r == 0 else 2 * p * r / (p + r))
    return float(np.mean(f1))


@pytest.fixture(scope="module")
def on_accuracy():
    return _run(early_stopping=3, monitor="val_accuracy")


def test_stops_on_accuracy_by_the_patience_rule_with_the_best_weights(on_accuracy):
    trainer, result = on_accuracy
    acc = [v["val_accuracy"] for v in result.val_history]
    best_i, stop_i = _by_hand(acc, 3, -1.0)
    assert len(acc) == stop_i + 1 < 30  # it stopped, and where the rule says
    best = result.val_history[best_i]
    assert result.best_step == best["step"] and result.stopped.startswith(
        "early stopping: no better val_accuracy in 3")
    assert result.best_metric == {"val_accuracy": max(acc)}
    assert result.best_val_loss == best["val_loss"]
    # the weights it holds are step best_step's: a run of that many steps without stopping
    plain, _ = _run(epochs=best["step"] // 8)
    xv, yv = _data()[1]
    np.testing.assert_allclose(trainer.predict(xv), plain.predict(xv), rtol=1e-6, atol=1e-7)
    assert np.mean(trainer.predict(xv).argmax(-1) == yv) == pytest.approx(max(acc))
    # watching the loss would have stopped elsewhere (the test can tell the two apart)
    loss_best, _ = _by_hand([v["val_loss"] for v in result.val_history], 3, 1.0)
    assert loss_best != best_i


def test_macro_f1_is_watched_as_its_report_gives_it():
    trainer, result = _run(early_stopping=3, monitor="f1")  # "val_" added, mode max
    xv, yv = _data()[1]
    f1 = _macro_f1(yv, trainer.predict(xv).argmax(-1))
    assert result.best_metric["val_f1"] == pytest.approx(f1, rel=1e-9)
    assert result.class_metrics["f1"] == pytest.approx(f1, rel=1e-9)


def test_a_resumed_run_stops_where_the_whole_one_did(on_accuracy, tmp_path):
    whole = on_accuracy[1]
    skiff.seed(1)
    stop_at = whole.val_history[1]["step"] + 3  # inside the patience's count
    _run(ckpt=tmp_path, early_stopping=3, monitor="val_accuracy",
         callbacks=[lambda m: m["step"] >= stop_at])
    _, again = _run(ckpt=tmp_path, early_stopping=3, monitor="val_accuracy", resume=True)
    assert (again.best_step, again.stopped, again.best_metric) == (
        whole.best_step, whole.stopped, whole.best_metric)
    assert again.losses == pytest.approx(whole.losses, rel=1e-6)


def test_names_it_cannot_watch_are_refused_clearly():
    with pytest.raises(ValueError, match="did you mean 'val_accuracy'.*val_loss, val_accuracy"):
        _run(epochs=2, early_stopping=3, monitor="val_acc")
    with pytest.raises(ValueError, match="give early_stopping=N"):
        skiff.Trainer(nn.Linear(2, 2), monitor="val_accuracy")
    with pytest.raises(ValueError, match="mode is 'min'"):
        skiff.Trainer(nn.Linear(2, 2), early_stopping=2, mode="maximum")
    with pytest.raises(TypeError, match="did you mean 'monitor'"):
        skiff.Trainer(nn.Linear(2, 2), metric_for_best_model="accuracy")
    with pytest.raises(TypeError, match="did you mean 'early_stopping'"):
        skiff.Trainer(nn.Linear(2, 2), load_best_model_at_end=True)


def test_the_line_runner_passes_monitor_mode_and_clip_by(tmp_path, monkeypatch):
    """``entry.run`` (what the command line and %train run) hands the keys on to the
    Trainer; the grammar's flags are kinds/train.py's."""
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train import entry
    from skiff.kernels.train.trainer import Trainer

    made = []
    real = Trainer.__init__

    def spy(self, model, **kw):
        made.append(kw)
        real(self, model, **kw)

    monkeypatch.setattr(Trainer, "__init__", spy)
    (x, y), _ = _data()
    path = tmp_path / "rows.csv"
    path.write_text("a,b,label\n" + "".join(f"{a:.4f},{b:.4f},{c}\n"
                                            for (a, b), c in zip(x[:, :2], y)))
    result = entry.run({"model": "mlp", "data": str(path), "early_stopping": 2, "epochs": 4,
                        "val_split": 0.2, "monitor": "accuracy", "clip": 0.5,
                        "clip_by": "value", "seed": 0}, NullReporter())
    assert list(result.best_metric) == ["val_accuracy"]
    assert (made[-1]["monitor"], made[-1]["mode"], made[-1]["clip_by"]) == (
        "accuracy", "auto", "value")
    entry.run({"model": "mlp", "data": str(path), "epochs": 1, "seed": 0}, NullReporter())
    assert (made[-1]["monitor"], made[-1]["mode"], made[-1]["clip_by"]) == (
        "val_loss", "auto", "norm")
