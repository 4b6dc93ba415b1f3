"""A user's own table files (round 48 h20), each read against pandas or the file itself:
thousands groups in a semicolon file, an error's line after a quoted cell over two lines,
every spelling of a missing category one value, an identifier's and a constant column
said, an Excel file refused with the way to read it."""

import numpy as np
import pytest

from skiff.kernels.train.tables import TableError, apply_encoding, read_rows, read_table

pd = pytest.importorskip("pandas")


def _raw(table):
    """The features as the file held them (before scaling)."""
    return table.x.astype(np.float64) * table.x_std + table.x_mean


def test_thousands_groups_of_a_semicolon_file_read_as_pandas_reads_them(tmp_path):
    # German: 1.234,5 (and 2.000 beside it is two thousand); French: 1 234,5 and a no-break
    # space; a column of plain decimal commas stays as it was
    text = ("price;area;hall;small;label\n"
            "1.234,5;1 200,25;1\u00a0200;0,5;x\n"
            "2.000;950;950,5;1,25;y\n"
            "-3.250.000,75;1 050;1\u00a0050;2,0;x\n"
            "12,5;2 000;2\u00a0000,5;3,75;y\n")
    path = tmp_path / "de.csv"
    path.write_bytes(text.encode("utf-8"))
    table = read_table(path)
    assert table.columns == ["price", "area", "hall", "small"]
    german = pd.read_csv(path, sep=";", decimal=",", thousands=".")
    french = pd.read_csv(path, sep=";", decimal=",", thousands=" ")
    spaced = pd.read_csv(path, sep=";", decimal=",", thousands="\u00a0", engine="python")
    want = np.column_stack([german["price"], french["area"], spaced["hall"],
                            german["small"]]).astype(np.float64)
    # float32 features mapped back: a relative 1e-6 of values up to 3.25e6 (float32's eps
    # 1.2e-7 times ten)
    np.testing.assert_allclose(_raw(table), want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    assert any("grouped in thousands" in n and "'price'" in n for n in table.notes), table.notes
    # predict reads a new file's cells the same way
    header, body = read_rows(path, table.decimal)
    assert [cells[0] for _, cells in body] == ["1234.5", "2000", "-3250000.75", "12.5"]


def test_an_error_names_the_line_after_a_quoted_cell_over_two_lines(tmp_path):
    text = 'note,a,label\n"first\nsecond",1,x\n"b",2,y\n"c",zz,x\n"d",3,y\n"e",4,x\n'
    path = tmp_path / "notes.csv"
    path.write_text(text)
    line = next(k for k, t in enumerate(text.splitlines(), 1) if ",zz," in t)  # the file's
    assert line == 5
    with pytest.raises(TableError, match=rf"line {line}, column 'a': 'zz'"):
        read_table(path, drop="note")


def test_every_missing_spelling_of_a_category_is_one_value_as_pandas_reads_them(tmp_path):
    cells = ["red", "", "NA", "n/a", "blue", "red", "?", "blue", "red", "blue"]
    rows = [f"{c},{i},{'xy'[i % 2]}" for i, c in enumerate(cells)]
    path = tmp_path / "colours.csv"
    path.write_text("colour,a,label\n" + "\n".join(rows) + "\n")
    table = read_table(path)
    df = pd.read_csv(path, na_values=["?"])
    dummies = pd.get_dummies(df["colour"], dummy_na=True).astype(float)
    assert table.columns == ["colour=(empty)", "colour=blue", "colour=red", "a"]
    want = np.column_stack([dummies[np.nan], dummies["blue"], dummies["red"], df["a"]])
    np.testing.assert_allclose(_raw(table), want, atol=1e-5)  # 0/1 and small whole numbers
    gaps = int(df["colour"].isna().sum())
    assert gaps == 4 and any(f"{gaps} missing cells" in n for n in table.notes), table.notes
    # predict: 'NA' and '?' are training's empty cells, not values it never saw
    new, notes = apply_encoding("new.csv", table.encoding,
                                {"colour": ["?", "blue", "NA"], "a": ["1", "2", "3"]}.get,
                                [2, 3, 4])
    np.testing.assert_array_equal(new[:, :3], [[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    assert not notes, notes


def test_an_identifier_column_and_a_constant_one_are_said(tmp_path):
    n = 12
    rows = [f"{1000 + 7 * i},{i * 3},3,{i % 4},{'xy'[i % 2]}" for i in range(n)]
    path = tmp_path / "customers.csv"
    path.write_text("customer_id,paid,k,a,label\n" + "\n".join(rows) + "\n")
    table = read_table(path)
    df = pd.read_csv(path)
    unique = [c for c in ("customer_id", "paid") if df[c].nunique() == len(df)]
    constant = [c for c in df.columns if df[c].nunique() == 1]
    assert unique == ["customer_id", "paid"] and constant == ["k"]
    said = " | ".join(table.notes)
    # an identifier's name and a number per row; 'paid' is a quantity, named as one
    assert "column 'customer_id': a different whole number in every row" in said, said
    assert "'paid'" not in said and "'a'" not in said
    assert "feature 'k' (3): one value in every row" in said


def test_an_excel_file_is_refused_with_the_way_to_read_it(tmp_path):
    path = tmp_path / "sales.xlsx"
    path.write_bytes(b"PK\x03\x04" + bytes(60))  # a zip's start, as an .xlsx begins
    with pytest.raises(TableError, match=r"sales.xlsx: not a .csv.*read_excel"):
        read_table(path)


def test_rows_of_empty_cells_are_left_out_and_said_as_pandas_finds_them(tmp_path):
    text = "a,b,label\n1,2,x\n,,\n3,4,y\n\n5,6,x\n , ,\n7,8,y\n"
    path = tmp_path / "sheet.csv"
    path.write_text(text)
    table = read_table(path)
    df = pd.read_csv(path, skipinitialspace=True)  # the empty line skipped, ' ' read as NaN
    empty = df.isna().all(axis=1)
    # the file's lines of separators only (an empty line is no row in either reading)
    lines = [k for k, t in enumerate(text.splitlines(), 1) if t and not t.replace(",", "").strip()]
    assert lines == [3, 7] and len(table.x) == len(df) - int(empty.sum()) == 4
    assert "2 rows of empty cells only left out (lines 3, 7)" in table.notes, table.notes
