"""Round 44 (h19): a column without a single value. A spreadsheet exported with a trailing
separator (``x;colour;price;`` on every line, Excel in a European locale, with a BOM and CRLF)
has an unnamed last column of nothing: it was "column '': every cell is empty", and without a
``label`` column it was the target. A ``notes`` column nobody filled was refused the same way;
scikit-learn's SimpleImputer drops such a column. The oracle is pandas' ``read_csv`` with the
all-empty columns dropped (``dropna(axis=1, how="all")``)."""

import io

import numpy as np
import pandas as pd
import pytest

from skiff.kernels.train.tables import TableError, read_table


def _excel(tmp_path):
    rng = np.random.default_rng(3)
    lines = ["x;notes;rooms;price;"]
    for _ in range(24):
        x, rooms = rng.normal(), int(rng.integers(1, 6))
        lines.append(f"{x:.3f};;{rooms};{2 * x + rooms:.3f};".replace(".", ","))
    path = tmp_path / "export.csv"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-8-sig"))
    return path


def test_trailing_separator_and_empty_column_left_out(tmp_path):
    path = _excel(tmp_path)
    table = read_table(path)
    ref = pd.read_csv(io.StringIO(path.read_text(encoding="utf-8-sig")), sep=";",
                      decimal=",").dropna(axis=1, how="all")
    assert list(ref.columns) == ["x", "rooms", "price"]
    assert table.target == "price" and table.classes is None  # a regression, not ''
    assert table.columns == ["x", "rooms"]
    assert table.y_mean == pytest.approx(ref["price"].mean(), rel=1e-12)
    np.testing.assert_allclose(table.x_mean, ref[["x", "rooms"]].mean().to_numpy(), rtol=1e-12)
    said = " ".join(table.notes)
    assert "'notes'" in said and "5 (unnamed)" in said and "every cell is empty" in said


def test_an_empty_column_as_the_target_is_still_refused(tmp_path):
    with pytest.raises(TableError, match="the target"):
        read_table(_excel(tmp_path), target="notes")
    only = tmp_path / "only.csv"
    only.write_text("a,b,label\n,,x\n,,y\n")
    with pytest.raises(TableError, match="every cell empty"):
        read_table(only)
