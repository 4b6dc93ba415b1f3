"""Round 30b: ``--class-weight`` hands its weights (by class id) to
``Trainer(class_weight=...)`` through ``train_parts`` instead of building a loss, and a
job's ``class_metrics`` are the Trainer's (no extra validation pass) with the classes by
name on one rank and on two (``--np 2`` printed ``recall 0: ...``). Oracles: scikit-learn's
balanced rule written out with np.unique, torch 2.13's ``CrossEntropyLoss(weight=...)`` over
the whole held-out set and torch's argmax counts, on a torch twin of the trained MLP."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from skiff.jobs import submit
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.entry import build_from_config, train_parts
from skiff.kinds.class_weight import weigh_classes


def _table(path, n=160, seed=3):
    rng = np.random.default_rng(seed)
    r = rng.random(n)
    y = np.where(r < 0.1, "fraud", np.where(r < 0.55, "late", "ok"))  # fraud is rare
    a = rng.normal(size=n) + 1.5 * (y == "fraud") - 1.0 * (y == "late")
    with open(path, "w") as fh:
        fh.write("amount,delay,label\n")
        for u, v, t in zip(a, rng.normal(size=n), y):
            fh.write(f"{u:.4f},{v:.4f},{t}\n")
    return path


def _twin(state):
    """torch's MLP of skiff's built-in ``mlp`` (64, 64, relu) holding ``state``."""
    w = [state[f"net.{i}.weight"] for i in (0, 2, 4)]
    twin = torch.nn.Sequential(torch.nn.Linear(w[0].shape[1], 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, w[2].shape[0]))
    twin.load_state_dict({f"{i}.{k}": torch.tensor(np.asarray(state[f"net.{i}.{k}"]))
                          for i in (0, 2, 4) for k in ("weight", "bias")})
    return twin


def _oracle(state, x, y, weight):
    with torch.no_grad():
        out = _twin(state)(torch.tensor(x, dtype=torch.float32))
        loss = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight, dtype=torch.float32))(
            out, torch.tensor(y)).item()
    conf = np.zeros((len(weight), len(weight)), np.int64)
    np.add.at(conf, (y, out.argmax(-1).numpy()), 1)
    return loss, conf


def test_the_weights_go_to_the_trainer_and_the_metrics_are_named(tmp_path):
    config = {"model": "mlp", "data": str(_table(tmp_path / "t.csv")), "seed": 0,
              "val_split": 0.3, "steps": 12, "class_weight": "balanced"}
    parts = build_from_config(config)
    x, y = (np.asarray(a) for a in parts["dataset"].arrays)
    held = int(round(len(y) * 0.3))
    kept = y[:len(y) - held]  # the Trainer holds out the last rows
    classes = np.unique(kept)  # scikit-learn's compute_class_weight("balanced")
    balanced = {int(c): len(kept) / (len(classes) * np.sum(kept == c)) for c in classes}
    weighed = weigh_classes(parts, config)
    assert weighed.get("loss") is None  # no loss of its own next to the Trainer's weights
    assert weighed["class_weight"].keys() == balanced.keys()
    np.testing.assert_allclose(list(weighed["class_weight"].values()),
                               list(balanced.values()), rtol=1e-6)
    result = train_parts(weighed, config, NullReporter())
    state = {k: np.asarray(v) for k, v in result.model.state_dict().items()}
    weight = np.array([balanced[k] for k in range(3)])
    loss, conf = _oracle(state, x[-held:], y[-held:], weight)
    np.testing.assert_allclose(result.val_history[-1]["val_loss"], loss, rtol=2e-5)
    report = result.class_metrics
    assert report["per_class"]["class"] == parts["table"].classes == ["fraud", "late", "ok"]
    np.testing.assert_array_equal(np.asarray(report["confusion"]), conf)


def test_a_cells_own_loss_and_the_weights_are_refused_together(tmp_path):
    config = {"model": "mlp", "data": str(_table(tmp_path / "t.csv")), "seed": 0}
    parts = build_from_config(config)
    with pytest.raises(ValueError, match="a loss of the cell's own"):
        weigh_classes({**parts, "loss": lambda out, y: out.sum()},
                      {**config, "class_weight": "balanced"})


def test_two_ranks_name_the_classes_of_the_trainers_metrics(tmp_path, runs_dir):
    path = _table(tmp_path / "t.csv", n=120)
    job, _ = submit("train", f"mlp {path} --steps 4 --val-split 0.3 --class-weight "
                             "fraud=5 --np 2")
    job.wait(120)
    assert job.status == "done", job.error
    table = json.loads((job.run_dir / "table.json").read_text())
    with np.load(job.run_dir / "model.npz") as z:
        state = {k: z[k] for k in z.files}
    parts = build_from_config({"model": "mlp", "data": str(path), "seed": 0, "val_split": 0.3})
    x, y = (np.asarray(a) for a in parts["dataset"].arrays)
    held = int(round(len(y) * 0.3))
    weight = np.array([5.0 if c == "fraud" else 1.0 for c in table["classes"]])
    loss, conf = _oracle(state, x[-held:], y[-held:], weight)
    metrics = json.loads((job.run_dir / "metrics.json").read_text())
    assert metrics["per_class"]["class"] == table["classes"] == ["fraud", "late", "ok"]
    np.testing.assert_array_equal(np.asarray(metrics["confusion"]), conf)
    np.testing.assert_allclose(job.result["val_history"][-1]["val_loss"], loss, rtol=2e-5)


def test_a_cell_model_with_its_own_loss_is_told_to_set_the_cells_loss():
    """A ``%%train`` cell whose model computes its own loss (``model.loss(batch)``): refused
    before training, naming the cell's ``loss = 'cross_entropy'`` (the Trainer's words,
    ``loss='cross_entropy'``, are a keyword the cell does not have); with it, the weighted
    validation loss is torch's."""
    from skiff import nn

    class Own(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x):
            return self.lin(x)

        def loss(self, batch):
            return self(batch[0]).sum()

    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 3)).astype(np.float32)
    y = (x[:, 0] > 0.6).astype(np.int64)
    config = {"class_weight": "balanced", "steps": 2}
    with pytest.raises(ValueError, match="set loss = 'cross_entropy' in the cell"):
        weigh_classes({"model": Own(), "dataset": (x, y)}, config)
    parts = weigh_classes({"model": Own(), "dataset": (x, y), "loss": "cross_entropy"},
                          config)
    model = train_parts(parts, config, NullReporter()).model
    weight = len(y) / (2 * np.bincount(y))  # scikit-learn's balanced
    twin = torch.nn.Linear(3, 2)
    twin.load_state_dict({k.split(".", 1)[1]: torch.tensor(np.asarray(v))
                          for k, v in model.state_dict().items()})
    with torch.no_grad():
        want = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight, dtype=torch.float32))(
            twin(torch.tensor(x)), torch.tensor(y)).item()
    from skiff.kernels.train.trainer import Trainer

    got = Trainer(model, loss="cross_entropy", class_weight=parts["class_weight"]).evaluate(
        (x, y), batch_size=7)["val_loss"]
    np.testing.assert_allclose(got, want, rtol=2e-5)
