"""Round 31: a table job with ``--val-split`` scales its features and fills its gaps from the
training rows alone, as scikit-learn users fit ``StandardScaler`` / ``SimpleImputer`` on the
training split (the validation rows' values leaked into the means: ``table.json`` said
``rows: 400`` and its means were over all 400 rows under ``--val-split 0.2``). The oracle is
the definition, in numpy: the rows the Trainer trains on (``split_off`` of the job's rows)
have features of mean 0 and deviation 1, and a gap holds the mean of the known training
cells of its column."""

from __future__ import annotations

import numpy as np

from skiff.kernels.train.data import split_off
from skiff.kernels.train.entry import _table_parts, training_rows
from skiff.kernels.train.tables import read_table


def _csv(path, n=80):
    rng = np.random.default_rng(3)
    lines = ["size,signup,plan,price"]
    raw = []
    for i in range(n):
        size = "" if i % 7 == 3 else f"{rng.normal(50, 20):.3f}"
        day = "" if i % 9 == 4 else f"2024-{1 + i % 12:02d}-{1 + i % 27:02d}"
        plan = rng.choice(["a", "b"])
        lines.append(f"{size},{day},{plan},{rng.normal(10, 3):.3f}")
        raw.append(None if not size else float(size))
    path.write_text("\n".join(lines) + "\n")
    return raw


def test_training_rows_are_scaled_to_mean_0_and_deviation_1(tmp_path):
    path = tmp_path / "t.csv"
    raw = _csv(path)
    parts = _table_parts(str(path), seed=5, target="price", val_split=0.25)
    train, val = split_off(parts["dataset"], 0.25)
    x = train.dataset.arrays[0][train.index].astype(np.float64)
    np.testing.assert_allclose(x.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(x.std(0), 1.0, atol=1e-5)
    table = parts["table"]
    rows = training_rows(5, 0.25)(len(raw))
    known = [raw[i] for i in rows if raw[i] is not None]
    size = next(e for e in table.encoding if e["name"] == "size")
    np.testing.assert_allclose(size["fill"], np.mean(known), rtol=1e-12)
    # the regression target too: its training rows' mean and deviation
    y = train.dataset.arrays[1][train.index].astype(np.float64)
    np.testing.assert_allclose([y.mean(), y.std()], [0.0, 1.0], atol=1e-5)
    # table.json says how many rows the scaling is of
    doc = table.to_json()
    assert doc["rows"] == 80 and doc["scaled_on_rows"] == len(rows) == 60


def test_without_a_split_every_row_is_used(tmp_path):
    path = tmp_path / "t.csv"
    _csv(path)
    a, b = read_table(path), read_table(path, fit_rows=None)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_allclose(a.x.astype(np.float64).mean(0), 0.0, atol=1e-5)
    assert training_rows(5, None) is None
    assert a.to_json()["scaled_on_rows"] == a.to_json()["rows"] == 80
