"""A key the detector left unboxed after a "+" (a shortcut sheet's "Ctrl + C" as a phone
photo reads "Ctrl +": the single letter in its keycap is no text to the detector), read
from its keycap's inside."""

from __future__ import annotations

import numpy as np

from .spacing import ink_mask

__all__ = ["dangling_keys"]

# the keycap's frame begins within REACH of the line's height right of a line ending in "+",
# as tall as CAP_TALL of it or more and as wide as CAP_WIDE (a letter's cap to "Shift"'s)
REACH, CAP_TALL, CAP_WIDE = 1.0, 0.8, (0.6, 3.0)
# a frame is hollow: its ink fills under HOLLOW of its box
HOLLOW = 0.45


def _extent(box) -> tuple[float, float, float, float]:
    b = np.asarray(box, np.float64).reshape(-1, 2)
    return float(b[:, 0].min()), float(b[:, 1].min()), float(b[:, 0].max()), float(b[:, 1].max())


def _keycap(image: np.ndarray, ext, others) -> tuple[int, int, int, int] | None:
    """The inside ``(x0, y0, x1, y1)`` of a keycap right of the line's extent ``ext`` that no
    other box covers and that holds ink, or None."""
    import cv2

    x0, y0, x1, y1 = ext
    h = y1 - y0
    H, W = image.shape[:2]
    wa, wb = int(x1), int(min(W, x1 + (REACH + CAP_WIDE[1]) * h))
    ya, yb = int(max(0, y0 - 0.3 * h)), int(min(H, y1 + 0.3 * h))
    if wb - wa < 0.6 * h or yb - ya < 8:
        return None
    for o in others:  # the key was boxed after all
        if o[0] < wa + (REACH + CAP_WIDE[0]) * h and o[2] > wa and o[1] < yb and o[3] > ya:
            return None
    window = image[ya:yb, wa:wb]
    bw = ink_mask(window)
    n, lab, st, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    for k in sorted(range(1, n), key=lambda k: st[k, 0]):
        x, y, w, hh, area = (int(v) for v in st[k])
        if x > REACH * h:
            break
        if hh < CAP_TALL * h or not CAP_WIDE[0] * h <= w <= CAP_WIDE[1] * h or \
                area >= HOLLOW * w * hh or y == 0 or y + hh >= bw.shape[0]:
            continue
        t = max(2, int(round(0.12 * hh)))
        inside = bw[y + t:y + hh - t, x + t:x + w - t].copy()
        inside[lab[y + t:y + hh - t, x + t:x + w - t] == k] = 0
        if inside.sum() < 0.03 * inside.size:
            continue  # an empty keycap
        return wa + x + t, ya + y + t, wa + x + w - t, ya + y + hh - t
    return None


def dangling_keys(rows: list[list[int]], boxes: list, texts: list[str], image: np.ndarray,
                  read) -> list[str]:
    """``texts`` with each line that ends in "+" followed by the key read from the keycap
    right of it (a hollow frame beginning within :data:`REACH` of the line's height, as
    tall as :data:`CAP_TALL` of it, holding ink, no other box over it): ``read`` (crops ->
    texts, the recognizer) reads its inside, and a key of one to four letters or digits
    ("C", "L", "F5") is appended, a single letter as a capital (as keys are printed).
    Cheap where no line ends in "+"."""
    texts = list(texts)
    ends = [i for row in rows for i in row if texts[i].rstrip().endswith("+")]
    if not ends or image is None or read is None:
        return texts
    exts = [_extent(b) for b in boxes]
    for i in ends:
        others = [e for j, e in enumerate(exts) if j != i]
        cap = _keycap(image, exts[i], others)
        if cap is None:
            continue
        x0, y0, x1, y1 = cap
        crop = np.ascontiguousarray(image[y0:y1, x0:x1])
        pad = max(4, (y1 - y0) // 2)
        import cv2

        crop = cv2.copyMakeBorder(crop, pad, pad, pad, pad, cv2.BORDER_REPLICATE)
        key = (read([crop]) or [""])[0].strip()
        if 1 <= len(key) <= 4 and key.isalnum() and key.isascii():
            # a letter key is printed as its capital (a lone "c" in a crop has no x-height
            # beside it to tell its case: `letter_case` cannot say)
            texts[i] = texts[i].rstrip() + " " + (key.upper() if len(key) == 1 else key)
    return texts
