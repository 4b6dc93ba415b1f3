"""Cells of a user's table that read wrong before round 48 (h20).

``grouped_commas``: a semicolon file (a spreadsheet's export in a German, French or Italian
locale) writes a thousand and a quarter ``1.234,25`` or ``1 234,25``: such a cell was "not a
number" (only ``1234,25`` was read). pandas reads them with ``read_csv(sep=";", decimal=",",
thousands=".")``. A column holding a cell that can only be a grouped number (a decimal comma
after the groups, or groups of spaces) reads its ``2.000`` as two thousand too, as its
neighbours say.

``lines_of``: each record's first line in the file: a quoted cell that spans lines
(``"first\\nsecond"``) made every later error name a line too early.

``column_notes``: what a feature column holds that a user should know: one value in every
row (it tells the rows nothing), or a different whole number in every row under an
identifier's name (``customer_id``: the model learns the numbering, not the customer).
"""

from __future__ import annotations

import re
import shlex

import numpy as np

__all__ = ["grouped_commas", "lines_of", "records", "blank_note", "column_notes"]

_SPACES = " \u00a0\u202f"  # a space, a no-break space, a narrow no-break space (French)
_GROUPED = re.compile(r"^([+-]?)([1-9]\d{0,2}(?:([.\u0020\u00a0\u202f])\d{3})(?:\3\d{3})*)"
                      r"(,\d+)?$")


def _grouped(cell: str):
    """``(number text, sure)`` of a grouped cell (``1.234,5`` -> ``1234.5``, sure: only a
    grouped number reads so), or None."""
    m = _GROUPED.match(cell)
    if m is None:
        return None
    sign, digits, mark, frac = m.groups()
    sure = frac is not None or mark in _SPACES
    return sign + digits.replace(mark, "") + (frac or "").replace(",", "."), sure


def grouped_commas(rows: list, notes: list | None = None) -> list:
    """``rows`` (``(line, cells)`` of a semicolon file) with each grouped number of a column
    that holds one for sure made plain (``1.234,5`` -> ``1234.5``; ``2.000`` -> ``2000``
    there), the column named in ``notes``."""
    if not rows:
        return rows
    width = max(len(cells) for _, cells in rows)
    columns = [j for j in range(width) if any(
        j < len(cells) and (g := _grouped(cells[j])) is not None and g[1]
        for _, cells in rows)]
    if not columns:
        return rows
    out, changed, example = [], dict.fromkeys(columns, 0), None
    for line, cells in rows:
        cells = list(cells)
        for j in columns:
            g = _grouped(cells[j]) if j < len(cells) else None
            if g is not None:
                example = example or (g[1] and (cells[j], g[0]))
                cells[j] = g[0]
                changed[j] += 1
        out.append((line, cells))
    if notes is not None:
        first = rows[0][1]
        named = [repr(first[j]) if j < len(first) and _grouped(first[j]) is None
                 else str(j + 1) for j in columns]
        notes.append(f"column{'s' if len(columns) > 1 else ''} {', '.join(named)}: numbers "
                     f"grouped in thousands ({example[0]!r} is {example[1]} there; "
                     f"{sum(changed.values())} cells)")
    return out


def lines_of(reader):
    """``(first line, cells)`` of each record of a ``csv.reader``: a record's first line, not
    its count (a quoted cell over two lines is one record on two lines)."""
    end = 0
    for cells in reader:
        yield end + 1, cells
        end = reader.line_num


# "id", "customer_id", "ID 2", "uuid"; "customerId", "userID" (not "paid", "valid", "acid")
def records(reader, blank: list):
    """``(first line, stripped cells)`` of each record of a ``csv.reader`` with a value; the
    first lines of those of separators only (``,,,``: a spreadsheet's emptied row) go to
    ``blank`` (they were dropped unsaid; an empty line is no record and is not counted)."""
    for line, r in lines_of(reader):
        cells = [c.strip() for c in r]
        if any(cells):
            yield line, cells
        elif len(r) > 1:
            blank.append(line)


def blank_note(blank: list) -> str:
    many = len(blank) > 1
    return (f"{len(blank)} row{'s' if many else ''} of empty cells only left out (line"
            f"{'s' if many else ''} {', '.join(map(str, blank[:5]))}"
            f"{' ...' if len(blank) > 5 else ''})")


_ID_NAME = re.compile(r"(?:^|[^a-z])id$|^id(?:[^a-z]|$)|^(?:uuid|key)$", re.I)
_CAMEL_ID = re.compile(r"[a-z](?:Id|ID)$")


def column_notes(x: np.ndarray, columns: list[str], fit=None) -> list[str]:
    """Notes on the feature columns of ``x`` (the file's values, before scaling; ``fit``: the
    rows the scaling is fitted on): a column of one value, and an identifier's column."""
    notes = []
    rows = x if fit is None else x[fit]
    if len(rows) < 2:
        return notes
    same = np.flatnonzero(rows.min(axis=0) == rows.max(axis=0)).tolist()  # no rows-size copy
    if same:
        shown = ", ".join(f"{columns[j]!r} ({rows[0, j]:g})" for j in same[:5])
        notes.append(f"feature{'s' if len(same) > 1 else ''} {shown}"
                     f"{' ...' if len(same) > 5 else ''}: one value in every "
                     f"{'training ' if fit is not None else ''}row, "
                     "so it tells the rows nothing (kept, as zeros once scaled)")
    for j, name in enumerate(columns):
        col = x[:, j]
        named = _ID_NAME.search(name.strip()) or _CAMEL_ID.search(name.strip())
        if (named and len(col) >= 3 and np.all(col == np.round(col))
                and len(np.unique(col)) == len(col)):
            notes.append(f"column {name!r}: a different whole number in every row, named as "
                         "an identifier: the model learns the numbering, not what the rows "
                         f"hold; leave it out if it is one: --drop {shlex.quote(name)} "
                         "(read_table(..., drop=...))")
    return notes
