"""Early stopping (trainer_stop.py): a run that overfits stops once the validation loss has
not improved for the patience, and ends with the best validation's weights."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.core import nn
from skiff.kernels.train.trainer import Trainer
from skiff.kernels.train.trainer_stop import EarlyStopping


def _overfitting():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 5)).astype("f4")
    y = (x @ rng.standard_normal(5) + 0.5 * rng.standard_normal(200)).astype("f4")
    model = nn.Sequential(nn.Linear(5, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 1))
    return model, (x[:40], y[:40]), (x[100:], y[100:])


def test_an_overfitting_run_stops_and_keeps_its_best_weights():
    model, train, val = _overfitting()
    trainer = Trainer(model, lr=3e-3, batch_size=16, early_stopping=3)
    result = trainer.train(train, epochs=200, val_dataset=val)
    losses = [v["val_loss"] for v in result.val_history]
    best = int(np.argmin(losses))
    assert result.steps < 600 and result.stopped.startswith("early stopping")
    assert len(losses) - 1 - best == 3  # three validations after the best, none better
    assert result.best_step == result.val_history[best]["step"]
    assert result.best_val_loss == pytest.approx(losses[best])
    # the model holds the best validation's weights, not the last step's
    assert trainer.evaluate(val)["val_loss"] == pytest.approx(losses[best], rel=1e-6)
    assert result.to_json()["best_step"] == result.best_step


def test_a_run_that_keeps_improving_is_not_stopped():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 3)).astype("f4")
    y = (x @ np.array([1.0, -2.0, 0.5], "f4")).astype("f4")
    trainer = Trainer(nn.Sequential(nn.Linear(3, 1)), lr=1e-2, batch_size=16,
                      early_stopping=5)
    result = trainer.train((x, y), epochs=6, val_split=0.25)
    assert result.stopped is None and result.steps == 18


def test_early_stopping_needs_validation_data_and_a_patience():
    model, train, _ = _overfitting()
    with pytest.raises(ValueError, match="val_dataset=... or val_split=0.1"):
        Trainer(model, early_stopping=2).train(train, epochs=1)
    for bad in (0, 2.5, True, "3"):
        with pytest.raises(ValueError, match="early_stopping is the number of validations"):
            Trainer(model, early_stopping=bad)


def test_a_non_finite_validation_counts_as_no_improvement():
    stop = EarlyStopping(2)
    model = nn.Sequential(nn.Linear(2, 1))
    assert not stop.update(model, 1, 1.0)
    assert not stop.update(model, 2, float("nan"))
    assert stop.update(model, 3, 0.99995)  # within min_delta of the best: not better
    assert stop.best_step == 1


@pytest.mark.parametrize("line,needle", [
    ("mlp {path} --early-stop 3", "add --val-split 0.1"),
    ("gpt-mini --val-split 1.5", None),
])
def test_grammar_refuses_early_stopping_without_a_validation_set(tmp_path, line, needle):
    from skiff.grammar import GrammarError
    from skiff.kinds.train import COMMAND, to_config

    path = tmp_path / "t.csv"
    path.write_text("a,y\n1,2\n2,4\n3,6\n")
    if needle is None:
        with pytest.raises((GrammarError, SystemExit, ValueError)):
            to_config(vars(COMMAND.parse(line.format(path=path))))
        return
    with pytest.raises(ValueError, match=needle):
        to_config(vars(COMMAND.parse(line.format(path=path))))
    config = to_config(vars(COMMAND.parse(f"mlp {path} --early-stop 3 --val-split 0.2")))
    assert config["early_stopping"] == 3 and config["val_split"] == 0.2


def test_cli_table_run_stops_early_and_says_whose_weights_it_kept(tmp_path, capsys,
                                                                 monkeypatch):
    from skiff.cli import main

    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 3))
    y = x @ [1.0, 2.0, 3.0] + 0.1 * rng.standard_normal(300)
    path = tmp_path / "t.csv"
    path.write_text("a,b,c,y\n" + "".join(
        ",".join(f"{v:.4f}" for v in (*r, t)) + "\n" for r, t in zip(x, y)))
    # ``python -m skiff ...`` in this process (round 42 h17: a fresh interpreter was ~2 CPU s
    # of imports; the job runs on a thread here and --json waits for it)
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    capsys.readouterr()
    code = main(["train", "mlp", str(path), "--epochs", "300", "--early-stop", "3",
                 "--val-split", "0.2", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = json.loads(out.out)["result"]
    assert result["stopped"].startswith("early stopping") and result["steps"] < 300 * 8
    assert result["best_step"] < result["steps"]
    best = min(v["val_loss"] for v in result["val_history"])
    assert result["best_val_loss"] == pytest.approx(best)


@pytest.mark.parametrize("outputs", [1, 2])
def test_a_regressions_validation_reports_r2_as_numpy_computes_it(outputs):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((150, 3)).astype("f4")
    y = (x @ rng.standard_normal((3, outputs)) + 0.3 * rng.standard_normal((150, outputs)))
    y = y.astype("f4")[:, 0] if outputs == 1 else y.astype("f4")  # (N,) for one output
    trainer = Trainer(nn.Sequential(nn.Linear(3, outputs)), lr=1e-2, batch_size=32)
    trainer.train((x, y), epochs=3)
    got = trainer.evaluate((x, y), batch_size=40)  # batches of unequal sizes
    pred = trainer.predict(x).reshape(150, outputs)
    truth = y.reshape(150, outputs)
    want = np.mean(1 - ((truth - pred) ** 2).sum(0) / ((truth - truth.mean(0)) ** 2).sum(0))
    # abs: an R^2 near 0 (the init drawn from the global generator, which tests run before
    # move) is a difference of float32 sums, good to ~1e-7, not to 1e-5 of itself
    assert got["val_r2"] == pytest.approx(want, rel=1e-5, abs=1e-6)
    assert "val_accuracy" not in got
    labels = (x[:, 0] > 0).astype("i8")  # classes: accuracy, no R^2
    clf = Trainer(nn.Sequential(nn.Linear(3, 2)), batch_size=32)
    assert set(clf.evaluate((x, labels))) == {"val_loss", "val_accuracy"}
