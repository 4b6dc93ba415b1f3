"""Rows sorted by class (iris.csv is: 50 setosa, 50 versicolor, 50 virginica) and a held-out
tail (round 29): ``train mlp iris.csv --val-split 0.2`` validated on virginica only and said
"accuracy 100.0%" (its per-class support: 0, 0, 30). A table job now orders the rows by its
seed first, as an image folder's are; arrays given to ``Trainer.train(val_split=)`` keep
Keras' in-order split, with a warning when the tail holds classes training lacks or one
class only. Oracle: the classes counted in the file and in the tail with numpy."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

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


def _sorted(n_per=50, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n_per)
    x = (rng.normal(size=(3 * n_per, 4)) + y[:, None]).astype(np.float32)
    return x, y


@pytest.mark.parametrize("fraction, needle", [(0.2, "hold class 2 only"),
                                              (0.4, "hold class 2 that the first rows lack")])
def test_a_sorted_tail_is_warned_about(fraction, needle):
    x, y = _sorted()
    tail = y[len(y) - int(round(len(y) * fraction)):]
    head = y[:len(y) - len(tail)]
    assert len(np.unique(tail)) == 1 or np.setdiff1d(tail, head).size  # what numpy sees
    model = nn.Sequential(nn.Linear(4, 3))
    with pytest.warns(UserWarning, match=needle):
        skiff.Trainer(model).train((x, y), epochs=1, val_split=fraction)


def test_shuffled_rows_are_not_warned_about():
    x, y = _sorted()
    p = np.random.default_rng(0).permutation(len(y))
    assert set(np.unique(y[p][-30:])) == {0, 1, 2}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        skiff.Trainer(nn.Sequential(nn.Linear(4, 3))).train((x[p], y[p]), epochs=1,
                                                            val_split=0.2)


@pytest.mark.slow
def test_a_table_job_on_a_sorted_file_validates_every_class(tmp_path, capsys, monkeypatch):
    x, y = _sorted()
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    path = tmp_path / "iris.csv"
    path.write_text("a,b,c,d,species\n" + "\n".join(
        ",".join(f"{v:.3f}" for v in row) + f",{n}" for row, n in zip(x, names)) + "\n")
    out = _skiff(capsys, monkeypatch, tmp_path, "train", "mlp", path, "--epochs", "3",
                 "--val-split", "0.2", "--json")
    run_dir = json.loads(out)["job"]["run_dir"]
    metrics = json.loads(open(os.path.join(run_dir, "metrics.json")).read())
    assert metrics["per_class"]["class"] == sorted(set(names))
    support = metrics["per_class"]["support"]
    assert sum(support) == 30 and min(support) > 0, support  # before: [0, 0, 30]
