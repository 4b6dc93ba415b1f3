"""An arrow the detector left unboxed between two boxes of one row, put into the reading.

A boarding pass's "HAM → LHR" (DejaVu Sans Bold 52 px) read "HAM LHR": the detector boxes
the two codes and leaves the arrow between them, a glyph of no letters, out (round 41,
``bench_ocr_user41.py``). Between two boxes of a row the ink of the gap is looked at: one
component, clear of the gap's edges (a rule or frame runs through them), as tall as
:data:`ARROW_TALL` of the boxes' height at most and wider than high, a shaft through its
middle rows spanning its width, a head at one end (the ink's columns there :data:`HEAD` times
as high as the shaft's, the shaft's columns of one height), top and bottom mirror images of
each other: written "→" (or "←") at the head of the right box's reading."""

from __future__ import annotations

import numpy as np

__all__ = ["row_arrows"]

# two boxes of a row at least GAP_OF_HEIGHT of their height apart are looked between
GAP_OF_HEIGHT = 0.6
# the arrow: at most ARROW_TALL of the boxes' height high, at least ARROW_SMALL of it, as
# wide as ARROW_WIDE of its height; its shaft spans SHAFT_SPAN of its width in one row, in
# the middle band MID of its height; its head's columns HEAD times as high as the shaft's
ARROW_TALL, ARROW_SMALL, ARROW_WIDE = 0.9, 0.2, 1.3
SHAFT_SPAN, MID, HEAD = 0.85, (0.3, 0.7), 1.8
# its top and bottom halves cover each other's ink (flipped, within a row's shift: the
# pixel grid puts a small arrow's head a row off its middle) to MIRROR or more
MIRROR = 0.75
_ARROWS = "\u2192\u2190\u21d2\u21d0\u27f6\u27f5>-<"


def _bounds(box) -> tuple[float, float, float, float]:
    b = np.asarray(box, np.float64).reshape(-1, 2)
    return float(b[:, 0].min()), float(b[:, 0].max()), float(b[:, 1].min()), float(b[:, 1].max())


def _arrow(mask: np.ndarray) -> str | None:
    """"→" or "←" where the 0/1 mask of one component (cut to its box) is an arrow, else
    None."""
    h, w = mask.shape
    if h < 5 or w < ARROW_WIDE * h:
        return None
    cols = mask.sum(0).astype(np.float64)
    runs = mask.sum(1)  # the widest row: the shaft (one run across: rows are filled)
    full = np.flatnonzero(runs >= SHAFT_SPAN * w)
    if not full.size:
        return None
    mid = (full[0] + full[-1] + 1) / 2.0 / h
    if not MID[0] <= mid <= MID[1] or full.size > 0.5 * h:
        return None
    third = max(1, w // 3)
    left, right = cols[:third], cols[-third:]
    shaft = float(np.median(cols))
    if shaft <= 0:
        return None
    if right.max() >= HEAD * shaft and left.max() <= 1.5 * shaft:
        sym = "\u2192"
    elif left.max() >= HEAD * shaft and right.max() <= 1.5 * shaft:
        sym = "\u2190"
    else:
        return None
    body = cols[:w // 2] if sym == "\u2192" else cols[w - w // 2:]
    if body.max() - body.min() > max(2.0, 0.5 * shaft):
        return None  # the shaft's columns vary: a letter's strokes, not a bar
    flipped = np.pad(mask[::-1], ((1, 1), (0, 0)))
    cover = max(float((mask & flipped[s:s + h]).sum()) for s in range(3))
    if cover < MIRROR * float(mask.sum()):
        return None
    return sym


def row_arrows(rows: list[list[int]], boxes: list[np.ndarray], texts: list[str],
               image: np.ndarray) -> list[str]:
    """``texts`` with an arrow put at the head of a box's reading where the gap before it
    in its row holds one (see the module). Cheap: only two boxes of a row
    :data:`GAP_OF_HEIGHT` of their height apart or more are looked between, on a band of
    the image as high as the boxes' overlap."""
    import cv2

    from .spacing import ink_mask

    out = list(texts)
    if image is None or image.ndim < 2:
        return out
    H, W = image.shape[:2]
    for row in rows:
        if len(row) < 2:
            continue
        order = sorted(row, key=lambda i: _bounds(boxes[i])[0])
        for i, j in zip(order, order[1:]):
            if not texts[i] or not texts[j] or texts[i][-1] in _ARROWS or \
                    texts[j][0] in _ARROWS:
                continue
            a, b = _bounds(boxes[i]), _bounds(boxes[j])
            hgt = min(a[3] - a[2], b[3] - b[2])
            if hgt < 8 or b[0] - a[1] < GAP_OF_HEIGHT * hgt:
                continue
            y0, y1 = int(max(a[2], b[2])), int(np.ceil(min(a[3], b[3])))
            x0, x1 = int(np.ceil(a[1])) + 1, int(b[0]) - 1
            if y1 - y0 < 0.6 * hgt or x1 - x0 < 4:
                continue
            y0, y1, x0, x1 = max(0, y0), min(H, y1), max(0, x0), min(W, x1)
            band = image[y0:y1, x0:x1]
            if band.size == 0:
                continue
            ref = image[int(max(0, a[2])):int(min(H, a[3])) + 1,
                        int(max(0, a[0])):int(min(W, a[1])) + 1]
            mask = _ink_like(band, ref, ink_mask)
            if mask is None:
                continue
            n, lab, st, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
            big = [k for k in range(1, n) if st[k, 4] >= 0.02 * hgt * hgt]
            if len(big) != 1:
                continue
            k = big[0]
            x, y, w, h = (int(v) for v in st[k, :4])
            if y == 0 or y + h >= mask.shape[0] or x == 0 or x + w >= mask.shape[1]:
                continue  # a rule, a frame or a letter cut by the band
            if not ARROW_SMALL * hgt <= h <= ARROW_TALL * hgt:
                continue
            sym = _arrow((lab[y:y + h, x:x + w] == k).astype(np.uint8))
            if sym is not None:
                out[j] = f"{sym} {out[j]}"
    return out


def _ink_like(band: np.ndarray, ref: np.ndarray, ink_mask) -> np.ndarray | None:
    """The band's ink as the box beside it has it: pixels as far from the band's ground as
    half the box's ink is from its own; None where the band holds no such contrast."""
    def grey(a):
        return a.astype(np.float32).mean(2) if a.ndim == 3 else a.astype(np.float32)

    g, r = grey(band), grey(ref)
    if r.size == 0:
        return None
    rm = ink_mask(ref if ref.dtype == np.uint8 else ref.astype(np.uint8))
    if not rm.any() or rm.all():
        return None
    ink, ground = float(np.median(r[rm > 0])), float(np.median(r[rm == 0]))
    if abs(ink - ground) < 40:
        return None
    near = np.abs(g - ink) < 0.5 * abs(ink - ground)
    return near.astype(np.uint8) if near.any() else None
