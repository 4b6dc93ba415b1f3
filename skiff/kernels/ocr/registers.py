"""A display's digits in separate cells read as one number (a meter's register, a counter).

A utility meter's register holds its digits one to a box, each box filled (white digits on
black, the last one red) with a strip of the meter's face between the boxes. The detector
boxes the digits one by one ("0 4 5 2 3 kWh" for "045273 kWh", round 47) or a few together,
and can miss one altogether (a "7" white on black scores 0.42 on its tilted rectangle, under
the detector's 0.5) or a thumbnail's first one ("45273"). :func:`join_registers` finds the
row of filled cells in the pixels under a row's digits, reads a cell no box covers with the
recognizer, and writes the register as one number, as a reader does.

Not a register: a ruled table or a grid of single digits (a calendar, a sudoku: thin rules
between white cells, the cell's ground going on past its rules above and below), a comb
(``combs.py``: strokes rising from a line), keys (each glyph needs its cell about it, the
cells at an even pitch with a strip of the page between them).
"""

from __future__ import annotations

import numpy as np

from .combs import _extent, _runs  # a box's extent, a mask's runs: as a comb's cells

__all__ = ["join_registers", "register_cells"]

FAR = 50  # grey levels from the page's ground that count as a cell's fill (or ink)
MIN_CELLS = 3
WIDTH_TOL = 0.25  # every cell within this share of the median cell's width
GAP_MIN = 0.06  # a strip of the page between cells: at least this share of the pitch
GAP_MAX = 0.6  # and at most this share of it
INK = 60  # grey levels from the cell's own fill that count as its glyph's ink


def register_cells(gray: np.ndarray, x0: float, x1: float, yc: float,
                   height: float) -> list[tuple[int, int, int, int]] | None:
    """The filled cells ``(x0, y0, x1, y1)`` (image px, ends exclusive) of a register whose
    digits stand about the row centre ``yc`` (``height`` the digits' box height) between
    ``x0`` and ``x1``, left to right at an even pitch; None where there is none."""
    H, W = gray.shape
    h = float(height)
    # the page's ground: the strip above the cells (text there is sparse)
    ga, gb = int(max(0, yc - 1.6 * h)), int(max(0, yc - 1.1 * h))
    xa, xb = int(max(0, x0)), int(min(W, x1))
    if gb - ga < 2 or xb - xa < 3 * h:
        return None
    ground = float(np.median(gray[ga:gb, xa:xb]))
    ya, yb = int(max(0, yc - 0.6 * h)), int(min(H, yc + 0.6 * h + 1))
    far = np.abs(gray[ya:yb, xa:xb] - ground) > FAR
    cols = far.mean(0)
    cells = []
    for a, b in _runs(cols >= 0.25):
        if b - a >= 0.5 * h:
            cells.append([a + xa, b + xa])
    if len(cells) < MIN_CELLS:
        return None
    out = []
    for a, b in cells:
        if b - a > 2.0 * h:
            return None
        rows = (np.abs(gray[:, a:b] - ground) > FAR).mean(1)
        c = int(round(yc))
        if rows[c] < 0.5:
            return None
        top = c
        while top > 0 and rows[top - 1] >= 0.5 and c - top < 1.5 * h:
            top -= 1
        bot = c + 1
        while bot < H and rows[bot] >= 0.5 and bot - c < 1.5 * h:
            bot += 1
        # a box: its fill ends above and below, the page's ground beyond (a table's white
        # cell goes on past a thin rule)
        # (a row of blur at each edge)
        if top < 5 or bot > H - 5 or (rows[top - 5:top - 1] >= 0.3).any() or \
                (rows[bot + 1:bot + 5] >= 0.3).any() or bot - top < 0.9 * h:
            return None
        out.append((a, top, b, bot))
    return out


def _regular(cells) -> list[tuple[int, int, int, int]]:
    """The longest run of ``cells`` at an even pitch with a strip of page between them."""
    best: list = []
    run = [cells[0]]
    for prev, cur in zip(cells, cells[1:], strict=False):
        w = np.median([c[2] - c[0] for c in (prev, cur)])
        gap = cur[0] - prev[2]
        ok = abs((cur[2] - cur[0]) - (prev[2] - prev[0])) <= WIDTH_TOL * w and \
            max(2, GAP_MIN * (w + gap)) <= gap <= GAP_MAX * (w + gap)
        if ok:
            run.append(cur)
        else:
            best = max(best, run, key=len)
            run = [cur]
    best = max(best, run, key=len)
    if len(best) < MIN_CELLS:
        return []
    widths = np.array([c[2] - c[0] for c in best], np.float64)
    gaps = np.array([b[0] - a[2] for a, b in zip(best, best[1:], strict=False)], np.float64)
    if np.any(np.abs(widths - np.median(widths)) > WIDTH_TOL * np.median(widths)) or \
            np.ptp(gaps) > max(3.0, 0.5 * np.median(gaps)):
        return []
    return best


def join_registers(rows: list[list[int]], boxes: list, texts: list[str],
                   image: np.ndarray, read=None) -> tuple[list[str], list[np.ndarray]]:
    """``(texts, boxes)`` with each row's digits that stand in a register's filled cells
    joined into the first of them as one number (its box the union of the cells, the
    others' texts ""), a cell no box covers read by ``read`` (crops -> texts) and put in
    its place."""
    texts = list(texts)
    boxes = [np.asarray(b, np.float64) for b in boxes]
    if image is None or not rows:
        return texts, boxes
    gray = None
    for row in rows:
        digits = [i for i in row if texts[i].strip() and texts[i].replace(" ", "").isdigit()]
        n = sum(len(texts[i].replace(" ", "")) for i in digits)
        if not digits or n < 3 or (len(digits) < 2 and " " not in texts[digits[0]].strip()
                                   and read is None):
            continue
        ext = {i: _extent(boxes[i]) for i in digits}
        h = float(np.median([e[3] - e[1] for e in ext.values()]))
        if h < 8:
            continue
        yc = float(np.median([(e[1] + e[3]) / 2 for e in ext.values()]))
        if any(abs((e[1] + e[3]) / 2 - yc) > 0.3 * h for e in ext.values()):
            continue
        if gray is None:
            gray = (image if image.ndim == 2 else image[..., :3].mean(2)).astype(np.float32)
        x0 = min(e[0] for e in ext.values()) - 2.5 * h
        x1 = max(e[2] for e in ext.values()) + 2.5 * h
        found = register_cells(gray, x0, x1, yc, h)
        if not found:
            continue
        cells = _regular(found)
        if not cells:
            continue
        lo, hi = cells[0][0], cells[-1][2]
        # every digit box stands in the run, each cell it spans holding one digit, centred
        own: dict[int, list[int]] = {}
        fits = True
        for i in digits:
            e = ext[i]
            cx = (e[0] + e[2]) / 2
            if not lo <= cx <= hi:
                fits = False
                break
            spans = [k for k, c in enumerate(cells) if e[0] - 2 <= (c[0] + c[2]) / 2 <= e[2] + 2]
            if len(spans) != len(texts[i].replace(" ", "")):
                fits = False
                break
            own[i] = spans
        taken = {k for s in own.values() for k in s}
        if not fits or len(taken) != sum(len(s) for s in own.values()):
            continue
        # the cells no box covers, between and beside the boxes: their glyph read alone
        items = [((ext[i][0] + ext[i][2]) / 2, texts[i].replace(" ", "")) for i in digits]
        crops, where = [], []
        for k, (a, top, b, bot) in enumerate(cells):
            if k in taken:
                continue
            cell = gray[top:bot, a:b]
            fill = float(np.median(cell))
            if (np.abs(cell - fill) > INK).mean() < 0.03:
                continue  # a blank cell
            pad = max(2, int(0.08 * (b - a)))
            crop = image[top + pad:bot - pad, a + pad:b - pad]
            crop = crop[..., :3] if crop.ndim == 3 else np.dstack([crop] * 3)
            if fill < float(np.mean(cell)):  # light ink on a dark fill: read as print
                crop = 255 - crop
            crops.append(np.ascontiguousarray(crop))
            where.append((a + b) / 2)
        if crops:
            said = [t.replace(" ", "") for t in read(crops)] if read is not None else []
            if len(said) != len(crops) or not all(len(t) == 1 and t.isdigit() for t in said):
                continue
            items += list(zip(where, said, strict=True))
        first = min(digits, key=lambda i: ext[i][0])
        texts[first] = "".join(t for _, t in sorted(items))
        bx0 = min(min(c[0] for c in cells), min(e[0] for e in ext.values()))
        bx1 = max(max(c[2] for c in cells), max(e[2] for e in ext.values()))
        by0, by1 = min(e[1] for e in ext.values()), max(e[3] for e in ext.values())
        boxes[first] = np.array([[bx0, by0], [bx1, by0], [bx1, by1], [bx0, by1]], np.float64)
        for i in digits:
            if i != first:
                texts[i] = ""
    return texts, boxes
