"""Blocks side by side with nothing but paper between them: read block by block.

Price tags on a white shelf strip, a dashboard's tiles without frames, a flyer's offers:
each block is a name over a big price (and a unit price under it), and the blocks stand a
gutter of paper apart. With no frame or fill :func:`.panels.panel_rows` sees one region,
and the rows run across the blocks ("Bananas Oat milk 1L / 1.29 2.49 / ..."). A table's
columns stand apart the same way, so the blocks are told by their print: in every column
one line stands at least :data:`BIG` times as tall as another (a table's cells, a
two-column page's lines and a form's fields are one size). :func:`block_rows` reads each
column's blocks (a block begins at a line over a line that much taller) one after the
other, in the order of their first rows, left to right.
"""

from __future__ import annotations

import numpy as np

__all__ = ["block_rows"]

# a block's big line is at least this many times as tall as its name's line
BIG = 1.6
# columns stand apart by a gutter of paper at least this many of the lines' median height
GUTTER = 1.0
# at most this many boxes on the page
BLOCK_BOXES = 80
# a column with this many rows or more that each hold boxes a gutter apart is a grid
GRID_ROWS = 2


def block_rows(rows: list[list[int]], boxes: list[np.ndarray]) -> list[list[int]]:
    """``rows`` (indices of ``boxes``, in reading order) with a band of rows that splits
    into columns of blocks (two columns or more, each of lines in two rows or more, one
    of them :data:`BIG` times as tall as another) read block by block; unchanged
    otherwise."""
    if len(boxes) < 4 or len(boxes) > BLOCK_BOXES or not any(len(r) >= 2 for r in rows):
        return rows
    pts = [np.asarray(b, np.float64) for b in boxes]
    ext = np.array([(p[:, 0].min(), p[:, 0].max(), p[:, 1].min(), p[:, 1].max()) for p in pts])
    out: list[list[int]] = []
    r = 0
    while r < len(rows):
        found = None
        for e in range(len(rows), r + 1, -1):  # the longest band from row r first
            cols = _columns([i for row in rows[r:e] for i in row], ext)
            if cols is not None and _blocky(cols, rows[r:e], ext):
                found = e, cols
                break
        if found is None:
            out.append(rows[r])
            r += 1
            continue
        e, cols = found
        out.extend(_read(rows[r:e], cols, ext))
        r = e
    return out


def _columns(idx: list[int], ext: np.ndarray) -> list[list[int]] | None:
    """``idx`` split where a gutter no line crosses runs down the band, left to right;
    None for one column."""
    if len(idx) < 4:
        return None
    heights = ext[idx, 3] - ext[idx, 2]
    gap = GUTTER * float(np.median(heights))
    order = sorted(idx, key=lambda i: ext[i, 0])
    cols, right = [[order[0]]], ext[order[0], 1]
    for i in order[1:]:
        if ext[i, 0] > right + gap:
            cols.append([i])
        else:
            cols[-1].append(i)
        right = max(right, ext[i, 1])
    return cols if len(cols) >= 2 else None


def _blocky(cols: list[list[int]], band: list[list[int]], ext: np.ndarray) -> bool:
    row_of = {i: r for r, row in enumerate(band) for i in row}
    idx = [i for row in band for i in row]
    gap = GUTTER * float(np.median(ext[idx, 3] - ext[idx, 2]))
    for col in cols:
        if len({row_of[i] for i in col}) < 2 or _grid(col, row_of, ext, gap):
            return False
        h = ext[col, 3] - ext[col, 2]
        if h.max() < BIG * h.min() or not _name_over_big(col, row_of, ext):
            return False
    return True


def _grid(col: list[int], row_of: dict, ext: np.ndarray, gap: float) -> bool:
    """Whether :data:`GRID_ROWS` rows of the column or more each hold boxes a gutter
    ``gap`` apart: cells of a grid that another line of the column bridges (a boarding
    pass's labels over values, "GATE BOARDING SEAT" over "B42 07:35 23A", a line under
    them running across; round 48, read block by block "PASSENGER FLIGHT ... / BOARDING
    PASS DATE ..." where its rows were the reading). A tag's lines are one box a row."""
    rows: dict[int, list[int]] = {}
    for i in col:
        rows.setdefault(row_of[i], []).append(i)
    apart = 0
    for idx in rows.values():
        xs = sorted(idx, key=lambda i: ext[i, 0])
        right = ext[xs[0], 1]
        for i in xs[1:]:
            if ext[i, 0] > right + gap:
                apart += 1
                break
            right = max(right, ext[i, 1])
    return apart >= GRID_ROWS


def _name_over_big(col: list[int], row_of: dict, ext: np.ndarray) -> bool:
    """Whether a row of the column stands over a row :data:`BIG` times as tall (a tag's
    name over its price). A column that only grows smaller downwards is a heading over its
    details (a train ticket's station "上海虹桥站" over its pinyin, date and seat, beside
    the other station's: round 44, read column by column in Liberation Mono and WenQuanYi
    Zen Hei, where the stations' rows were the ticket's reading)."""
    rs = sorted({row_of[i] for i in col})
    tall = {r: max(ext[i, 3] - ext[i, 2] for i in col if row_of[i] == r) for r in rs}
    low = {r: min(ext[i, 3] - ext[i, 2] for i in col if row_of[i] == r) for r in rs}
    return any(tall[b] >= BIG * low[a] for a, b in zip(rs, rs[1:], strict=False))


def _read(band: list[list[int]], cols: list[list[int]], ext: np.ndarray) -> list[list[int]]:
    row_of = {i: r for r, row in enumerate(band) for i in row}
    pos = {i: k for row in band for k, i in enumerate(row)}
    blocks = []
    for c, col in enumerate(cols):
        rs = sorted({row_of[i] for i in col})
        tall = {r: max(ext[i, 3] - ext[i, 2] for i in col if row_of[i] == r) for r in rs}
        low = {r: min(ext[i, 3] - ext[i, 2] for i in col if row_of[i] == r) for r in rs}
        # a block begins at a row whose next row in the column is BIG times as tall
        starts = [0] + [k for k in range(len(rs) - 1) if tall[rs[k + 1]] >= BIG * low[rs[k]]]
        starts = sorted(set(starts))
        for a, b in zip(starts, [*starts[1:], len(rs)], strict=True):
            part = rs[a:b]
            if part:
                blocks.append((part[0], c, part))
    out = []
    for _, c, part in sorted(blocks):
        col = set(cols[c])
        for r in part:
            out.append(sorted((i for i in band[r] if i in col), key=pos.__getitem__))
    return [row for row in out if row]
