"""``python -m skiff predict JOB new.csv``: a table model's predictions for another file
(round 21: a terminal could train mlp on a CSV but not use it on new rows)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from types import SimpleNamespace

import numpy as np
import pytest

NAMES = ("low", "mid", "high")


def _rows(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = np.digitize(x[:, 0] + 0.5 * x[:, 1], [-0.6, 0.6])  # three bands: classes of words
    return x, y


def _write(path, x, y, order=("a", "b", "c", "grade"), junk=False):
    cols = {"a": x[:, 0], "b": x[:, 1], "c": x[:, 2]}
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*order, *(["note"] if junk else [])])
        for i in range(len(x)):
            row = [NAMES[y[i]] if k == "grade" else f"{cols[k][i]:.6f}" for k in order]
            w.writerow([*row, *(["n/a"] if junk else [])])


def _skiff(*args, env):
    """``python -m skiff ARGS`` as the terminal runs it (``skiff.cli.main``), in this
    process: its exit status, stdout and stderr. Round 40: each was a process of its own
    (11 Python starts and ``import skiff``: the file 13.3 -> 4.4 CPU s, docs/widgets.md,
    Round 40 (h8))."""
    from skiff.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("SKIFF_RUNS")
    os.environ["SKIFF_RUNS"] = env["SKIFF_RUNS"]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        if saved is None:
            os.environ.pop("SKIFF_RUNS", None)
        else:
            os.environ["SKIFF_RUNS"] = saved
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("predict")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", SKIFF_RUNS=str(tmp / "runs"))
    x, y = _rows(400, seed=1)
    _write(tmp / "train.csv", x, y)
    proc = _skiff("train", "mlp", str(tmp / "train.csv"), "--epochs", "25", "--device", "cpu",
                  "--name", "grades", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return tmp, env, json.loads(proc.stdout)["job"]["run_dir"]


def test_predictions_match_the_weights_and_score_held_out_rows(trained):
    tmp, env, run_dir = trained
    x, y = _rows(120, seed=7)
    # the columns in another order, with a column the model never saw
    _write(tmp / "new.csv", x, y, order=("grade", "c", "a", "b"), junk=True)
    proc = _skiff("predict", "grades", str(tmp / "new.csv"), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # the oracle: the saved weights and scaling applied by hand
    scaling = json.loads(open(os.path.join(run_dir, "table.json")).read())
    from skiff.kernels.train.models.mlp import mlp

    weights = np.load(os.path.join(run_dir, "model.npz"))
    model = mlp(in_features=3, out_features=len(scaling["classes"]))
    model.load_state_dict({k: weights[k] for k in weights.files})
    order = [("a", "b", "c").index(c) for c in scaling["columns"]]
    xs = (x[:, order] - np.array(scaling["x_mean"])) / np.array(scaling["x_std"])
    want = [scaling["classes"][k] for k in model(xs.astype(np.float32)).numpy().argmax(1)]
    assert doc["predictions"] == want
    accuracy = np.mean([p == NAMES[t] for p, t in zip(doc["predictions"], y)])
    assert doc["score"]["accuracy"] == pytest.approx(accuracy) and accuracy > 0.85
    assert all(0.3 < p <= 1.0 for p in doc["probabilities"])
    out = tmp / "pred.csv"
    proc = _skiff("predict", run_dir, str(tmp / "new.csv"), "--out", str(out), env=env)
    assert proc.returncode == 0 and "accuracy" in proc.stdout, proc.stderr
    rows = list(csv.reader(open(out)))
    at = rows[0].index("grade predicted")  # then each class's probability (round 45 h11)
    assert rows[0][at + 1] == "probability" and len(rows) == 121
    assert all(c.startswith("P(") for c in rows[0][at + 2:]) and len(rows[0]) > at + 3
    assert [r[at] for r in rows[1:]] == want


def test_bad_inputs_are_one_line_each(trained):
    tmp, env, run_dir = trained
    x, y = _rows(5, seed=3)
    _write(tmp / "short.csv", x, y, order=("a", "c", "grade"))
    proc = _skiff("predict", "grades", str(tmp / "short.csv"), env=env)
    assert proc.returncode == 2 and "no column 'b'" in proc.stderr
    (tmp / "bad.csv").write_text("a,b,c\n1,2,3\n1,x,3\n")
    proc = _skiff("predict", "grades", str(tmp / "bad.csv"), env=env)
    assert proc.returncode == 2 and "line 3, column 'b': 'x' is not a number" in proc.stderr
    (tmp / "photos").mkdir(exist_ok=True)  # a folder for a table's model: what it takes
    proc = _skiff("predict", "grades", str(tmp / "photos"), env=env)
    assert proc.returncode == 2 and "is a folder: this model was trained on a table, and " \
        "predicts the rows of a .csv or .tsv file" in proc.stderr, proc.stderr
    proc = _skiff("predict", "no-such-job", str(tmp / "bad.csv"), env=env)
    assert proc.returncode == 2 and "no job 'no-such-job'" in proc.stderr
    proc = _skiff("train", "mlp", "--steps", "2", "--device", "cpu", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    blobs = json.loads(proc.stdout)["job"]["run_dir"]
    proc = _skiff("predict", blobs, str(tmp / "bad.csv"), env=env)
    assert proc.returncode == 2 and "has no table.json" in proc.stderr


def test_a_file_that_gives_the_target_for_some_rows_is_scored_on_those(trained, tmp_path):
    """A new file often has the truth for some rows and gaps for the rest. Before, a gap
    counted as a wrong class (10 right of 10 known showed 83.3% on 12 rows) and a regression
    gave no score at all, silently."""
    from skiff.kernels.train.table_predict import predict_table

    tmp, env, run_dir = trained
    x, y = _rows(60, seed=11)
    _write(tmp_path / "part.csv", x, y)
    lines = (tmp_path / "part.csv").read_text().splitlines()
    lines[1:11] = [ln.rsplit(",", 1)[0] + "," for ln in lines[1:11]]  # ten rows: no truth
    (tmp_path / "part.csv").write_text("\n".join(lines) + "\n")
    got = predict_table(run_dir, tmp_path / "part.csv")
    right = np.mean([p == NAMES[t] for p, t in zip(got.predictions[10:], y[10:])])
    assert got.score["rows"] == 50 and got.score["accuracy"] == pytest.approx(right)
    assert any("scored on the 50 rows that give 'grade' (10 empty" in n for n in got.notes)

    # a regression: y = 2a - b, with the truth of two rows left out
    rng = np.random.default_rng(5)
    a = rng.normal(size=(300, 2))
    body = "".join(f"{p:.4f},{q:.4f},{2 * p - q:.4f}\n" for p, q in a)
    (tmp_path / "reg.csv").write_text("p,q,v\n" + body)
    proc = _skiff("train", "mlp", str(tmp_path / "reg.csv"), "--epochs", "30", "--device",
                  "cpu", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    reg_dir = json.loads(proc.stdout)["job"]["run_dir"]
    new = "p,q,v\n1.0,0.5,\n-1.0,0.0,\n" + body[:body.index("\n", 400) + 1]
    (tmp_path / "new.csv").write_text(new)
    got = predict_table(reg_dir, tmp_path / "new.csv")
    assert got.score and got.score["rows"] == len(new.splitlines()) - 3
    assert got.score["r2"] > 0.9, got.score
