"""Round 44 (h19): dates written with points (``05.03.2024``, a German or Swiss spreadsheet)
whose days are all 12 or less were read month first: the 5th of March as the 3rd of May.
Dates with points are written day first (CLDR's de pattern ``dd.MM.y``); the oracle is
``datetime.strptime(cell, "%d.%m.%Y")``. Slashes stay month first when ambiguous."""

import datetime as dt

import numpy as np

from skiff.kernels.train.tables import read_table

CELLS = ["05.03.2024", "11.01.2024", "02.12.2023", "09.07.2024", "12.10.2024", "01.02.2024"]


def _table(tmp_path, cells):
    path = tmp_path / "orders.csv"
    path.write_text("when;amount;label\n" + "".join(
        f"{c};{k},5;{'ab'[k % 2]}\n" for k, c in enumerate(cells)))
    return read_table(path)


def test_points_are_day_first(tmp_path):
    table = _table(tmp_path, CELLS)
    x = table.x.astype(np.float64) * table.x_std + table.x_mean
    want = [dt.datetime.strptime(c, "%d.%m.%Y") for c in CELLS]
    days = [(w - dt.datetime(1970, 1, 1)).days for w in want]
    np.testing.assert_allclose(x[:, 0], days, atol=1e-3)
    np.testing.assert_allclose(x[:, 1], [w.month for w in want], atol=1e-4)
    assert any("day.month.year" in n for n in table.notes), table.notes


def test_slashes_stay_month_first(tmp_path):
    table = _table(tmp_path, [c.replace(".", "/") for c in CELLS])
    x = table.x.astype(np.float64) * table.x_std + table.x_mean
    want = [dt.datetime.strptime(c, "%d.%m.%Y") for c in CELLS]
    np.testing.assert_allclose(x[:, 1], [w.day for w in want], atol=1e-4)  # month first


def test_new_rows_in_another_order_than_isos(tmp_path):
    # trained on ISO dates (a DataFrame's, or a database export's); new rows say 13.01.2024:
    # refused as "not a date (read year first)", now read day first as such a file is
    from skiff.kernels.train.tables import apply_encoding

    iso = _table(tmp_path, [f"2024-{k + 1:02d}-{k + 10:02d}" for k in range(6)])
    spec = next(e for e in iso.encoding if e["kind"] == "date")
    new = ["13.01.2024", "05.03.2024", ""]
    x, notes = apply_encoding("new.csv", [spec], lambda _: new, [2, 3, 4])
    want = [dt.datetime.strptime(c, "%d.%m.%Y") for c in new[:2]]
    np.testing.assert_allclose(x[:2, 0], [(w - dt.datetime(1970, 1, 1)).days for w in want],
                               atol=1e-3)
    np.testing.assert_allclose(x[:2, 1], [w.month for w in want])
    assert any("day/month/year (training's were year first)" in n for n in notes), notes
