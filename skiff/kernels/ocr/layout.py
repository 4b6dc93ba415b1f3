"""Page layout: the reading order of the lines found on a page.

:func:`reading_rows` sorts line boxes into rows (top to bottom, left to right, with the
page's skew undone and an upside-down page read from its image bottom right), and reads a
block of rows laid out as columns of prose one column after the other; tables and receipts
stay row by row, a row's cells together (a page's text is written a row a line).
:func:`reading_order` is the same boxes one after the other.
"""

from __future__ import annotations

import itertools
import re

import numpy as np

__all__ = ["reading_order", "reading_rows", "monospace_text", "is_amounts", "overlap_repeats"]

_AMOUNTS = re.compile(r"[-+(]?[$€£¥]?[\d.,:/%()+-]*\d[\d.,:/%()+-]*"
                      r"(?: +[-+(]?[$€£¥]?[\d.,:/%()+-]*\d[\d.,:/%()+-]*)*")


def is_amounts(text: str) -> bool:
    """Whether ``text`` is one or more numbers only ("-45.99  12,404.01", "$1,209.56",
    "03/04", "15%"): a table's cells, never a line of prose."""
    return bool(_AMOUNTS.fullmatch(text.strip()))


# a row's next box that begins this many of its characters' widths inside the box before it
# holds that box's last character again where it reads it first
REPEAT_OVERLAP = 0.5


def overlap_repeats(rows: list[list[int]], boxes: list[np.ndarray],
                    texts: list[str]) -> list[str]:
    """``texts`` with a character read twice across two boxes of a row dropped from the
    second: where a box begins at least :data:`REPEAT_OVERLAP` of its characters' mean
    width inside the box before it in the row, and its reading begins with the character
    (not a letter or a digit) that the box before ends with. A form's label and its filled
    value boxed overlapping read "Date of birth: : 14.03.1988" (round 34,
    ``bench_ocr_user34``'s form: the value's box took the label's colon in). Letters and
    digits stay ("Hall" beside "l 4" is no evidence)."""
    out = list(texts)
    for row in rows:
        for a, b in itertools.pairwise(row):
            left, right = out[a].rstrip(), out[b]
            if not left or not right or right[0].isalnum() or right[0].isspace() or \
                    left[-1] != right[0]:
                continue
            pa, pb = np.asarray(boxes[a], np.float64), np.asarray(boxes[b], np.float64)
            (a0, ay0), (a1, ay1) = pa.min(0), pa.max(0)
            (b0, by0), (b1, by1) = pb.min(0), pb.max(0)
            chars = len(right.replace(" ", ""))
            # upright boxes side by side, level with each other (a turned page's row stands)
            if chars < 2 or not a0 < b0 < a1 < b1 or a1 - a0 <= ay1 - ay0 or \
                    b1 - b0 <= by1 - by0 or min(ay1, by1) - max(ay0, by0) < \
                    0.5 * min(ay1 - ay0, by1 - by0):
                continue
            if a1 - b0 >= REPEAT_OVERLAP * (b1 - b0) / chars:
                out[b] = right[1:].lstrip() or right
    return out


def reading_order(boxes: list[np.ndarray], flipped_page: bool = False,
                  shape: tuple[int, int] | None = None, columns: bool = True,
                  angles=None, chars=None) -> list[int]:
    """Indices of ``boxes`` in reading order: :func:`reading_rows`, one row after the
    other."""
    return [i for row in reading_rows(boxes, flipped_page, shape, columns, angles, chars)
            for i in row]


def reading_rows(boxes: list[np.ndarray], flipped_page: bool = False,
                 shape: tuple[int, int] | None = None, columns: bool = True,
                 angles=None, chars=None, numbers=None) -> list[list[int]]:
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
    top row). Lines of the page that read along the image's rows and others down its
    columns are laid out apart (:func:`_across_lines`; ``chars``, the number of characters
    each box reads, when known, keeps a lone tall character such as "/" from counting as
    a column). ``numbers``, whether each box reads as amounts only (:func:`is_amounts`),
    when known: a side of the gutter whose lines are mostly amounts is a table's, not
    prose (a bank statement's descriptions and its debits and balances).
    """
    if not boxes:
        return []
    pts = np.stack(boxes).astype(np.float64)  # (N, 4, 2)
    if angles is not None:
        split = _across_lines(pts, np.asarray(angles, np.float64), chars)
        if split is not None:
            return _mixed_rows(boxes, pts, angles, chars, split, shape, columns, numbers)
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
    if wide.any():
        tilts = np.arctan2(top[wide, 1], top[wide, 0])
        angle = _row_angle(pts, angle, heights, float(tilts.min()), float(tilts.max()))
    c, s = np.cos(-angle), np.sin(-angle)
    xs = c * pts[..., 0] - s * pts[..., 1]  # (N, 4): corners with the skew undone
    ys = s * pts[..., 0] + c * pts[..., 1]
    x, y = xs.mean(1), ys.mean(1)
    x0, x1 = xs.min(1), xs.max(1)
    rows = _rows(list(np.argsort(y, kind="stable")), y, heights, x0, x1)
    rows = [sorted(row, key=lambda j: x[j]) for row in rows]
    if not columns or len(rows) < 4:
        return [[int(i) for i in row] for row in rows]
    gap = float(np.median(heights))
    out: list[list[int]] = []
    k = 0
    while k < len(rows):
        end = k + 1  # grow a block of rows while they keep a common gutter
        while end < len(rows) and _gutters([i for r in rows[k:end + 1] for i in r], x0, x1, gap):
            end += 1
        block = [i for r in rows[k:end] for i in r]
        cols = _columns(block, x0, x1, gap, widths, heights, y, numbers, chars) \
            if end - k >= 3 else None
        if cols is None:
            out.extend(rows[k:end])
        else:
            for col in cols:
                sub = _rows(sorted(col, key=lambda j: y[j]), y, heights, x0, x1)
                out.extend(sorted(r, key=lambda j: x[j]) for r in sub)
        k = end
    return [[int(i) for i in row] for row in out]


# a line across the others reads within this of the image's x axis or of its y axis (down),
# and is at least ACROSS_LONG times as long as it is thick (a one-character box is neither)
ACROSS_SLACK = np.radians(30)
ACROSS_LONG = 2.0


def _across_lines(pts: np.ndarray, angles: np.ndarray, chars=None) -> tuple[list, list] | None:
    """A page of lines reading two ways, as a Chinese page printed in columns with a
    heading or page number across, or a poster's lines beside a column of characters:
    ``(across, down)``, the indices of the lines that read along the image's rows and of
    those that read down (or up) its columns, each box that is neither (short, or turned some
    other way; with ``chars``, one of fewer than two characters) with the group of the
    longer text; None when the lines read one way. The
    image is taken to be upright (its rows the page's own): a page turned by 90 degrees
    as a whole has all its long lines one way and is not split."""
    width = np.hypot(*(pts[:, 1] - pts[:, 0]).T)
    height = np.hypot(*(pts[:, 3] - pts[:, 0]).T)
    long = np.maximum(width, height) >= ACROSS_LONG * np.maximum(np.minimum(width, height), 1)
    if chars is not None:
        long &= np.asarray(chars) >= 2
    wrap = np.angle(np.exp(1j * angles))  # (-pi, pi]
    across = long & (np.abs(wrap) <= ACROSS_SLACK)
    # a line reading up (a chart's axis label, a margin stamp turned a quarter) is laid out
    # with the columns: among the lines across it turned their rows (a chart's title was
    # joined to a tick label, its month labels each a row of their own)
    down = long & ((np.abs(wrap - np.pi / 2) <= ACROSS_SLACK)
                   | (np.abs(wrap + np.pi / 2) <= ACROSS_SLACK))
    if not across.any() or not down.any():
        return None
    length = np.maximum(width, height)
    rest = ~(across | down)
    if length[across].sum() >= length[down].sum():
        across |= rest
    else:
        down |= rest
    return np.flatnonzero(across).tolist(), np.flatnonzero(down).tolist()


def _mixed_rows(boxes, pts, angles, chars, split, shape, columns,
                numbers=None) -> list[list[int]]:
    """Rows of a page whose lines read two ways (:func:`_across_lines`): the lines across
    in their rows, top to bottom, and the columns together, right to left, placed before
    the first row across that starts below their top (a heading, then the columns, then a
    page number; a column beside a poster's lines before them); lines that read up (a
    margin stamp, a chart's axis label) come after the rows. A column is never one of a
    row's cells."""
    across, down = split
    rows = {}
    for name, idx in (("across", across), ("down", down)):
        sub = reading_rows([boxes[i] for i in idx], shape=shape, columns=columns,
                           angles=[angles[i] for i in idx],
                           chars=None if chars is None else [chars[i] for i in idx],
                           numbers=None if numbers is None else [numbers[i] for i in idx])
        rows[name] = [[idx[j] for j in row] for row in sub]
    wrap = np.angle(np.exp(1j * np.asarray(angles, np.float64)[down]))
    if (np.abs(wrap + np.pi / 2) <= ACROSS_SLACK).all():
        # lines reading up only (a margin stamp, a sidebar, an axis label): after the
        # page's own lines, not in the middle of a sentence
        return [[int(i) for i in row] for row in rows["across"] + rows["down"]]
    top = pts[..., 1].min(1)
    start = float(top[down].min())
    out, placed = [], False
    for row in rows["across"]:
        if not placed and float(top[row].min()) >= start:
            out.extend(rows["down"])
            placed = True
        out.append(row)
    if not placed:
        out.extend(rows["down"])
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


# a table shot by a phone a degree or two askew: each short cell's box is level to a pixel
# over its length, so the boxes' median angle gives half the skew or less (a payslip turned
# 2.2 degrees: boxes at 0 to -1.9, median -0.84), and a row's name and its amount, 560 px
# apart, stand more than half a line apart. Within ROW_TILT of the boxes' own skew, in
# steps of ROW_STEP, the angle that groups the boxes in the fewest rows is taken (of
# equals, the nearest to the boxes' own), and only within ROW_SLACK of the range of the
# wide boxes' own angles (the longest cell's box came nearest the skew: -1.86): a level
# page's note at the right, half a line below a line at the left, is no row of that line
ROW_TILT, ROW_STEP, ROW_SLACK = np.radians(3.0), np.radians(0.25), np.radians(1.0)


def _row_angle(pts: np.ndarray, angle: float, heights: np.ndarray, low: float,
               high: float) -> float:
    """The skew to undo before rows are grouped: ``angle``, or one within ``ROW_TILT`` of
    it, and within ``ROW_SLACK`` of the wide boxes' angles ``low`` to ``high``, that groups
    the boxes (corners ``pts``) in fewer rows."""
    if len(pts) < 4:
        return angle
    cx, cy = pts[..., 0].mean(1), pts[..., 1].mean(1)

    def count(a: float) -> int:
        y = np.sin(-a) * cx + np.cos(-a) * cy
        return len(_rows(list(np.argsort(y, kind="stable")), y, heights))

    steps = int(round(ROW_TILT / ROW_STEP))
    best = (count(angle), 0, angle)
    for k in range(-steps, steps + 1):
        a = angle + k * ROW_STEP
        if k and low - ROW_SLACK <= a <= high + ROW_SLACK:
            best = min(best, (count(a), abs(k), a))
    return best[2]


# a box is no part of a row holding a box it overlaps along the row by STACKED_ROW of the
# narrower one's width or more while their centres stand STACKED_DY of the shorter one's height
# apart or more: the two are lines one over the other (round 47, h7: a road sign as a
# thumbnail, "市中心" over "City Centre", whose centres stood just under half a line from
# the row "市中心 ... 5 km" the distance's box had begun, read as one row)
STACKED_ROW, STACKED_DY = 0.5, 0.3


def _rows(order: list, y: np.ndarray, heights: np.ndarray, x0=None, x1=None) -> list[list[int]]:
    """Group indices (sorted by ``y``) into rows whose centres are within half a line; with
    the boxes' extents along the row (``x0``, ``x1``), not a box stacked on one of the row's
    (``STACKED_ROW``, ``STACKED_DY``)."""
    rows: list[list[int]] = []
    for i in order:
        if rows:
            row = rows[-1]
            ref = float(np.mean([y[j] for j in row]))
            if abs(y[i] - ref) < 0.5 * min(heights[i], min(heights[j] for j in row)) and \
                    not (x0 is not None and any(_stacked_on(i, j, y, heights, x0, x1)
                                                for j in row)):
                row.append(i)
                continue
        rows.append([i])
    return rows


def _stacked_on(i: int, j: int, y, heights, x0, x1) -> bool:
    """Whether boxes ``i`` and ``j`` are lines one over the other (see ``STACKED_ROW``)."""
    share = min(x1[i], x1[j]) - max(x0[i], x0[j])
    narrow = min(x1[i] - x0[i], x1[j] - x0[j])
    return narrow > 0 and share >= STACKED_ROW * narrow and \
        abs(y[i] - y[j]) >= STACKED_DY * min(heights[i], heights[j])


def _gutters(idx: list, x0: np.ndarray, x1: np.ndarray, gap: float) -> list[float]:
    """x positions of the gaps (at least ``gap`` wide) between the extents of ``idx``."""
    spans = sorted((x0[i], x1[i]) for i in idx)
    cuts, reach = [], spans[0][1]
    for lo, hi in spans[1:]:
        if lo - reach >= gap:
            cuts.append(0.5 * (lo + reach))
        reach = max(reach, hi)
    return cuts


# a column's lines are prose when their median width is at least PROSE_WIDE heights, or
# PROSE_SHORT heights where every column of the block holds at least PROSE_MANY lines
PROSE_WIDE = 6.0
PROSE_SHORT = 4.5
PROSE_MANY = 5
# ... and when the median step between a side's lines is at most PROSE_STEP line heights:
# prose is set a line after another (double-spaced ~1.8 box heights), a worksheet's sums or
# a chat's bubbles stand further apart (a phone photo's sums 2.9-3.0, box heights grown by
# the blur; the clean sheet's 3.01 read across by 0.3 px under the old three)
PROSE_STEP = 2.5
# a line of Chinese or Japanese holds a word a character, about one line height each: a
# line reading CJK_DENSE characters a height (its characters over its width in heights,
# where ``chars`` are known; a Latin line's 1.8-3) counts CJK_WIDE times as wide. Round 43
# (h12): a page of two columns of Japanese sentences, "今日は晴れです。" (8 characters, 5.9
# heights, Noto Sans CJK 34 px), was read across its gutter, row by row
CJK_DENSE = (0.7, 1.6)
CJK_WIDE = 1.5


def _prose_widths(widths, heights, chars) -> np.ndarray:
    """Each line's width in its heights, a CJK line's (``CJK_DENSE``) times ``CJK_WIDE``."""
    ratio = np.asarray(widths, np.float64) / np.maximum(np.asarray(heights, np.float64), 1.0)
    if chars is None:
        return ratio
    per = np.asarray(chars, np.float64) / np.maximum(ratio, 1e-9)
    dense = (per >= CJK_DENSE[0]) & (per <= CJK_DENSE[1])
    return np.where(dense, CJK_WIDE * ratio, ratio)


def _columns(block, x0, x1, gap, widths, heights, y, numbers=None,
             chars=None) -> list[list[int]] | None:
    """The block's columns (left to right) when it is laid out as columns of prose: each
    side of a gutter at least two lines of prose (six times as wide as high, 4.5 times where
    each side holds at least five lines; a line of CJK characters, ``chars`` known, counts
    ``CJK_WIDE`` times as wide) set as prose
    is, a line after another (the median step between them at most ``PROSE_STEP`` line
    heights).
    A chat's bubbles, left and right by turns, a message a few lines apart, are one flow.
    A side whose lines are mostly amounts (``numbers``) is a table's column: no prose."""
    cuts = _gutters(block, x0, x1, gap)
    if not cuts:
        return None
    edges = [-np.inf, *cuts, np.inf]
    cols = [[i for i in block if lo < 0.5 * (x0[i] + x1[i]) < hi]
            for lo, hi in itertools.pairwise(edges)]
    # columns of many lines each, under one gutter the whole block long, are prose at
    # shorter lines too (a narrow page's 5-word lines, 5.9 times as wide as high)
    least = PROSE_SHORT if min(map(len, cols)) >= PROSE_MANY else PROSE_WIDE
    wide = _prose_widths(widths, heights, chars)  # in heights (a CJK line's counts wider)
    for col in cols:
        if numbers is not None and 2 * sum(bool(numbers[i]) for i in col) > len(col):
            return None
        if len(col) < 2 or np.median([wide[i] for i in col]) < least:
            return None
        steps = np.diff(np.sort([y[i] for i in col]))
        if np.median(steps) > PROSE_STEP * np.median([heights[i] for i in col]):
            return None
    return cols


# a page is laid out as monospaced print from this many rows (a sign of three or four short
# lines fits a straight line by chance)
MONO_ROWS = 5
# how much more a line's ink repeats at the cell width than at other widths (cell_rhythm)
MONO_RHYTHM = 2.0


def monospace_text(rows: list[list[int]], boxes: list[np.ndarray], texts: list[str],
                   angles=None, image: np.ndarray | None = None) -> str | None:
    """A page's text with its layout kept, when it is set in a monospaced font (code, a
    terminal, a fixed-width table): each row indented by its left edge in character widths,
    a row's pieces apart by the width of the gap between them, and a blank line where rows
    are a line or more further apart than the page's line pitch. None for a page in a
    proportional font, a turned or skewed page, or one with fewer than two rows indented or
    set apart in columns (its text is then the rows' lines joined as usual).

    The character width comes from the lines themselves: in a monospaced font a line's box
    is as wide as ``width * characters + margin`` (East Asian wide characters count two),
    so a straight-line fit over the page's lines leaves most lines within a fraction of a
    character, and every row starts on that grid of character widths. Proportional prose
    passes both often enough (long lines average their letters out), so the pixels decide:
    the ink of a monospaced line repeats at the cell width (:func:`cell_rhythm`), that of
    proportional print does not (measured: 2.7-4.4 against 1.1-1.7 for prose, receipts and
    code set in DejaVu Sans or Liberation Serif).
    """
    import unicodedata

    if len(rows) < MONO_ROWS or len(boxes) != len(texts):
        return None
    turn = np.abs(np.asarray(angles if angles is not None else [0.0] * len(texts),
                             np.float64))
    wide = np.array([len(t.replace(" ", "")) >= 3 for t in texts])
    if wide.any() and len(turn) == len(texts):
        turn = turn[wide]  # a glyph alone ("}") has no reading direction of its own
    if np.median(turn) > 0.03 or np.max(turn) > 0.15:
        return None  # a turned or skewed page (a short box may lean a pixel or two)
    pts = np.stack(boxes).astype(np.float64)
    x0, x1 = pts[..., 0].min(1), pts[..., 0].max(1)
    yc = pts[..., 1].mean(1)
    row_y = [float(np.mean(yc[row])) for row in rows]
    if np.any(np.diff(row_y) <= 0):
        return None  # read in columns: each column's rows start at its own left edge
    heights = pts[..., 1].max(1) - pts[..., 1].min(1)
    if np.any(np.abs(pts[:, 1, 1] - pts[:, 0, 1]) > 0.05 * (x1 - x0) + 2):
        return None  # skewed boxes: left edges do not line up with the text's start

    def cells(t: str) -> int:
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in t)

    n = np.array([cells(t) for t in texts], np.float64)
    fit = n >= 3
    if fit.sum() < MONO_ROWS or np.ptp(n[fit]) < 3:
        return None
    width, margin = np.polyfit(n[fit], (x1 - x0)[fit], 1)
    if not 0.3 * np.median(heights) < width < 1.5 * np.median(heights):
        return None
    resid = np.abs((x1 - x0)[fit] - (width * n[fit] + margin)) / width
    if np.median(resid) > 0.6 or np.quantile(resid, 0.9) > 1.5:
        return None  # (a recognizer merges runs of spaces and misreads quotes: not 0)
    good = resid <= 0.5  # fitted again without lines whose count is off (a space merged)
    if good.sum() >= 3 and np.ptp(n[fit][good]) >= 3:
        width, margin = np.polyfit(n[fit][good], (x1 - x0)[fit][good], 1)
    # the character grid's phase from the rows led by a box of three cells or more: a box
    # of one narrow glyph ("}" closing a block) is boxed half a cell wider on its left
    first = np.array([x0[row[0]] for row in rows]) / width
    led = np.array([n[row[0]] >= 3 for row in rows])
    ref = first[led] if led.any() else first
    phase = float(np.angle(np.mean(np.exp(2j * np.pi * ref))) / (2 * np.pi))
    steps = first - phase
    steps = steps - np.round(steps).min()
    indent = [int(v) for v in np.round(steps)]
    slack = np.where(led, 0.45, 0.75)
    gaps = [[int(round((x0[b] - x1[a] + margin) / width)) for a, b in itertools.pairwise(row)]
            for row in rows]
    laid = sum(lead >= 2 or any(g >= 2 for g in gap) for lead, gap in zip(indent, gaps))
    if laid < 2 or np.any(np.abs(steps - np.round(steps)) > slack):
        return None  # no row indented or set apart in columns, or off the character grid
    if image is None or cell_rhythm(image, pts, n, width) < MONO_RHYTHM:
        return None
    pitch = float(np.median(np.diff(row_y)))
    out = []
    for k, (row, lead, gap_row) in enumerate(zip(rows, indent, gaps, strict=True)):
        if k:
            out.extend([""] * min(3, max(0, int(round((row_y[k] - row_y[k - 1]) / pitch)) - 1)))
        line = " " * lead + _spaced(image, pts[row[0]], texts[row[0]], width, margin)
        for b, gap in zip(row[1:], gap_row, strict=True):
            line += " " * max(1, gap) + _spaced(image, pts[b], texts[b], width, margin)
        out.append(line)
    return "\n".join(out)


def _spaced(image: np.ndarray, box: np.ndarray, text: str, width: float,
            margin: float) -> str:
    """A monospaced box's text with the spaces the recognizer dropped put back: a box
    ``width * cells + margin`` wide holds that many character cells, and a cell with no
    ink is a space ("44% /" was read "44%/", "x  = 1" as "x = 1": a recognizer keeps at
    most one space, and not always that). The cells' edges are where the box's ink is
    least at that period (glyphs sit in the middle of their cells). Unchanged unless the
    inked cells are exactly the text's characters (ASCII only: wide characters take two)."""
    solid = text.replace(" ", "")
    x0, x1 = float(box[:, 0].min()), float(box[:, 0].max())
    cells = int(round((x1 - x0 - margin) / width))
    if not solid or not text.isascii() or cells <= len(text) or cells > 4 * len(text):
        return text
    h, w = image.shape[:2]
    y0, y1 = (int(np.clip(v, 0, h)) for v in (box[:, 1].min(), box[:, 1].max()))
    a, b = int(np.clip(x0, 0, w)), int(np.clip(x1, 0, w))
    band = image[y0:y1, a:b].astype(np.float32)
    if band.shape[0] < 2 or band.shape[1] < 2 * width:
        return text
    band = band.mean(2) if band.ndim == 3 else band
    ink = 255.0 - band if np.median(band) > 127 else band
    ink = np.clip(ink - np.median(ink), 0, None).sum(0)  # column profile, paper at 0
    xs = np.arange(len(ink), dtype=np.float64)

    def at_edges(offset):  # ink within 0.15 cell of the cell edges
        d = (xs - offset) % width
        return float(ink[np.minimum(d, width - d) < 0.15 * width].sum())

    offset = min(np.linspace(0, width, 16, endpoint=False), key=at_edges)
    edges = np.arange(offset - width, len(ink) + width, width)
    amount = []
    for lo in edges:  # the middle of each cell: a neighbour's ink does not bleed in
        i, j = (int(np.clip(round(lo + f * width), 0, len(ink))) for f in (0.2, 0.8))
        amount.append(float(ink[i:j].sum()) if j > i else 0.0)
    amount = np.array(amount)
    if not (amount > 0).any():
        return text
    level = np.median(amount[amount > 0])
    inked = np.flatnonzero(amount > 0.15 * level)
    # a lone weak cell at either end, set apart by a blank one, is a neighbour's edge that
    # the box took in, not one of its characters
    if len(inked) > len(solid) and inked[1] - inked[0] > 1 and amount[inked[0]] < level:
        inked = inked[1:]
    if len(inked) > len(solid) and inked[-1] - inked[-2] > 1 and amount[inked[-1]] < level:
        inked = inked[:-1]
    full = np.zeros(inked[-1] - inked[0] + 1, bool)
    full[inked - inked[0]] = True
    if int(full.sum()) != len(solid) or len(full) <= len(text):
        return text
    chars = iter(solid)
    return "".join(next(chars) if f else " " for f in full)


def cell_rhythm(image: np.ndarray, pts: np.ndarray, cells: np.ndarray, width: float) -> float:
    """How strongly the ink of a page's longest level lines (``image``: grey or colour)
    repeats every ``width`` pixels:
    each line's column profile folded at periods within 3% of ``width`` (8 phase bins), its
    best contrast (max - min over the mean) over the median contrast at periods 0.6-1.6
    ``width`` away from it; the median over up to 8 lines of 8 cells or more. A monospaced
    line's glyphs sit one to a cell, gaps at the cell edges, so its profile folds into a
    sharp peak; proportional letters drift out of phase."""
    h, w = image.shape[:2]
    near = width * np.linspace(0.97, 1.03, 13)
    far = width * np.linspace(0.6, 1.6, 41)
    far = far[np.abs(far / width - 1) > 0.08]

    def contrast(profile, period):
        phase = ((np.arange(len(profile)) / period) % 1.0 * 8).astype(np.int64)
        folded = np.bincount(phase, profile, 8) / np.maximum(np.bincount(phase, None, 8), 1)
        return (folded.max() - folded.min()) / (folded.mean() + 1e-6)

    found = []
    for i in np.argsort(-cells)[:8]:
        if cells[i] < 8:
            break
        y0, y1 = (int(np.clip(v, 0, h)) for v in (pts[i, :, 1].min(), pts[i, :, 1].max()))
        x0, x1 = (int(np.clip(v, 0, w)) for v in (pts[i, :, 0].min(), pts[i, :, 0].max()))
        band = image[y0:y1, x0:x1].astype(np.float32)
        band = band.mean(2) if band.ndim == 3 else band  # grey, only where the line is
        if band.shape[0] < 2 or band.shape[1] < 4 * width:
            continue
        ink = 255.0 - band if np.median(band) > 127 else band
        profile = ink.sum(0)
        base = float(np.median([contrast(profile, p) for p in far]))
        found.append(max(contrast(profile, p) for p in near) / max(base, 1e-6))
    return float(np.median(found)) if found else 0.0
