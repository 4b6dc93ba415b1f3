"""A page's rows as a grid of columns, for ``--out FILE.csv``.

The layout gives each line its row (a table's cells share one); written as they come, a
row with an empty cell shifts the cells after it a column left ("Netto, € 5.116,05" under
"Menge" instead of the amount). Here each run of consecutive rows of two or more cells is a
table: its columns are the spans of the cells of its fullest rows (those with the most
cells), and every row of the run puts each cell in the column it overlaps most, empty cells
left empty. A run whose columns cannot be told apart (the fullest rows disagree, two cells
of a row fall in one column) is written as it comes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["grid_rows"]


def grid_rows(lines: list[dict]) -> list[list[str]]:
    """The CSV rows of one page's ``lines`` (JSON records: ``box``, ``text``, ``row``)."""
    rows: dict[int, list[dict]] = {}
    for k, line in enumerate(lines):
        rows.setdefault(int(line.get("row", k)), []).append(line)
    ordered = [rows[r] for r in sorted(rows)]
    out: list[list[str]] = []
    k = 0
    while k < len(ordered):
        end = k
        while end < len(ordered) and len(ordered[end]) >= 2:
            end += 1
        if end - k >= 2:
            out.extend(_table(ordered[k:end]))
            k = end
        else:
            out.append([line["text"] for line in ordered[k]])
            k += 1
    return out


def _extent(line: dict) -> tuple[float, float]:
    xs = [float(p[0]) for p in line.get("box") or [[0, 0]]]
    return min(xs), max(xs)


def _table(rows: list[list[dict]]) -> list[list[str]]:
    """The rows of one table placed in its columns, or as they come (see the module)."""
    plain = [[line["text"] for line in row] for row in rows]
    spans = _columns(rows)
    if spans is None:
        return plain
    flush = _flush_right(rows, len(spans))
    out = []
    for row in rows:
        cells = [""] * len(spans)
        for line in row:
            j = _column_of(_extent(line), spans, flush)
            if cells[j]:  # two cells in one column: this row as it comes
                cells = [line["text"] for line in row]
                break
            cells[j] = line["text"]
        out.append(cells)
    return out


def _columns(rows: list[list[dict]]) -> list[tuple[float, float]] | None:
    """Column spans (left to right) from the fullest rows, None when they disagree."""
    most = max(len(row) for row in rows)
    full = [sorted(row, key=lambda line: _extent(line)[0]) for row in rows if len(row) == most]
    spans = []
    for j in range(most):
        ext = np.array([_extent(row[j]) for row in full])
        spans.append((float(ext[:, 0].min()), float(ext[:, 1].max())))
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):  # columns overlap: no grid
        return None
    return spans


def _flush_right(rows: list[list[dict]], n: int) -> list[bool]:
    """Whether each of the ``n`` columns is set flush right (amounts): its cells in the
    fullest rows end at least as close together as they begin (amounts of one width)."""
    full = [sorted(row, key=lambda line: _extent(line)[0]) for row in rows if len(row) == n]
    if len(full) < 2:
        return [False] * n
    ext = np.array([[_extent(line) for line in row] for row in full])  # (rows, n, 2)
    return [bool(np.ptp(ext[:, j, 1]) <= np.ptp(ext[:, j, 0])) for j in range(n)]


def _column_of(extent: tuple[float, float], spans: list[tuple[float, float]],
               flush: list[bool] | None = None) -> int:
    """The column ``extent`` overlaps most. One that overlaps none and stands in the gap
    before a column set flush right, and not after one set flush left, is that column's (a
    header set left over right-aligned amounts: a spreadsheet's "Total" nearer the
    amounts of the column before it, round 36); else the nearest by centre."""
    x0, x1 = extent
    overlap = [min(x1, b) - max(x0, a) for a, b in spans]
    best = int(np.argmax(overlap))
    if overlap[best] > 0:
        return best
    if flush is not None:
        after = [j for j, (a, _) in enumerate(spans) if a >= x1]
        if after and after[0] > 0:
            j = after[0]
            if flush[j] and flush[j - 1]:
                return j
    centre = 0.5 * (x0 + x1)
    return int(np.argmin([abs(centre - 0.5 * (a + b)) for a, b in spans]))
