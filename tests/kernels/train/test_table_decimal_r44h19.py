"""Round 44 (h19): a comma-separated table whose numbers have decimal commas, quoted (a
spreadsheet in a German locale: ``"0,126","1,49"``), or a TSV with ``0,126``. ``0,126`` was
read as 126 (a thousands grouping) and ``1,49`` refused as a word; a regression target of
``12,5`` became classes. The oracle is pandas' ``read_csv(..., decimal=",")``."""

import io

import numpy as np
import pandas as pd

from skiff.kernels.train.tables import read_rows, read_table

ROWS = [("0,126", "-0,132", "red", "12,5"), ("1,304", "1,49", "blue", "3,25"),
        ("-1,010", "0,041", "red", "7"), ("2,5", "-0,654", "blue", "9,75"),
        ("0,362", "1,960", "red", "1,5"), ("1,458", "-0,004", "blue", "4,125")]


def _write(path, sep, quote):
    q = '"' if quote else ""
    path.write_text(sep.join(["a", "b", "colour", "price"]) + "\n" + "".join(
        sep.join(f"{q}{c}{q}" for c in r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def _oracle(path, sep):
    return pd.read_csv(io.StringIO(path.read_text()), sep=sep, decimal=",")


def test_quoted_decimal_commas_in_a_comma_csv_read_as_pandas(tmp_path):
    path = _write(tmp_path / "de.csv", ",", quote=True)
    table = read_table(path, target="price")
    ref = _oracle(path, ",")
    # a, b as numbers (not 126 and 1304, not refused), colour one-hot, price a regression
    assert table.classes is None
    np.testing.assert_allclose(table.x_mean[:2], ref[["a", "b"]].mean().to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(table.x_std[:2], ref[["a", "b"]].std(ddof=0).to_numpy(),
                               rtol=1e-12)
    assert table.y_mean == np.float64(ref["price"].mean())
    assert any("decimal commas" in n for n in table.notes), table.notes


def test_tsv_decimal_commas_and_predict_rows(tmp_path):
    path = _write(tmp_path / "de.tsv", "\t", quote=False)
    table = read_table(path, target="price")
    ref = _oracle(path, "\t")
    np.testing.assert_allclose(table.x_mean[:2], ref[["a", "b"]].mean().to_numpy(), rtol=1e-12)
    # predict reads new rows as training did: the cells it hands on are numbers with points
    header, rows = read_rows(_write(tmp_path / "new.csv", ",", quote=True))
    assert header == ["a", "b", "colour", "price"]
    got = np.array([[float(r[0]), float(r[1])] for _, r in rows])
    np.testing.assert_allclose(got, ref[["a", "b"]].to_numpy(), rtol=1e-12)


def test_thousands_stay_thousands(tmp_path):
    # "1,200" alone is an amount (and "0,5" never is one): the column is not decimal commas
    path = tmp_path / "amounts.csv"
    path.write_text('income,label\n"1,200",a\n"3,400",b\n"12,000",a\n"7,100",b\n')
    table = read_table(path)
    assert table.x_mean[0] == np.mean([1200, 3400, 12000, 7100])
    assert not any("decimal commas" in n for n in table.notes)
