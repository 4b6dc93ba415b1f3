"""``python -m skiff predict JOB new.npz`` for a model trained on an .npz table (round 29):
predict read .csv or .tsv files only, so arrays in had to go out as a CSV. Now the new file's
``x`` is scaled as training's and scored against its ``y`` when it holds one. Oracle: the
run folder's weights in torch 2.13 on the same scaled rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from skiff.kernels.train.models.mlp import mlp
from skiff.kernels.train.table_predict import predict_table
from skiff.kernels.train.tables import TableError, read_table


def _run(tmp_path, y):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(len(y), 3)) * [1.0, 5.0, 0.1] + [0.0, 2.0, -1.0]
    train = tmp_path / "train.npz"
    np.savez(train, x=x, y=y)
    table = read_table(train)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"config": {"model": "mlp"}}))
    (run / "table.json").write_text(json.dumps(table.to_json()))
    model = mlp(in_features=3, out_features=table.outputs)
    np.savez(run / "model.npz", **{k: np.asarray(v) for k, v in model.state_dict().items()})
    return run, table, x


def _torch_out(run, table, x):
    w = np.load(run / "model.npz")
    h = torch.tensor((x - table.x_mean) / table.x_std, dtype=torch.float64)
    names = sorted(k for k in w.files if k.endswith(".weight"))
    for j, name in enumerate(names):
        h = h @ torch.tensor(w[name], dtype=torch.float64).T + torch.tensor(
            w[name[:-len("weight")] + "bias"], dtype=torch.float64)
        h = torch.relu(h) if j < len(names) - 1 else h
    return h.numpy()


def test_classes_of_an_npz_and_their_score(tmp_path):
    y = np.random.default_rng(1).integers(0, 3, 60)
    run, table, x = _run(tmp_path, y)
    new = tmp_path / "new.npz"
    np.savez(new, x=x[:25], y=y[:25])
    got = predict_table(run, new)
    out = _torch_out(run, table, x[:25])
    want = [table.classes[k] for k in out.argmax(1)]
    assert got.predictions == want
    assert got.score["accuracy"] == pytest.approx(np.mean(out.argmax(1) == y[:25]))
    assert sum(map(sum, got.score["confusion"])) == 25


def test_a_regression_npz_without_targets_and_a_wrong_width(tmp_path):
    y = np.random.default_rng(2).normal(size=50)
    run, table, x = _run(tmp_path, y)
    new = tmp_path / "rows.npz"
    np.savez(new, features=x[:7])
    got = predict_table(run, new)
    want = _torch_out(run, table, x[:7])[:, 0] * table.y_std + table.y_mean
    np.testing.assert_allclose(got.predictions, want, rtol=1e-5, atol=1e-5)
    assert got.score == {}
    np.savez(tmp_path / "narrow.npz", x=x[:5, :2])
    with pytest.raises(TableError, match="x has 2 columns; the model takes 3"):
        predict_table(run, tmp_path / "narrow.npz")


def test_a_gap_in_new_rows_of_a_gapless_table_takes_the_training_mean(tmp_path):
    # a table trained without gaps refused a new row with one ("an empty cell"); a table
    # trained with gaps filled them: now both fill with the training mean, said in a note
    y = np.random.default_rng(3).integers(0, 2, 40)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 3))
    path = tmp_path / "train.csv"
    path.write_text("a,b,c,label\n" + "\n".join(
        f"{a:.6f},{b:.6f},{c:.6f},{v}" for (a, b, c), v in zip(x, y)) + "\n")
    table = read_table(path)
    assert table.encoding is None
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"config": {"model": "mlp"}}))
    (run / "table.json").write_text(json.dumps(table.to_json()))
    model = mlp(in_features=3, out_features=2)
    np.savez(run / "model.npz", **{k: np.asarray(v) for k, v in model.state_dict().items()})
    new = tmp_path / "new.csv"
    new.write_text("c,a,b\n0.5,,1.0\n-1,0.25,NA\n")
    got = predict_table(run, new)
    filled = np.array([[table.x_mean[0], 1.0, 0.5], [0.25, table.x_mean[1], -1.0]])
    out = _torch_out(run, table, filled)
    assert got.predictions == [table.classes[k] for k in out.argmax(1)]
    assert any("'a': 1 empty cell filled with the training mean" in n for n in got.notes)
    assert any("'b': 1 empty cell filled" in n for n in got.notes)
