"""``python -m skiff predict JOB new.csv``: a table model's predictions for another file
(round 21: a terminal could train mlp on a CSV but not use it on new rows)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

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
    return subprocess.run([sys.executable, "-m", "skiff", *args], capture_output=True,
                          text=True, timeout=300, env=env)


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
    assert rows[0][-2:] == ["grade predicted", "probability"] and len(rows) == 121
    assert [r[-2] for r in rows[1:]] == want


def test_bad_inputs_are_one_line_each(trained):
    tmp, env, run_dir = trained
    x, y = _rows(5, seed=3)
    _write(tmp / "short.csv", x, y, order=("a", "c", "grade"))
    proc = _skiff("predict", "grades", str(tmp / "short.csv"), env=env)
    assert proc.returncode == 2 and "no column 'b'" in proc.stderr
    (tmp / "bad.csv").write_text("a,b,c\n1,2,3\n1,x,3\n")
    proc = _skiff("predict", "grades", str(tmp / "bad.csv"), env=env)
    assert proc.returncode == 2 and "line 3, column 'b': 'x' is not a number" in proc.stderr
    proc = _skiff("predict", "no-such-job", str(tmp / "bad.csv"), env=env)
    assert proc.returncode == 2 and "no job 'no-such-job'" in proc.stderr
    proc = _skiff("train", "mlp", "--steps", "2", "--device", "cpu", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    blobs = json.loads(proc.stdout)["job"]["run_dir"]
    proc = _skiff("predict", blobs, str(tmp / "bad.csv"), env=env)
    assert proc.returncode == 2 and "has no table.json" in proc.stderr
