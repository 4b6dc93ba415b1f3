"""Date columns of a training table (``2024-03-05``, ``2024-03-05 14:30``, ``05/03/2024``)
as number features, for :mod:`.tables`: a date is not a word to one-hot (a column of them
holds as many values as rows, and was refused as free text) but a point in time.

Each date becomes ``days`` (days since 1970-01-01, with the time of day as a fraction, in UTC
when the cell gives an offset), ``month`` (1 to 12) and ``weekday`` (0 Monday to 6 Sunday),
and ``hour`` (0 to 24, fractional) when some cell gives a time of day: what pandas'
``to_datetime(...).dt`` gives, the test's oracle. Year first (ISO 8601, ``2024/03/05``) or
year last (``05/03/2024``): day first when a first field is above 12, month first when a
second one is, else month first as pandas reads it (a note says so). A missing cell takes the
column's mean of each feature; an impossible date (``2023-02-30``) is refused with its line.
"""

from __future__ import annotations

import datetime as _dt
import re

import numpy as np

__all__ = ["looks_like_date", "date_order", "date_features"]

_TIME = r"(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?"
_YEAR_FIRST = re.compile(r"^(\d{4})([-/.])(\d{1,2})\2(\d{1,2})" + _TIME + "$")
_YEAR_LAST = re.compile(r"^(\d{1,2})([-/.])(\d{1,2})\2(\d{4})" + _TIME + "$")
_EPOCH = _dt.datetime(1970, 1, 1)


def looks_like_date(cell: str) -> bool:
    """The shape of a date (year first or last, with an optional time and offset)."""
    cell = cell.strip()
    return bool(_YEAR_FIRST.match(cell) or _YEAR_LAST.match(cell))


def date_order(cells) -> tuple[str, str | None]:
    """``(order, note)``: ``"ymd"``, ``"dmy"`` or ``"mdy"`` for the column's cells, and a note
    when a year-last column could be read either way (then month first, but day first when
    every such cell is written with points: ``05.03.2024``)."""
    first = second = 0
    year_last = False
    marks = set()
    for c in cells:
        m = _YEAR_LAST.match(c.strip())
        if m:
            year_last = True
            first, second = max(first, int(m.group(1))), max(second, int(m.group(3)))
            marks.add(m.group(2))
    if not year_last:
        return "ymd", None
    if first > 12:
        return "dmy", None
    if second > 12:
        return "mdy", None
    if marks == {"."}:  # 05.03.2024 is written day first (de, fr-CH, ru...): month-first
        # with points is no locale's way; it was read as the 3rd of May
        return "dmy", ("read as day.month.year, as dates with points are written (no day "
                       "above 12 tells it apart from month.day.year)")
    return "mdy", "read as month/day/year (no day above 12 tells it apart from day/month/year)"


def _parse(cell: str, order: str) -> _dt.datetime | None:
    """The cell as a naive UTC datetime, None when it is no date of this order (or impossible)."""
    cell = cell.strip()
    m = _YEAR_FIRST.match(cell)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(3)), int(m.group(4))
    else:
        m = _YEAR_LAST.match(cell)
        if m is None:
            return None
        a, b, y = int(m.group(1)), int(m.group(3)), int(m.group(4))
        d, mo = (a, b) if order == "dmy" else (b, a)
    hh, mm, ss, frac, zone = m.group(5, 6, 7, 8, 9)
    try:
        t = _dt.datetime(y, mo, d, int(hh or 0), int(mm or 0), int(ss or 0),
                         int((frac or "0")[:6].ljust(6, "0")))
    except ValueError:
        return None
    if zone and zone != "Z":  # 14:30+02:00 is 12:30 UTC
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        t -= sign * _dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return t


def date_features(file: str, name: str, cells, lines, order: str, missing,
                  fill=None, hour: bool | None = None, error=ValueError):
    """``(features (rows x k), feature names, fill, hour)`` of a date column read in
    ``order``; ``missing(cell)`` says which cells are gaps. Training passes no ``fill`` (the
    known rows' means) and no ``hour`` (kept when some cell has a time of day); predict
    passes training's so that new rows get the same features. ``error``: the class raised
    for a cell that is no date (tables' TableError)."""
    parsed = {c: None if missing(c) else _parse(c, order) for c in set(cells)}  # once each
    bad = next((k for k, c in enumerate(cells) if parsed[c] is None and not missing(c)), None)
    if bad is not None:
        raise error(f"{file}, line {lines[bad]}, column {name!r}: {cells[bad]!r} is not a "
                    f"date (the column's other cells are dates, read {order_text(order)})")
    known = [t for t in parsed.values() if t is not None]
    if not known:
        raise error(f"{file}, column {name!r}: every cell is empty")
    if hour is None:
        hour = any(t.time() != _dt.time(0) for t in known)
    features = {}
    for c, t in parsed.items():
        if t is None:
            features[c] = (np.nan,) * (3 + hour)
            continue
        part = ((t - _EPOCH) / _dt.timedelta(days=1), t.month, t.weekday())
        features[c] = part + ((t.hour + t.minute / 60 + (t.second + t.microsecond / 1e6)
                               / 3600,) if hour else ())
    rows = np.array([features[c] for c in cells], np.float64).reshape(len(cells), 3 + hour)
    if fill is None:
        fill = np.nanmean(rows, axis=0).tolist()
    rows = np.where(np.isnan(rows), np.asarray(fill, np.float64)[None, :], rows)
    names = [f"{name} ({part})" for part in ("days", "month", "weekday", "hour")[:3 + hour]]
    return rows, names, [float(v) for v in fill], bool(hour)


def order_text(order: str) -> str:
    return {"ymd": "year first", "dmy": "day/month/year", "mdy": "month/day/year"}[order]
