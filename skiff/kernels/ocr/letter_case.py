"""A letter whose two cases share one shape, written in the case its height says.

"c", "o", "s", "v", "w", "x", "z" differ from "C", "O", "S", "V", "W", "X", "Z" only in
height, and the recognizer reads a short box's first letter or a lone letter in either
case now and then: a shortcut sheet's keycaps "Ctrl + C" and "Ctrl + Z" in DejaVu Sans
Mono Bold read "ctrl + c", "Ctrl + z" (round 39). The line's other letters tell the
height of a capital (capitals, digits, "b d h k l") and of a small letter ("a e m n r u")."""

from __future__ import annotations

import numpy as np

from .spacing import ink_mask

__all__ = ["letter_case"]

_TWO_CASES = "cosvwxzCOSVWXZ"
_CAP_HIGH = set("ABDEFGHIJKLMNPQRTUY0123456789bdhkl")
_SMALL = set("aemnru")
# a two-case letter (none has a descender) is a capital where its ink's height is within
# CAP_NEAR of the capitals' (over that height), small where within CAP_NEAR of the small
# letters'; the two heights at least CASE_GAP of the capital height apart (x-height
# 0.70-0.77 of it in the installed Latin faces), the capitals at least CASE_TALL px high
CAP_NEAR, CASE_GAP, CASE_TALL = 0.1, 0.18, 12
X_HEIGHT = 0.73


def _glyphs(crop: np.ndarray) -> list[tuple[int, int, int, int]] | None:
    """The crop's glyphs left to right as ``(left, right, top, bottom)``: its ink's
    components, less those reaching both its top and bottom rows (a frame's sides round
    the print: a keycap's, a cell's), those overlapping in columns joined into one."""
    import cv2

    bw = ink_mask(crop)
    n, _, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    h = bw.shape[0]
    parts = sorted((int(x), int(x + w), int(y), int(y + hh))
                   for x, y, w, hh, area in stats[1:] if not (y == 0 and y + hh >= h)
                   and area >= 2)
    glyphs: list[list[int]] = []
    for x0, x1, y0, y1 in parts:  # a dot over its stem, "=": one glyph; kerned "Wa": two
        if glyphs and min(x1, glyphs[-1][1]) - x0 >= 0.5 * min(x1 - x0,
                                                               glyphs[-1][1] - glyphs[-1][0]):
            g = glyphs[-1]
            g[1], g[2], g[3] = max(g[1], x1), min(g[2], y0), max(g[3], y1)
        else:
            glyphs.append([x0, x1, y0, y1])
    return [tuple(g) for g in glyphs]


def letter_case(text: str, crop: np.ndarray) -> str:
    """``text`` with each of its two-case letters ("c o s v w x z") in the case its ink's
    height says, where the crop's glyphs (:func:`_glyphs`) pair one to one with the reading's
    characters but spaces and the line holds capitals (or digits, "b d h k l") or small
    letters ("a e m n r u"), whose heights differ (:data:`CASE_GAP`, :data:`CASE_TALL`;
    with one kind alone, the other's height is set by :data:`X_HEIGHT`). Else, or where a
    letter's height lies near neither, it stays as read."""
    if crop.ndim < 2 or not any(c in _TWO_CASES for c in text):
        return text
    chars = [c for c in text if not c.isspace()]
    glyphs = _glyphs(crop)
    if not glyphs or len(glyphs) != len(chars):
        return text
    # heights, not tops: a photo's turned or curved line moves the tops along it
    caps = [g[3] - g[2] for c, g in zip(chars, glyphs, strict=True) if c in _CAP_HIGH]
    small = [g[3] - g[2] for c, g in zip(chars, glyphs, strict=True) if c in _SMALL]
    if not caps and not small:
        return text
    # one kind alone: the other's height from the x-height, X_HEIGHT of the capitals'
    tall = float(np.median(caps)) if caps else float(np.median(small)) / X_HEIGHT
    low = float(np.median(small)) if small else X_HEIGHT * tall
    if tall < CASE_TALL or tall - low < CASE_GAP * tall:
        return text
    # every reference as high as its kind: else a glyph is paired with the wrong letter
    # (a photo's blur joins two and a stray mark stands for a third) and nothing is sure
    if any(abs(h - tall) > CAP_NEAR * tall for h in caps) or \
            any(abs(h - low) > CAP_NEAR * tall for h in small):
        return text
    out, k = [], 0
    for c in text:
        if c.isspace():
            out.append(c)
            continue
        high = glyphs[k][3] - glyphs[k][2]
        k += 1
        if c in _TWO_CASES:
            if abs(high - tall) <= CAP_NEAR * tall:
                c = c.upper()
            elif abs(high - low) <= CAP_NEAR * tall:
                c = c.lower()
        out.append(c)
    return "".join(out)
