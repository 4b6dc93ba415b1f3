"""Comb fields: a form's boxes for one character each (tax and customs forms, bank slips).

A comb is a line the characters stand on with short strokes rising from it between them
(or whole boxes: the strokes run up to a top line), at an even pitch. The detector boxes its
characters one by one or a few together, and the row's pieces are joined by spaces, and the
recognizer reads the blank half-cells inside a box as word gaps: "MUELLER" written in a comb
read "MUE L L E R", "80331" read "8 0 3 3 1" (round 35, ``bench_ocr_user35``'s comb form;
RapidOCR gives each character its own line). :func:`join_combs` finds the comb in the pixels
under a row and joins what stands in it into one line: no spaces but where a whole cell is
left blank between two pieces (a space written as an empty box).

Not a comb: a ruled table (its column rules run on below the row, and its cells hold more
than one character), a grid of single digits (a calendar, a sudoku: the strokes run on
above or below the comb's height), letter-spaced capitals (no line under them).
"""

from __future__ import annotations

import numpy as np

__all__ = ["join_combs", "comb_cells", "comb_line", "cell_strips"]

# a stroke rises from the comb's line at least this much of the row's text height
TICK_RISE = 0.25
# and at most this much (a box's side: the cell's height), and runs on below the line at
# most BELOW of it (a table's or a grid's rule crosses the line)
TICK_MAX = 2.5
BELOW = 0.25
# the pitch of the strokes: at most PITCH_MAX text heights, every step within PITCH_TOL of
# the median, at least MIN_CELLS cells
PITCH_MAX = 2.5
PITCH_MIN = 0.6
PITCH_TOL = 0.15
MIN_CELLS = 3
SLOPE_SEARCH, SLOPE_STEP = 0.03, 0.0025  # tilts tried about the boxes' own
DARK = 60  # grey levels under the region's ground that count as a line's ink


def _extent(box) -> tuple[float, float, float, float]:
    p = np.asarray(box, np.float64)
    (x0, y0), (x1, y1) = p.min(0), p.max(0)
    return x0, y0, x1, y1


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of True in a 1-D mask (end exclusive)."""
    m = np.concatenate([[False], mask.astype(bool), [False]])
    d = np.flatnonzero(np.diff(m.astype(np.int8)))
    return list(zip(d[::2].tolist(), d[1::2].tolist(), strict=True))


def comb_cells(gray: np.ndarray, x0: float, x1: float, y0: float, y1: float,
               height: float, slope: float = 0.0) -> list[float] | None:
    """The x of the strokes of a comb under the text band ``y0..y1`` (``height`` its text
    height; at the band's middle x, the band rising ``slope`` px a px to the right: a photo
    turned a little) between ``x0`` and ``x1`` (image coordinates), evenly spaced; None
    where no comb is there."""
    found = comb_line(gray, x0, x1, y0, y1, height, slope)
    return None if found is None else found[0]


def comb_line(gray: np.ndarray, x0: float, x1: float, y0: float, y1: float,
              height: float, slope: float = 0.0) -> tuple[list[float], float, float] | None:
    """:func:`comb_cells`'s strokes, with the comb's line: ``(ticks, y, s)``, the line's
    top at image x ``ticks[0]`` at image row ``y``, falling ``s`` px a px to the right."""
    h, w = gray.shape[:2]
    left, right = int(max(0, x0)), int(min(w, x1))
    tilt = (abs(slope) + SLOPE_SEARCH) * (right - left) / 2
    top = int(max(0, y0 - 0.5 * height - tilt))
    bottom = int(min(h, y1 + 0.9 * height + tilt))
    if bottom - top < 4 or right - left < MIN_CELLS * PITCH_MIN * height:
        return None
    region = gray[top:bottom, left:right].astype(np.int16)
    ground = float(np.median(region))
    if ground < 100:  # light print on a dark ground: not a paper form
        return None
    dark = region < ground - DARK
    middle = int((y0 + y1) / 2) - top
    # the comb's line: the row under the band's middle with the most ink, the columns
    # moved up or down for each tilt near ``slope`` (the boxes' own tilt is rough)
    best = None
    xs = np.arange(dark.shape[1])
    for s in slope + np.arange(-SLOPE_SEARCH, SLOPE_SEARCH + 1e-9, SLOPE_STEP):
        shift = np.round(s * (xs - dark.shape[1] / 2)).astype(int)
        ys = np.arange(dark.shape[0])[:, None] + shift[None, :]
        ok = (ys >= 0) & (ys < dark.shape[0])
        level = np.where(ok, dark[np.clip(ys, 0, dark.shape[0] - 1), xs[None, :]], False)
        counts = level[max(middle, 0):].sum(1)
        y = int(np.argmax(counts)) + max(middle, 0)
        if best is None or counts.max() > best[0]:
            best = (int(counts.max()), y, level, float(s))
    if best is None:
        return None
    _, y, dark, tilt_s = best
    runs = [r for r in _runs(dark[y]) if r[1] - r[0] >= MIN_CELLS * PITCH_MIN * height]
    if not runs:
        return None
    line = (y, max(runs, key=lambda r: r[1] - r[0]))
    ly, (a, b) = line
    while ly > 0 and dark[ly - 1, a:b].mean() > 0.8:  # a line 2-3 px thick: its top row
        ly -= 1
    rise = int(np.ceil(TICK_RISE * height))
    if ly - rise < 0:
        return None
    cols = dark[ly - rise:ly, a:b].all(0)  # dark for ``rise`` px just above the line
    ticks = []
    for s, e in _runs(cols):
        if e - s > max(3, 0.2 * height):  # a glyph's foot on the line, not a stroke
            continue
        x = (s + e) // 2 + a
        col = dark[:, x]
        up = ly
        while up > 0 and col[up - 1]:
            up -= 1
        down = ly
        while down < dark.shape[0] - 1 and col[down + 1]:
            down += 1
        if ly - up > TICK_MAX * height or (down == dark.shape[0] - 1 and bottom < h) or \
                down - ly > BELOW * height + 3:
            return None  # a rule that runs on: a table's or a grid's
        ticks.append(float(x + left))
    # the frame's ends rise from the line's ends
    if len(ticks) < MIN_CELLS + 1:
        return None
    steps = np.diff(ticks)
    pitch = float(np.median(steps))
    if not PITCH_MIN * height <= pitch <= PITCH_MAX * height or \
            np.any(np.abs(steps - pitch) > PITCH_TOL * pitch):
        return None
    # level row ly is image row top + ly + s * (column - width / 2)
    y_first = top + ly + tilt_s * (ticks[0] - left - dark.shape[1] / 2)
    return ticks, float(y_first), tilt_s


def cell_strips(image: np.ndarray, ticks: list[float], y_first: float, slope: float,
                height: float) -> list[tuple[np.ndarray, int]]:
    """The comb's written cells as crops to read, without its strokes and lines:
    ``(crop, cells)`` for each run of cells holding ink, left to right (blank cells part
    them: a space written as an empty box), the run's cells set side by side. A photo's
    blurred strokes inside one crop of the whole comb read as commas and "1"s ("14031988"
    read "1 410,3,1,9 818"); each cell cut between its strokes, the frame's top line and
    the comb's line blanked, reads as the letter it holds."""
    from .rec import crop_box

    pitch = float(np.median(np.diff(ticks)))
    margin = max(3.0, 0.1 * pitch)
    runs: list[list[np.ndarray]] = [[]]
    for a, b in zip(ticks, ticks[1:], strict=False):
        xa, xb = a + margin, b - margin
        ya, yb = (y_first + slope * (x - ticks[0]) - 2 for x in (xa, xb))
        box = np.array([[xa, ya - height], [xb, yb - height], [xb, yb], [xa, ya]], np.float32)
        crop = crop_box(image if image.ndim == 3 else np.dstack([image] * 3), box)
        grey = crop.astype(np.float32).mean(2)
        ground = float(np.median(grey))
        dark = grey < ground - DARK
        # a frame's top line or a side stroke caught at the edge: blanked
        rows, edge = dark.mean(1) > 0.6, dark.mean(0) > 0.6
        crop[rows] = np.uint8(min(255, ground))
        crop[:, edge] = np.uint8(min(255, ground))
        dark[rows] = False
        dark[:, edge] = False
        if dark.sum() < max(4, 0.01 * dark.size):  # a blank cell
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(crop)
    import cv2

    tall = int(round(height))  # a tilted box's crops differ by a row or so
    return [(np.ascontiguousarray(np.hstack([
        c if c.shape[0] == tall else cv2.resize(c, (c.shape[1], tall),
                                                interpolation=cv2.INTER_LINEAR)
        for c in r])), len(r)) for r in runs if r]


def _spread_marks(text: str, ext) -> bool:
    """A piece of 3-16 letters and digits, no closer set than one a 0.7 height, with a
    mark (not a letter or digit) between two of them."""
    t = text.replace(" ", "")
    n = sum(c.isalnum() for c in t)
    x0, y0, x1, y1 = ext
    return 3 <= n <= 16 and n <= (x1 - x0) / (0.7 * (y1 - y0)) + 1 and \
        any(not c.isalnum() for c in t[1:-1])


def join_combs(rows: list[list[int]], boxes: list, texts: list[str],
               image: np.ndarray, read=None) -> tuple[list[str], list[np.ndarray]]:
    """``(texts, boxes)`` with each row's pieces that stand in one comb joined into the first
    of them (its box the union, the others' texts ""), the spaces inside them dropped, one
    space where a whole cell between two pieces is blank. A piece that holds more characters
    than the cells it spans (a table's cell, a word beside the comb) leaves the row as read.
    """
    texts = list(texts)
    boxes = [np.asarray(b, np.float64) for b in boxes]
    if image is None or not rows:
        return texts, boxes
    gray = None  # the page's grey levels, made for the first row that may be a comb
    for row in rows:
        if not row:
            continue
        ext = {i: _extent(boxes[i]) for i in row}
        heights = [e[3] - e[1] for e in ext.values()]
        height = float(np.median(heights))
        # only upright rows: wider than tall pieces or single characters
        if height < 8 or any(e[3] - e[1] > 1.6 * height for e in ext.values()):
            continue
        # at least two characters standing alone (a piece of one, or one between spaces);
        # or, where the cells can be read again, a short piece with marks inside its
        # characters, spread wide (a photo's comb strokes read as "8.033", "410,3,1,9")
        if sum(len(t) == 1 and t.isalnum() for i in row for t in texts[i].split()) < 2 and \
                not (read is not None and any(_spread_marks(texts[i], ext[i]) for i in row)):
            continue
        y0 = float(np.median([e[1] for e in ext.values()]))
        y1 = float(np.median([e[3] for e in ext.values()]))
        x0 = min(e[0] for e in ext.values()) - height
        x1 = max(e[2] for e in ext.values()) + height
        centres = np.array([((e[0] + e[2]) / 2, (e[1] + e[3]) / 2) for e in ext.values()])
        slope = 0.0
        if len(row) >= 2 and np.ptp(centres[:, 0]) > 2 * height:
            slope = float(np.polyfit(centres[:, 0], centres[:, 1], 1)[0])
        else:  # one piece: its box's bottom edge
            p = np.asarray(boxes[row[0]], np.float64)
            if p.shape == (4, 2) and abs(p[2, 0] - p[3, 0]) > height:
                slope = float((p[2, 1] - p[3, 1]) / (p[2, 0] - p[3, 0]))
        if abs(slope) > 0.1:
            continue
        mid = (y0 + y1) / 2 + slope * ((x0 + x1) / 2 - float(np.mean(centres[:, 0])))
        if gray is None:
            gray = image if image.ndim == 2 else image[..., :3].mean(2)
        found = comb_line(gray, x0, x1, mid - (y1 - y0) / 2, mid + (y1 - y0) / 2, height,
                          slope)
        if found is None:
            continue
        ticks = found[0]
        pitch = float(np.median(np.diff(ticks)))
        inside = sorted((i for i in row if ticks[0] - 0.3 * pitch <= (ext[i][0] + ext[i][2]) / 2
                         <= ticks[-1] + 0.3 * pitch), key=lambda i: ext[i][0])
        if not inside:
            continue
        # each piece holds about one character a cell it spans; where the cells are read
        # again, at most a stroke read as "1" or "," besides each ("1 410,3,1,9 818")
        if any(len(texts[i].replace(" ", "")) >
               (2 if read is not None else 1) * round((ext[i][2] - ext[i][0]) / pitch) + 1
               for i in inside):
            continue
        again = None
        if read is not None:
            # the comb's whole run of cells: a photo's detector box can stop a cell short
            # of the last character ("8033" for "80331")
            wide = comb_line(gray, x0 - height, x1 + height, mid - (y1 - y0) / 2,
                             mid + (y1 - y0) / 2, height, slope) or found
            strips = cell_strips(image, *wide, height)
            said = [t.replace(" ", "") for t in read([c for c, _ in strips])] if strips else []
            if said and all(len(t) == n and t.isalnum() for t, (_, n) in
                            zip(said, strips, strict=True)):
                again = " ".join(said)
        if again is None and len(inside) < 2 and not any(" " in texts[i].strip()
                                                         for i in inside):
            continue
        parts = [texts[inside[0]].replace(" ", "")]
        for a, b in zip(inside, inside[1:], strict=False):
            gap = ext[b][0] - ext[a][2]
            parts.append((" " if gap > 1.2 * pitch else "") + texts[b].replace(" ", ""))
        first = inside[0]
        texts[first] = "".join(parts) if again is None else again
        pts = np.concatenate([boxes[i] for i in inside])
        (bx0, by0), (bx1, by1) = pts.min(0), pts.max(0)
        boxes[first] = np.array([[bx0, by0], [bx1, by0], [bx1, by1], [bx0, by1]])
        for i in inside[1:]:
            texts[i] = ""
    return texts, boxes
