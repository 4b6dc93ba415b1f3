"""Decimal commas in a comma- or tab-separated table: a spreadsheet in a German or French
locale exports ``"0,126","1,49"`` (quoted, so the comma is not a separator), and a TSV has
``0,126`` as is. A cell read alone is ambiguous (``1,304`` is 1304 as an amount), so a
column is read as decimal commas when every cell of it with a comma is ``digits,digits``,
at least one of them cannot be a thousands grouping (``0,126``, ``1,49``, ``12,5``) and
no cell has a point (``1,5`` among ``1.5``s is a typo, refused):
then ``1,304`` in that column is one point three, as its neighbours say. (Before, ``0,126``
was read as 126 and ``1,49`` refused as a word.)"""

from __future__ import annotations

import re

__all__ = ["decimal_comma_columns"]

_DECIMAL = re.compile(r"^[+-]?\d+,\d+$")
_THOUSANDS = re.compile(r"^[+-]?[1-9]\d{0,2}(?:,\d{3})+$")


def decimal_comma_columns(rows: list) -> tuple[list, list[int]]:
    """``(rows, columns)``: the ``(line, cells)`` rows with the commas of the decimal-comma
    columns made points, and those columns' 0-based numbers (the first row is left as it is:
    it may be the header)."""
    if len(rows) < 2:
        return rows, []
    width = max(len(cells) for _, cells in rows)
    found = []
    for j in range(width):
        column = {cells[j] for _, cells in rows[1:] if j < len(cells)}
        commas = {c for c in column if "," in c}
        # a point elsewhere in the column: "1,5" among "1.5"s is a typo, refused as before
        if commas and all(_DECIMAL.match(c) for c in commas) and \
                not all(_THOUSANDS.match(c) for c in commas) and \
                not any("." in c for c in column):
            found.append(j)
    if not found:
        return rows, []
    head, out = rows[0], []
    for line, cells in rows[1:]:
        cells = list(cells)
        for j in found:
            if j < len(cells) and "," in cells[j]:
                cells[j] = cells[j].replace(",", ".")
        out.append((line, cells))
    # the first row too when it is data (no header): its cells are numbers of these columns
    first = list(head[1])
    for j in found:
        if j < len(first) and _DECIMAL.match(first[j]):
            first[j] = first[j].replace(",", ".")
    return [(head[0], first)] + out, found
