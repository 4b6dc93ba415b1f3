"""Hard images: one detector box that holds several lines, cut into its lines by the ink.

On a small, noisy label turned by tens of degrees the DB detector often boxes the whole
block of two or three lines as one region, surely (score 0.9), level or along the lines, and
the recognizer reads the block as one character ("三" for three lines, "一" for two): the
image reads nothing. Its lines still show plainly in the ink's profile across them (the
noise averages out over a line's length). :func:`split_joined` turns the image level by the
ink's own angle (:func:`.deskew.skew_angle`), takes the profile of each box across the
lines, and where it shows two or more bands of about one height apart by a clear valley,
puts one box on each band in the box's place.

>>> import numpy as np
>>> img = np.full((60, 120), 230, np.uint8)
>>> for y in (12, 34): img[y:y + 10, 10:110:4] = 20; img[y:y + 10, 11:110:4] = 20
>>> box = np.array([[5, 55], [5, 5], [115, 5], [115, 55]], np.float32)  # boxed across
>>> along = box[[1, 2, 3, 0]]                  # the same box along the lines
>>> len(split_joined(img, [(box, 0.9)], 0.0)), len(split_joined(img, [(along, 0.9)], 0.0))
(2, 1)
"""

from __future__ import annotations

import numpy as np

from .deskew import level

__all__ = ["split_joined", "bands"]

# a valley between two lines falls under this share of the profile's peak (over its floor)
VALLEY = 0.35
# bands of a box are at most this many times one another's height (a line and an underline
# or a stray mark are not two lines)
BAND_RATIO = 2.5
# a band is at least this many pixels high (of the image as given)
BAND_LEAST = 5
# lines are apart by at least this share of their mean height (a line's own gaps, between
# its x-height and an underline, are a pixel or two)
LEADING = 0.25
# a box whose top edge runs within this many degrees of the lines is along them: one line
# (a line in perspective, or one the profile would cut at a gap of its own, is not cut)
ACROSS = 10.0
# each line's box grows by this share of its band's height above and below (the DB boxes are
# drawn around the ink with about this margin)
GROW = 0.3


def bands(ink: np.ndarray) -> list[tuple[int, int]]:
    """The text lines in ``ink`` (a level crop, ink high, ground near 0) as row spans
    ``[(top, bottom)]``: runs of the row profile over ``VALLEY`` of its peak, at least
    ``BAND_LEAST`` rows, apart by a valley under it, of heights within ``BAND_RATIO``;
    one span or none when the crop shows no clear lines.

    >>> x = np.zeros((40, 50)); x[5:13] = 1; x[22:31] = 1
    >>> bands(x)
    [(5, 13), (22, 31)]
    >>> x[13:22] = 0; x[14:22] = 1; bands(x)    # one row apart: one line's own gap
    []
    """
    prof = ink.mean(axis=1)
    if prof.size < 2 * BAND_LEAST:
        return []
    floor = float(np.percentile(prof, 10))
    peak = float(prof.max()) - floor
    if peak <= 0:
        return []
    on = (prof - floor) > VALLEY * peak
    runs, start = [], None
    for y, v in enumerate(np.append(on, False)):
        if v and start is None:
            start = y
        elif not v and start is not None:
            runs.append((start, y))
            start = None
    runs = [r for r in runs if r[1] - r[0] >= BAND_LEAST]
    if len(runs) < 2:
        return runs
    heights = [b - a for a, b in runs]
    gaps = [c - b for (_, b), (c, _) in zip(runs, runs[1:])]
    if max(heights) > BAND_RATIO * min(heights) or \
            min(gaps) < max(2.0, LEADING * float(np.mean(heights))):
        return []
    return runs


def _ink(grey: np.ndarray) -> np.ndarray:
    """How far each pixel of ``grey`` is from the ground (its median) on the side the
    print is on (the longer tail), smoothed so that pixel noise averages out."""
    import cv2

    g = cv2.GaussianBlur(grey.astype(np.float32), (0, 0), 1.5)
    mid = float(np.median(g))
    lo, hi = np.percentile(g, (2, 98))
    return np.maximum(mid - g, 0) if mid - lo >= hi - mid else np.maximum(g - mid, 0)


def split_joined(grey: np.ndarray, boxes: list, degrees: float) -> list:
    """``boxes`` (``[(box, score)]`` on ``grey``) with each box that runs more than
    ``ACROSS`` degrees off the lines, turned ``degrees``, and holds several of them
    replaced by one box per line (:func:`bands` of the ink inside the box, seen level),
    corners in reading order along the lines; the other boxes as they are."""
    import cv2

    if not boxes:
        return boxes
    flat, m = level(grey, degrees)
    inv = np.linalg.inv(np.vstack([m, [0.0, 0.0, 1.0]]))[:2]
    h, w = grey.shape[:2]
    out = []
    for box, score in boxes:
        pts = np.asarray(box, np.float64) @ m[:, :2].T + m[:, 2]
        x0, y0 = np.maximum(np.floor(pts.min(0)).astype(int), 0)
        x1, y1 = np.minimum(np.ceil(pts.max(0)).astype(int), flat.shape[1::-1])
        top = np.asarray(box, np.float64)[1] - np.asarray(box, np.float64)[0]
        along = abs((np.degrees(np.arctan2(top[1], top[0])) - degrees + 90.0) % 180.0 - 90.0)
        if along <= ACROSS or y1 - y0 < 2 * BAND_LEAST or x1 - x0 < 2 * BAND_LEAST:
            out.append((box, score))  # a box along the lines is one of them
            continue
        inside = np.zeros((y1 - y0, x1 - x0), np.uint8)
        cv2.fillPoly(inside, [np.round(pts - [x0, y0]).astype(np.int32)], 1)
        ink = _ink(flat[y0:y1, x0:x1]) * inside
        found = bands(ink)
        if len(found) < 2:
            out.append((box, score))
            continue
        for top, bottom in found:
            cols = ink[top:bottom].mean(axis=0)
            lit = np.flatnonzero(cols > VALLEY * float(cols.max()))
            grow = GROW * (bottom - top)
            left, right = x0 + lit[0] - grow, x0 + lit[-1] + 1 + grow
            upper, lower = y0 + top - grow, y0 + bottom + grow
            line = np.array([[left, upper], [right, upper], [right, lower], [left, lower]])
            back = line @ inv[:, :2].T + inv[:, 2]
            back[:, 0] = np.clip(back[:, 0], 0, w - 1)
            back[:, 1] = np.clip(back[:, 1], 0, h - 1)
            out.append((back.astype(np.float32), score))
    return out
