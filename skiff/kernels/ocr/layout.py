"""Page layout: the reading order of the lines found on a page.

:func:`reading_rows` sorts line boxes into rows (top to bottom, left to right, with the
page's skew undone and an upside-down page read from its image bottom right), and reads a
block of rows laid out as columns of prose one column after the other; tables and receipts
stay row by row, a row's cells together (a page's text is written a row a line).
:func:`reading_order` is the same boxes one after the other.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["reading_order", "reading_rows"]


def reading_order(boxes: list[np.ndarray], flipped_page: bool = False,
                  shape: tuple[int, int] | None = None, columns: bool = True,
                  angles=None) -> list[int]:
    """Indices of ``boxes`` in reading order: :func:`reading_rows`, one row after the
    other."""
    return [i for row in reading_rows(boxes, flipped_page, shape, columns, angles) for i in row]


def reading_rows(boxes: list[np.ndarray], flipped_page: bool = False,
                 shape: tuple[int, int] | None = None, columns: bool = True,
                 angles=None) -> list[list[int]]:
    """Indices of ``boxes`` grouped in rows, in reading order: rows top to bottom, left to
    right in a row, and a run of rows laid out in columns of prose read column by column
    (each column's lines then rows of their own). Boxes whose centres are within half a
    line height of each other are a row: the cells of a table's row, a receipt's item and
    its price, a line the detector cut in two.

    The page's dominant skew (median angle of the wide boxes' top edges) is undone first;
    an upside-down page is read from its (image) bottom right. With ``columns``, rows that
    share a vertical gutter (a gap at least one line high that no box of those rows
    crosses) form a block; when each side of the gutter holds at least two lines of prose
    (lines at least six times as wide as high), the block is read one column after the
    other. Tables of short cells and receipts (names left, prices right) stay row by row.

    ``angles`` (radians, image axes) is the direction each line reads in
    (:func:`.rec.reading_angle`); when given, the page is first turned so that its
    lines' mean direction points right, which reads a page turned by any angle from its
    own top left, and Chinese written in columns top to bottom, columns right to left
    (a column reads down: turned by -90 degrees, its first column, the rightmost, is the
    top row).
    """
    if not boxes:
        return []
    pts = np.stack(boxes).astype(np.float64)  # (N, 4, 2)
    if angles is not None:
        pts = _turn_page(pts, np.asarray(angles, np.float64))
        flipped_page = False
    if flipped_page and shape is not None:
        pts = np.stack([shape[1] - 1 - pts[..., 0], shape[0] - 1 - pts[..., 1]], -1)
        pts = pts[:, [2, 3, 0, 1]]
    top = pts[:, 1] - pts[:, 0]
    widths = np.hypot(*top.T)
    heights = np.hypot(*(pts[:, 3] - pts[:, 0]).T)
    wide = widths > 2 * heights
    angle = float(np.median(np.arctan2(top[wide, 1], top[wide, 0]))) if wide.any() else 0.0
    c, s = np.cos(-angle), np.sin(-angle)
    xs = c * pts[..., 0] - s * pts[..., 1]  # (N, 4): corners with the skew undone
    ys = s * pts[..., 0] + c * pts[..., 1]
    x, y = xs.mean(1), ys.mean(1)
    rows = _rows(list(np.argsort(y, kind="stable")), y, heights)
    rows = [sorted(row, key=lambda j: x[j]) for row in rows]
    if not columns or len(rows) < 4:
        return [[int(i) for i in row] for row in rows]
    x0, x1 = xs.min(1), xs.max(1)
    gap = float(np.median(heights))
    out: list[list[int]] = []
    k = 0
    while k < len(rows):
        end = k + 1  # grow a block of rows while they keep a common gutter
        while end < len(rows) and _gutters([i for r in rows[k:end + 1] for i in r], x0, x1, gap):
            end += 1
        block = [i for r in rows[k:end] for i in r]
        cols = _columns(block, x0, x1, gap, widths, heights) if end - k >= 3 else None
        if cols is None:
            out.extend(rows[k:end])
        else:
            for col in cols:
                sub = _rows(sorted(col, key=lambda j: y[j]), y, heights)
                out.extend(sorted(r, key=lambda j: x[j]) for r in sub)
        k = end
    return [[int(i) for i in row] for row in out]


def _turn_page(pts: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Corners (N, 4, 2) turned so that the lines' mean reading direction (weighted by
    their length) points along +x, each box's corners in tl, tr, br, bl order again."""
    from .det import order_points

    length = np.hypot(*(pts[:, 1] - pts[:, 0]).T) + np.hypot(*(pts[:, 3] - pts[:, 0]).T)
    mean = np.array([np.dot(length, np.cos(angles)), np.dot(length, np.sin(angles))])
    if np.hypot(*mean) < 1e-9:
        return pts
    phi = float(np.arctan2(mean[1], mean[0]))
    c, s = np.cos(phi), np.sin(phi)
    turned = np.stack([c * pts[..., 0] + s * pts[..., 1], -s * pts[..., 0] + c * pts[..., 1]],
                      -1)
    return np.stack([order_points(b.astype(np.float32)) for b in turned]).astype(np.float64)


def _rows(order: list, y: np.ndarray, heights: np.ndarray) -> list[list[int]]:
    """Group indices (sorted by ``y``) into rows whose centres are within half a line."""
    rows: list[list[int]] = []
    for i in order:
        if rows:
            row = rows[-1]
            ref = float(np.mean([y[j] for j in row]))
            if abs(y[i] - ref) < 0.5 * min(heights[i], min(heights[j] for j in row)):
                row.append(i)
                continue
        rows.append([i])
    return rows


def _gutters(idx: list, x0: np.ndarray, x1: np.ndarray, gap: float) -> list[float]:
    """x positions of the gaps (at least ``gap`` wide) between the extents of ``idx``."""
    spans = sorted((x0[i], x1[i]) for i in idx)
    cuts, reach = [], spans[0][1]
    for lo, hi in spans[1:]:
        if lo - reach >= gap:
            cuts.append(0.5 * (lo + reach))
        reach = max(reach, hi)
    return cuts


def _columns(block, x0, x1, gap, widths, heights) -> list[list[int]] | None:
    """The block's columns (left to right) when it is laid out as columns of prose."""
    cuts = _gutters(block, x0, x1, gap)
    if not cuts:
        return None
    edges = [-np.inf, *cuts, np.inf]
    cols = [[i for i in block if lo < 0.5 * (x0[i] + x1[i]) < hi]
            for lo, hi in itertools.pairwise(edges)]
    for col in cols:
        if len(col) < 2 or np.median([widths[i] / max(heights[i], 1.0) for i in col]) < 6:
            return None
    return cols
