"""A box holding one symbol the recognizer misreads, written as its ink's shape says.

The ``ch`` dictionary holds "☀", "♥", "★" and "☺", but the recognizer reads a lone sun
in DejaVu's faces as "米" (a CJK character; RapidOCR the same), a heart as "A", "V", "4" or
"P", a star as "￥", "0" or "X", a smiling face as "⑤" (round 39, `sym.py`: DejaVu Sans,
Serif, Sans Mono and Noto Sans CJK at 22 and 32 px). Their ink is unlike any letter's or
CJK character's: measured as the largest disc inside the ink (the distance transform's
peak) over the glyph's larger side, a letter or digit of the installed Latin faces,
regular and bold, stays at or under 0.18 and a CJK character's strokes under 0.16, where
a heart reaches 0.30-0.34 (one solid component, filling its hull, 1.01-1.10), a star
0.21-0.27 (one component filling 0.56-0.77 of its hull), a sun's disc 0.17-0.27 with its
rays apart (4-9 components); a filled bullet or square reaches 0.46-0.52. A smiling
face is a ring holding two or three marks (eyes and mouth): a "©", "®" or circled digit
holds one."""

from __future__ import annotations

import numpy as np

from .spacing import ink_mask

__all__ = ["lone_symbol"]

# a disc of at least SOLID of the glyph's larger side fits in a symbol's ink (0.18 at most
# in a letter); under FILLED (a bullet's, a square's 0.46 or more)
SOLID, FILLED = 0.2, 0.4
# a heart fills its hull (HEART_HULL or more), a star's points leave STAR_HULL of it empty
HEART_HULL, STAR_HULL = (0.9, 1.2), (0.5, 0.8)
# and a heart's cleft dents its hull by HEART_NOTCH of its side or more (a triangle's, a
# diamond's, a disc's outline by none)
HEART_NOTCH = 0.05
SUN_DISC, SUN_RAYS = 0.15, 4


def _shape(crop: np.ndarray) -> tuple[int, float, float, int, float] | None:
    """``(components, disc, hull fill of the largest, marks inside its ring, notch)`` of
    the crop's ink (components of 2 pixels or more), the disc and the deepest dent of the
    largest's outline into its hull over the ink's larger side."""
    import cv2

    bw = ink_mask(crop)
    n, lab, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    keep = [k for k in range(1, n) if stats[k, 4] >= 2]
    if not keep:
        return None
    ys, xs = np.nonzero(np.isin(lab, keep))
    side = float(max(ys.max() - ys.min() + 1, xs.max() - xs.min() + 1))
    if side < 10:
        return None
    big = max(keep, key=lambda k: stats[k, 4])
    own = (lab == big).astype(np.uint8)
    disc = float(cv2.distanceTransform(own, cv2.DIST_L2, 3).max()) / side
    contours, _ = cv2.findContours(own, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    hull = float(cv2.contourArea(cv2.convexHull(max(contours, key=cv2.contourArea))))
    fill = float(stats[big, 4]) / max(hull, 1.0)
    notch = 0.0  # the deepest dent of the outline into its hull (a heart's cleft)
    outline = max(contours, key=cv2.contourArea)
    if len(outline) >= 4:
        try:  # OpenCV refuses some self-touching outlines ("not monotonous")
            defects = cv2.convexityDefects(outline, cv2.convexHull(outline, returnPoints=False))
        except cv2.error:
            defects = None
        if defects is not None and np.asarray(defects).size:
            notch = float(np.asarray(defects).reshape(-1, 4)[:, 3].max()) / 256.0 / side
    filled = own.copy()
    cv2.drawContours(filled, contours, -1, 1, thickness=cv2.FILLED)
    inside = sum(1 for k in keep if k != big and filled[int(stats[k, 1] + stats[k, 3] // 2),
                                                        int(stats[k, 0] + stats[k, 2] // 2)])
    return len(keep), disc, fill, inside, notch


def lone_symbol(text: str, crop: np.ndarray) -> str:
    """``text`` where it is one character alone in its box ("米", "A", "￥" ...), written as
    the symbol its ink's shape says (see the module): "♥" for one solid component whose
    inner disc is :data:`SOLID` to :data:`FILLED` of its side and that fills its hull
    (:data:`HEART_HULL`) but for a cleft (:data:`HEART_NOTCH`), "★" for such a component
    with :data:`STAR_HULL` of its hull, "☀" for a disc of :data:`SUN_DISC` among
    :data:`SUN_RAYS` components or more, "☺" for a ring (a thin largest component)
    holding two marks or more (eyes and mouth; a small face's mouth can touch its ring).
    Else as read."""
    t = text.strip()
    if len(t) != 1 or crop.ndim < 2 or min(crop.shape[:2]) < 10:
        return text
    found = _shape(crop)
    if found is None:
        return text
    parts, disc, fill, inside, notch = found
    if parts == 1 and SOLID <= disc < FILLED:
        if HEART_HULL[0] <= fill <= HEART_HULL[1] and notch >= HEART_NOTCH:
            return "\u2665"
        if STAR_HULL[0] <= fill <= STAR_HULL[1]:
            return "\u2605"
    if parts >= SUN_RAYS and SUN_DISC <= disc < FILLED and inside == 0:
        return "\u2600"
    if disc < SUN_DISC and inside >= 2:
        return "\u263a"
    return text
