"""Round 35 (h8), a new user's first table: ``python -m skiff train mlp data.csv`` trains
one pass over the data (the kernel's default when neither --epochs nor --steps is given);
on a linear table its model predicted R^2 -0.01 and the summary did not say why. It now
says "one pass over the data ...: --epochs N trains longer". The oracle of "one pass": the
same job with ``--epochs 1`` takes the same number of steps (and says nothing)."""

from __future__ import annotations

import json

import numpy as np

from skiff.cli import main

HINT = "one pass over the data (neither --epochs nor --steps given): --epochs N trains longer"


def _table(path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 2))
    y = 3 * x[:, 0] - 2 * x[:, 1]
    rows = "\n".join(f"{a:.4f},{b:.4f},{c:.4f}" for (a, b), c in zip(x, y))
    path.write_text("x1,x2,price\n" + rows + "\n")


def _run(capsys, words):
    capsys.readouterr()
    assert main(["train", "mlp", *words]) == 0
    out = capsys.readouterr()
    return out.out, out.out + out.err


def test_the_default_pass_is_said(runs_dir, tmp_path, capsys):
    _table(tmp_path / "t.csv")
    _, default = _run(capsys, [str(tmp_path / "t.csv"), "--target", "price"])
    assert HINT in default
    doc, one = _run(capsys, [str(tmp_path / "t.csv"), "--target", "price", "--epochs", "1",
                             "--json"])
    doc = json.loads(doc)
    assert HINT not in one
    steps = int(default.split(" steps, final loss")[0].split()[-1].replace(",", ""))
    assert steps == doc["result"]["steps"]
    assert HINT not in _run(capsys, [str(tmp_path / "t.csv"), "--target", "price",
                                     "--steps", "3"])[1]
