"""A table cell's lone dash that the detector left unboxed.

A spreadsheet or timetable writes "–" (or "-", "—") in a cell with no value. Such a mark is
a few pixels high, and the detector often boxes none of it (round 38: 108 drawn timetables,
most misses a dropped cell; round 39's spreadsheet screenshot, "East 2,105 – – 29.1%" read
with one dash). :func:`cell_dashes` looks for it in the pixels of each table row: a flat
mark halfway up the row's digits, in a column other rows fill, away from every box."""

from __future__ import annotations

import numpy as np

from .marks import EM_DASH, EN_DASH, _box_crop, _flat_marks, _one_flat_mark
from .spacing import _cjk_char, ink_mask

__all__ = ["cell_dashes"]

# a dash found so: its ink no higher than DASH_THICK of the row's digit height, at least
# twice as wide as high, its width less its thickness DASH_SPAN of that height (a hyphen at
# 14-44 px spans 0.2-0.36, an em dash up to 1.42), its middle DASH_MID of the way down the
# digits, filling DASH_FILL of its bounding box (a photo's blur and turn leave 0.5-0.8)
DASH_THICK, DASH_SPAN, DASH_MID, DASH_FILL = 0.3, (0.15, 1.6), (0.3, 0.8), 0.5
# no other ink within CLEAR digit heights left or right of it in the row, nor a box
CLEAR = 0.6
# its middle under a box of another row of the table, widened by ALIGN digit heights
ALIGN = 0.3
# a page's lone dashes (found, and boxed ones read as one dash) whose spans lie within
# ALIKE of each other are one glyph: written as their median span says (a DejaVu Sans 18 px
# timetable's "–" spans 0.36-0.38 by its row's digit height, around EN_DASH; its "-" 0.23)
ALIKE = 1.4
_DASHES = ("-", "\u2013", "\u2014", "\u2212", "\u4e00")


def _dash(span: float) -> str:
    return "-" if span < EN_DASH else "\u2013" if span < EM_DASH else "\u2014"


def _rect(box: np.ndarray) -> tuple[float, float, float, float]:
    p = np.asarray(box, np.float64)
    return float(p[:, 0].min()), float(p[:, 1].min()), float(p[:, 0].max()), \
        float(p[:, 1].max())


def cell_dashes(rows: list[list[int]], boxes: list[np.ndarray], texts: list[str],
                image: np.ndarray | None) -> tuple[list[str],
                                                   list[tuple[int, int, np.ndarray, str]]]:
    """``texts`` with a table's lone dashes written alike, and the dashes to add, as ``(row,
    place in the row, box, text)`` in the order to insert them (each place counts those
    inserted before it in its row), for table rows (two boxes or more, of a page with two
    such rows or more and no CJK character: there a lone "一" is a word; or one box inside
    the table's span, whose cells may all be dashes) whose pixels hold a lone flat mark
    the boxes miss. A mark is one component of the row's ink mask, between the median top
    and baseline of the row's digits widened by half their height, touching neither edge
    of that band (a grid's rules do), flat and halfway up as :data:`DASH_THICK`,
    :data:`DASH_SPAN`, :data:`DASH_MID`, :data:`DASH_FILL` say, clear of other ink and
    boxes by :data:`CLEAR` digit heights, and under a box of another table row (its
    column). Its text is as :func:`~skiff.kernels.ocr.marks.lone_dashes` writes a read
    one, its width less its thickness over the digit height: "-" under ``EN_DASH``, "–"
    under ``EM_DASH``, "—" above; where the spans of all the page's lone dashes, found and
    boxed ones read as a dash, lie within :data:`ALIKE` of each other, their median says
    it for them all. A span is over the page's digit height (its rows' median)."""
    import cv2

    if image is None or any(_cjk_char(c) for t in texts for c in t):
        return texts, []
    table = [row for row in rows if len(row) >= 2]
    if len(table) < 2:
        return texts, []
    rects = [_rect(b) for b in boxes]
    left = min(rects[i][0] for row in table for i in row)
    right = max(rects[i][2] for row in table for i in row)
    h_img, w_img = image.shape[:2]
    out, boxed, page_talls = [], [], []
    for r, row in enumerate(rows):
        # a row of one box inside the table's span: its other cells may all be dashes
        if not row or (len(row) < 2 and not (left - 1 <= rects[row[0]][0]
                                             and rects[row[0]][2] <= right + 1)):
            continue
        tops, talls = [], []
        for i in row:
            if texts[i].strip() in ("", *_DASHES):
                continue
            found = _flat_marks(ink_mask(_box_crop(image, boxes[i])))
            if found is not None:
                talls.append(found[1])
                tops.append(rects[i][1] + found[2])
        if not talls:
            continue
        tall, top = float(np.median(talls)), float(np.median(tops))
        page_talls.append(tall)
        for i in row:
            mark = _one_flat_mark(_box_crop(image, boxes[i])) \
                if texts[i].strip() in _DASHES and len(row) > 1 else None
            if mark is not None:
                boxed.append((i, mark))
        y0, y1 = max(0, int(top - 0.5 * tall)), min(h_img, int(np.ceil(top + 1.5 * tall)))
        x0 = max(0, int(left - 2 * tall))
        x1 = min(w_img, int(np.ceil(right + 2 * tall)))
        if y1 - y0 < 8 or x1 - x0 < 8:
            continue
        bw = ink_mask(image[y0:y1, x0:x1])
        n, _, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
        comps = [tuple(int(v) for v in stats[k, :5]) for k in range(1, n)]
        # the band's edges cut a grid's rules and the rows above and below: not this row's
        inner = [c for c in comps if c[1] > 0 and c[1] + c[3] < y1 - y0]
        mine = [rects[i] for i in row]
        found_here = []
        for cx, cy, cw, ch, area in inner:
            gx0, gx1, gy = x0 + cx, x0 + cx + cw, y0 + cy + ch / 2
            span = (cw - ch) / tall
            middle = (gy - top) / tall
            if not (ch <= DASH_THICK * tall and cw >= 2 * ch
                    and DASH_SPAN[0] <= span <= DASH_SPAN[1]
                    and DASH_MID[0] <= middle <= DASH_MID[1]
                    and area >= DASH_FILL * cw * ch):
                continue
            clear = CLEAR * tall
            if any(x0 + c[0] < gx1 + clear and x0 + c[0] + c[2] > gx0 - clear
                   for c in inner if c != (cx, cy, cw, ch, area)):
                continue
            if any(b[0] < gx1 + clear and b[2] > gx0 - clear for b in mine):
                continue
            mid = (gx0 + gx1) / 2
            pad = ALIGN * tall
            if not any(rects[i][0] - pad <= mid <= rects[i][2] + pad
                       for other in table if other is not row for i in other):
                continue
            box = np.array([[gx0, y0 + cy], [gx1, y0 + cy], [gx1, y0 + cy + ch],
                            [gx0, y0 + cy + ch]], np.float32)
            found_here.append((mid, box, cw - ch))
        done = 0
        for mid, box, width in sorted(found_here, key=lambda f: f[0]):
            place = sum(1 for b in mine if (b[0] + b[2]) / 2 < mid) + done
            out.append((r, place, box, width))
            done += 1
    # one size of print: the page's digit height (a row's own can take an "l" or "ö")
    tall = float(np.median(page_talls)) if page_talls else 0.0
    every = [w / tall for *_, w in out] + [w / tall for _, w in boxed]
    one = len(every) >= 2 and max(every) <= ALIKE * min(every)
    kind = _dash(float(np.median(every))) if one else None
    texts = list(texts)
    if one:
        for i, _ in boxed:
            texts[i] = kind
    return texts, [(r, place, box, kind or _dash(w / tall)) for r, place, box, w in out]
