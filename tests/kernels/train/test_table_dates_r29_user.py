"""Date columns of a training table (round 29): they were refused as "free text or an
identifier" (a column of dates holds about as many values as rows), and a table whose only
non-number column was a date took the dates for the classes to predict. Now each date is
days since 1970, month, weekday (and hour): checked against pandas' to_datetime."""

import numpy as np
import pandas as pd
import pytest

from skiff.kernels.train.tables import TableError, apply_encoding, read_table


def _raw(table):
    """The table's features before standardising, by feature name."""
    x = table.x.astype(np.float64) * table.x_std + table.x_mean
    return {name: x[:, j] for j, name in enumerate(table.columns)}


def _oracle(cells, **kw):
    t = pd.to_datetime(pd.Series(cells), utc=True, **kw).dt.tz_localize(None)
    days = (t - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)
    hour = t.dt.hour + t.dt.minute / 60 + t.dt.second / 3600
    return days.to_numpy(), t.dt.month.to_numpy(), t.dt.day_of_week.to_numpy(), hour.to_numpy()


def test_iso_dates_with_times_and_offsets_match_pandas(tmp_path):
    rng = np.random.default_rng(1)
    stamps = pd.Timestamp("2019-03-01") + pd.to_timedelta(rng.integers(0, 2000 * 24, 40),
                                                          unit="h")
    cells = [s.strftime("%Y-%m-%d %H:%M") for s in stamps]
    cells[3] = "2021-06-15T08:30:00+02:00"  # an offset: 06:30 UTC
    cells[7] = "2021-12-31T23:15:00Z"
    y = rng.integers(0, 2, 40)
    lines = ["when,size,label"] + [f"{c},{rng.normal():.3f},{v}" for c, v in zip(cells, y)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    table = read_table(path)
    assert table.target == "label" and table.classes == ["0", "1"]
    got = _raw(table)
    days, month, weekday, hour = _oracle(cells, format="ISO8601")
    np.testing.assert_allclose(got["when (days)"], days, atol=1e-4)
    np.testing.assert_allclose(got["when (month)"], month, atol=1e-4)
    np.testing.assert_allclose(got["when (weekday)"], weekday, atol=1e-4)
    np.testing.assert_allclose(got["when (hour)"], hour, atol=1e-4)
    assert any("dates" in n for n in table.notes)


def test_day_first_dates_a_gap_and_the_target_not_taken_for_the_dates(tmp_path):
    # the date is the one column of words: it used to be taken for the target (classes)
    cells = ["13/01/2024", "02/02/2024", "", "28/02/2024", "01/03/2024", "15/07/2023"]
    sales = [10.5, 12.0, 9.0, 14.5, 13.0, 8.0]
    body = [f"{c},{20 + k},{s}" for k, (c, s) in enumerate(zip(cells, sales))]
    path = tmp_path / "sales.csv"
    path.write_text("day,temp,sales\n" + "\n".join(body) + "\n")
    table = read_table(path)
    assert table.target == "sales" and table.classes is None
    got = _raw(table)
    known = [c for c in cells if c]
    days, month, weekday, _ = _oracle(known, dayfirst=True, format="%d/%m/%Y")
    keep = [k for k, c in enumerate(cells) if c]
    np.testing.assert_allclose(got["day (days)"][keep], days, atol=1e-4)
    np.testing.assert_allclose(got["day (month)"][keep], month, atol=1e-4)
    np.testing.assert_allclose(got["day (weekday)"][keep], weekday, atol=1e-4)
    np.testing.assert_allclose(got["day (days)"][2], days.mean(), atol=1e-4)  # the gap
    assert "day (hour)" not in got  # no cell has a time of day
    # new rows are read as training read them (its order, fill and features)
    spec = table.encoding
    new = {"day": ["04/02/2024", ""], "temp": ["21", "22"]}
    x, notes = apply_encoding("new.csv", spec, lambda c: new[c], [2, 3])
    d2, m2, w2, _ = _oracle(["04/02/2024"], dayfirst=True, format="%d/%m/%Y")
    np.testing.assert_allclose(x[0, :3], [d2[0], m2[0], w2[0]], atol=1e-4)
    np.testing.assert_allclose(x[1, 0], days.mean(), atol=1e-4)
    assert notes and "empty" in notes[0]


def test_impossible_date_is_refused_with_its_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("when,x,label\n2023-02-27,1,a\n2023-02-30,2,b\n2023-03-01,3,a\n"
                    "2023-03-02,4,b\n")
    with pytest.raises(TableError, match=r"line 3, column 'when': '2023-02-30' is not a date"):
        read_table(path)


def test_a_word_among_dates_is_named_as_not_a_date(tmp_path):
    # it was "free text or an identifier, not categories": the column is dates with a typo
    days = pd.date_range("2024-01-01", periods=30, freq="D").strftime("%Y-%m-%d").tolist()
    days[12] = "unknown"
    body = [f"{d},{k},{k % 2}" for k, d in enumerate(days)]
    path = tmp_path / "typo.csv"
    path.write_text("when,x,label\n" + "\n".join(body) + "\n")
    with pytest.raises(TableError, match=r"line 14, column 'when': 'unknown' is not a date"):
        read_table(path)
