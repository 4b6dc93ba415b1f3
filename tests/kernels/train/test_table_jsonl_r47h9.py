"""Round 47 (h9): a JSON-lines table (``.jsonl``) trains ``mlp`` and is predicted as a CSV is.

``python -m skiff train mlp sales.jsonl --target price`` was refused ("sales.jsonl is a jsonl
table, which mlp does not read: ... pd.read_json(...).to_csv(...)"), and ``predict`` read
.csv/.tsv only. The records are read as a CSV's rows: the keys the columns (a key a record
lacks and ``null`` are gaps), numbers, words, dates and booleans encoded as a CSV's.
Oracle: pandas' ``read_json(lines=True)`` of the same file (each number column's mean fill,
the one-hot columns, the rows), the features de-standardised (float32: to 1e-6). The command
line's train and predict of a .jsonl: test_table_text_r47h9.py (one CLI run checks both, its
text column read as words)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from skiff.kernels.train.tables import read_table  # noqa: E402


def _write(path, n=12):
    rng = np.random.default_rng(47)
    with open(path, "w") as f:
        for i in range(n):
            r = {"date": f"2024-0{1 + i % 9}-{10 + i}", "temp": round(float(rng.normal(20, 5)), 2),
                 "humidity": None if i % 4 == 1 else round(float(rng.uniform(0.2, 0.9)), 3),
                 "city": "abc"[i % 3], "price": round(float(rng.normal(100, 10)), 2)}
            if i == 5:
                del r["temp"]  # a key a record lacks: a gap
            if i == 7:
                f.write("\n")  # a blank line: skipped
            f.write(json.dumps(r) + "\n")
    return path


def test_a_jsonl_table_reads_as_pandas_reads_it(tmp_path):
    path = _write(tmp_path / "sales.jsonl")
    table = read_table(path, target="price")
    df = pd.read_json(path, lines=True, dtype=False)
    assert table.target == "price" and len(table.x) == len(df)
    y = np.asarray(table.y, np.float64).reshape(-1) * table.y_std + table.y_mean
    np.testing.assert_allclose(y, df["price"].to_numpy(), rtol=1e-6)
    x = table.x.astype(np.float64) * table.x_std + table.x_mean
    col = {name: x[:, j] for j, name in enumerate(table.columns)}
    for name in ("temp", "humidity"):  # gaps filled with the column's mean, as said
        want = df[name].fillna(df[name].mean()).to_numpy()
        np.testing.assert_allclose(col[name], want, rtol=1e-6, err_msg=name)  # float32 x
        assert any(f"column {name!r}: {df[name].isna().sum()} empty" in n for n in table.notes)
    for v in "abc":
        np.testing.assert_allclose(col[f"city={v}"], (df["city"] == v).to_numpy(float), atol=1e-6)
    assert {"date (days)", "date (month)", "date (weekday)"} <= set(table.columns)


def test_a_line_that_is_not_an_object_is_named(tmp_path):
    from skiff.kernels.train.tables import TableError

    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1, "y": 2}\n[1, 2]\n')
    with pytest.raises(TableError, match=r"bad.jsonl, line 2: a JSON list, not an object"):
        read_table(path)
