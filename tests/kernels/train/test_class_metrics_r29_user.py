"""A classifier's user reads more than the accuracy (round 29): ``Trainer.evaluate(data,
per_class=True)`` gives the macro F1, each class's precision/recall/F1/support and the
confusion matrix; a job writes them by class name to ``metrics.json`` and ``result.json``
(``class_metrics``), and ``predict`` on rows that carry their class gives them too.
Oracle: the same weights in torch 2.13, the matrix by ``torch.bincount`` and the scores from
it in torch."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import skiff
from skiff import nn
from tests.cli.in_process import run_main


def _skiff(capsys, monkeypatch, tmp_path, *argv) -> str:
    """``python -m skiff ARGV`` in this process (round 41 h9: the job runs in a thread of this
    one, ``--json`` waits for it; an interpreter of its own was ~2 CPU s of imports)."""
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    done = run_main(*(str(a) for a in argv), capsys=capsys)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _torch_report(logits, y, k):
    pred = logits.argmax(1)
    m = torch.bincount(y * k + pred, minlength=k * k).reshape(k, k)
    tp = m.diag().double()
    zero = torch.zeros(k, dtype=torch.float64)
    prec = torch.where(m.sum(0) > 0, tp / m.sum(0).clamp(min=1), zero)
    rec = torch.where(m.sum(1) > 0, tp / m.sum(1).clamp(min=1), zero)
    f1 = torch.where(prec + rec > 0, 2 * prec * rec / (prec + rec).clamp(min=1e-300),
                     zero)
    seen = (m.sum(0) > 0) | (m.sum(1) > 0)
    return m.numpy(), prec.numpy(), rec.numpy(), f1.numpy(), float(f1[seen].mean())


def _twin(model, sizes):
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    twin = torch.nn.Sequential(*layers[:-1])
    state = {k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()}
    twin.load_state_dict(state)
    return twin


def test_evaluate_gives_f1_per_class_and_the_confusion_matrix_as_torch_counts_them():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 5)).astype(np.float32)
    y = np.digitize(x[:, 0] + 0.3 * x[:, 1], [0.2, 1.3]).astype(np.int64)  # imbalanced
    skiff.seed(1)
    model = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 3))
    trainer = skiff.Trainer(model, batch_size=32)
    trainer.train((x, y), epochs=2, val_split=0.3)
    xv, yv = x[210:], y[210:]  # the last 30%, in order
    val = trainer.evaluate((xv, yv), per_class=True)
    twin = _twin(model, [5, 12, 3])
    with torch.no_grad():
        m, prec, rec, f1, macro = _torch_report(twin(torch.tensor(xv)), torch.tensor(yv), 3)
    assert val["confusion"] == m.tolist()
    np.testing.assert_allclose(val["per_class"]["precision"], prec, atol=1e-6)
    np.testing.assert_allclose(val["per_class"]["recall"], rec, atol=1e-6)
    np.testing.assert_allclose(val["per_class"]["f1"], f1, atol=1e-6)
    assert val["per_class"]["support"] == np.bincount(yv, minlength=3).tolist()
    assert val["val_f1"] == pytest.approx(macro, abs=1e-9)
    assert val["val_accuracy"] == pytest.approx(np.trace(m) / len(yv), abs=1e-9)
    again = trainer.evaluate((xv, yv), batch_size=7, per_class=True)  # uneven batches
    assert again["confusion"] == m.tolist() and again["val_f1"] == pytest.approx(macro)
    json.dumps(val)  # JSON for result.json and metrics.json


def test_binary_scores_with_bce_count_positive_scores_as_class_one():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(120, 3)).astype(np.float32)
    y = (x[:, 0] > 0.4).astype(np.float32)[:, None]
    skiff.seed(2)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    trainer = skiff.Trainer(model, loss="bce")
    got = trainer.evaluate((x, y), per_class=True)
    twin = _twin(model, [3, 8, 1])
    with torch.no_grad():
        z = twin(torch.tensor(x))[:, 0]
    two = torch.stack([torch.zeros_like(z), z], 1)  # class 1 when z > 0
    m, _, _, _, macro = _torch_report(two, torch.tensor(y[:, 0]).long(), 2)
    assert got["confusion"] == m.tolist()
    assert got["val_f1"] == pytest.approx(macro, abs=1e-9)


def test_a_sequence_of_tokens_gets_no_confusion_matrix():
    class Tokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(64, 64)  # over 50 classes: not token tags (round 36)

        def forward(self, x):
            return self.emb(x)

    ids = np.random.default_rng(0).integers(0, 64, size=(8, 5))
    got = skiff.Trainer(Tokens()).evaluate((ids, ids), per_class=True)
    assert "val_accuracy" in got and "confusion" not in got and "val_f1" not in got


@pytest.mark.slow
def test_a_table_job_writes_metrics_by_class_name_and_predict_scores_alike(tmp_path, capsys,
                                                                           monkeypatch):
    rng = np.random.default_rng(5)
    n = 240
    a, b = rng.normal(size=n), rng.normal(size=n)
    band = np.where(a + b > 1, "high", np.where(a + b > -0.5, "mid", "low"))
    rows = [f"2024-{1 + k % 12:02d}-{1 + k % 28:02d},{a[k]:.4f},{b[k]:.4f},{band[k]}"
            for k in range(n)]
    path = tmp_path / "bands.csv"
    path.write_text("when,a,b,band\n" + "\n".join(rows) + "\n")
    out = _skiff(capsys, monkeypatch, tmp_path, "train", "mlp", path, "--epochs", "15",
                 "--lr", "0.01", "--val-split", "0.25", "--json")
    run_dir = json.loads(out)["job"]["run_dir"]
    metrics = json.loads(open(os.path.join(run_dir, "metrics.json")).read())
    assert metrics["per_class"]["class"] == ["high", "low", "mid"]
    assert sum(metrics["per_class"]["support"]) == n // 4
    result = json.loads(open(os.path.join(run_dir, "result.json")).read())
    assert result["class_metrics"]["confusion"] == metrics["confusion"]
    doc = json.loads(_skiff(capsys, monkeypatch, tmp_path, "predict", run_dir, path, "--json"))
    # the oracle: the saved weights in torch on the same rows scaled as StandardScaler fitted
    # on the training rows scales them (round 31: the job's seed-0 order, a quarter held out;
    # the held-out rows no longer leak into the means; round 46: the quarter stratified as
    # train_test_split(stratify=) holds it out: each class's share floored, the rest to the
    # largest remainders, the class's last rows of the seed-0 order)
    from skiff.kernels.train.tables import read_table

    table = read_table(path)
    raw = table.x.astype(np.float64) * table.x_std + table.x_mean
    order = np.random.default_rng(0).permutation(n)
    names, ranked = np.unique(band[order], return_inverse=True)
    share = np.bincount(ranked) * (n // 4) / n
    counts = np.floor(share).astype(int)
    for c in np.argsort(-(share - counts), kind="stable")[:n // 4 - counts.sum()]:
        counts[c] += 1
    held = np.zeros(n, bool)
    for c, k in enumerate(counts):
        held[np.flatnonzero(ranked == c)[len(np.flatnonzero(ranked == c)) - k:]] = True
    assert held.sum() == n // 4 and len(names) == 3
    fit = raw[order[~held]]
    sd = fit.std(0)
    weights = np.load(os.path.join(run_dir, "model.npz"))
    linear = sorted(k for k in weights.files if k.endswith(".weight"))
    h = torch.tensor((raw - fit.mean(0)) / np.where(sd > 0, sd, 1.0), dtype=torch.float64)
    for j, name in enumerate(linear):
        h = h @ torch.tensor(weights[name], dtype=torch.float64).T + torch.tensor(
            weights[name[:-len("weight")] + "bias"], dtype=torch.float64)
        if j < len(linear) - 1:
            h = torch.relu(h)
    m, _, _, _, macro = _torch_report(h, torch.tensor(table.y), 3)
    assert doc["score"]["confusion"] == m.tolist()
    assert doc["score"]["f1"] == pytest.approx(macro, abs=1e-9)
    assert any(n.startswith("confusion (rows true") for n in doc["notes"])
