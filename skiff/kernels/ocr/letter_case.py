"""A letter whose two cases share one shape, written in the case its height says.

"c", "o", "s", "v", "w", "x", "z" differ from "C", "O", "S", "V", "W", "X", "Z" only in
height, and the recognizer reads a short box's first letter or a lone letter in either
case now and then: a shortcut sheet's keycaps "Ctrl + C" and "Ctrl + Z" in DejaVu Sans
Mono Bold read "ctrl + c", "Ctrl + z" (round 39). The line's other letters tell the
height of a capital (capitals, digits, "b d h k l") and of a small letter ("a e m n r u")."""

from __future__ import annotations

import re

import numpy as np

from .images import grey_of
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
# a glyph's height is measured to a fraction of a pixel over its ink grown by SOFT_REACH px;
# so measured, a small "c o s v w x z" of the installed DejaVu and Liberation faces (14-30
# px, sharp and blurred) is 0.63-0.86 of a capital's height, a capital "C O S V W X Z"
# 0.90-1.06: where the line holds capitals but no small letter to measure, a two-case
# letter of X_SMALL of the capitals' height is small
SOFT_REACH = 2
X_SMALL = (0.6, 0.88)
# "b d h k l" rise above the capitals (DejaVu Sans 1556 against 1493 units, Liberation Sans
# 1466 against 1409): as references their heights count ASCENDER of what they measure (a
# phone photo's "Chemistry" in round 35's timetable, "C" 13.3 px against "h" 15.1)
ASCENDER = 0.96
_ASCENDING = set("bdhkl")


def _glyphs(crop: np.ndarray) -> list[tuple[int, int, int, int]] | None:
    """The crop's glyphs left to right as ``(left, right, top, bottom)``: its ink's
    components, less those reaching both its top and bottom rows (a frame's sides round
    the print: a keycap's, a cell's), those overlapping in columns joined into one."""
    found = _glyph_parts(crop)
    return None if found is None else [g[:4] for g in found[0]]


def _glyph_parts(crop: np.ndarray):
    """:func:`_glyphs` with each glyph's components: ``([(left, right, top, bottom,
    [labels])...], labels image, ink mask)``."""
    import cv2

    bw = ink_mask(crop)
    n, lab, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    h = bw.shape[0]
    parts = sorted((int(x), int(x + w), int(y), int(y + hh), k + 1)
                   for k, (x, y, w, hh, area) in enumerate(stats[1:])
                   if not (y == 0 and y + hh >= h) and area >= 2)
    glyphs: list[list] = []
    for x0, x1, y0, y1, k in parts:  # a dot over its stem, "=": one glyph; kerned "Wa": two
        if glyphs and min(x1, glyphs[-1][1]) - x0 >= 0.5 * min(x1 - x0,
                                                               glyphs[-1][1] - glyphs[-1][0]):
            g = glyphs[-1]
            g[1], g[2], g[3] = max(g[1], x1), min(g[2], y0), max(g[3], y1)
            g[4].append(k)
        else:
            glyphs.append([x0, x1, y0, y1, [k]])
    return [tuple(g) for g in glyphs], lab, bw


def _crowded(glyphs, k: int) -> bool:
    """Whether glyph ``k``'s columns overlap a neighbour's: a glyph in two parts (the
    weather card's "%", its ring apart) puts the letters after it on the wrong glyphs, and
    the "W" of "Rain 80% Wind" was measured on the ring and written "w"."""
    x0, x1 = glyphs[k][0], glyphs[k][1]
    return (k > 0 and x0 < glyphs[k - 1][1]) or (k + 1 < len(glyphs) and
                                                  x1 > glyphs[k + 1][0])


def _soft_heights(crop: np.ndarray, glyphs, lab: np.ndarray, bw: np.ndarray) -> list[float]:
    """Each glyph's height in fractions of a pixel: in its columns, over the glyphs' ink
    grown by :data:`SOFT_REACH` px, the darkest pixel of each row as a share of the median
    of those over its inked rows (at most 1), summed. A blur spreads an edge's ink over two
    or three rows and Otsu's threshold counts them whole or not at all, by where the grid
    falls: a
    phone photo's 20-px Liberation Mono "o" and "v" (x-height 10.6 px) measured 12 px
    against the capitals' 13 and were written "NOV" for "Nov"; the sum of a blurred
    edge's darkness is where the sharp edge was."""
    import cv2

    if crop.ndim == 3 and crop.shape[2] == 3 and crop.dtype == np.uint8:
        grey = grey_of(crop).astype(np.float32)  # as `ink_mask` greys it, in 16 bits
    else:
        grey = (crop.mean(2) if crop.ndim == 3 else crop).astype(np.float32)
    paper = grey[bw == 0]
    ground = float(np.median(paper[::max(1, paper.size // 2000)])) if paper.size else 255.0
    dark = np.abs(grey - ground)
    kernel = np.ones((2 * SOFT_REACH + 1, 2 * SOFT_REACH + 1), np.uint8)
    keep = np.zeros(int(lab.max()) + 1, bool)
    keep[[k for g in glyphs for k in g[4]]] = True  # the glyphs' ink, no frame's
    near = np.where(cv2.dilate(keep[lab].view(np.uint8), kernel) > 0, dark, 0.0)
    # each glyph's rows' darkest pixel in its own columns (one reduction over the bounds)
    bounds = sorted({g[0] for g in glyphs} | {g[1] for g in glyphs})
    seg = np.maximum.reduceat(near, bounds[:-1], axis=1)  # (rows, segments)
    at = {x: i for i, x in enumerate(bounds)}
    first = np.array([at[g[0]] for g in glyphs])
    rows = seg[:, first].T.copy()  # (glyphs, rows): most glyphs are one segment
    for i, g in enumerate(glyphs):
        if at[g[1]] - at[g[0]] > 1:  # overlapping glyphs: their segments together
            rows[i] = seg[:, at[g[0]]:at[g[1]]].max(1)
    ys = np.arange(rows.shape[1])
    inked = (ys >= np.array([g[2] for g in glyphs])[:, None]) & \
        (ys < np.array([g[3] for g in glyphs])[:, None])
    ordered = np.sort(np.where(inked, rows, np.inf), axis=1)  # the inked rows first
    n = inked.sum(1)
    pick = np.arange(len(glyphs))
    level = 0.5 * (ordered[pick, (n - 1) // 2] + ordered[pick, n // 2])  # their median
    soft = np.minimum(rows / np.maximum(level, 1e-6)[:, None], 1.0).sum(1)
    plain = np.array([g[3] - g[2] for g in glyphs], np.float64)
    return [float(v) for v in np.where(level > 0, soft, plain)]


# a line of CJK with its Latin words after it ("有机绿茶 Organic Green Tea": a label's name
# and its English), whose CJK characters are several components each: the Latin words are
# looked at on their own, from the crop's glyphs as many as their letters, where a gap of at
# least TAIL_GAP of the line's ink height stands before them
TAIL_GAP = 0.25
_TAIL = re.compile(r"(?<=[\u3000-\u9fff\uff00-\uffef]) ([A-Za-z0-9][A-Za-z0-9 .,'&-]*)$")


def _latin_tail(text: str, crop: np.ndarray, glyphs) -> str:
    """``text`` with the Latin words that end it after a CJK character (and a space) put
    in their case by :func:`letter_case` on the crop's columns that hold them; ``text``
    unchanged where there are none, or the crop's glyphs do not stand apart before them."""
    m = _TAIL.search(text)
    if m is None:
        return text
    n = sum(not c.isspace() for c in m.group(1))
    if len(glyphs) <= n:
        return text
    before, first = glyphs[-n - 1], glyphs[-n]
    ink_h = max(g[3] for g in glyphs) - min(g[2] for g in glyphs)
    if first[0] - before[1] < TAIL_GAP * ink_h:
        return text
    cut = (before[1] + first[0]) // 2
    return text[:m.start(1)] + letter_case(m.group(1), crop[:, cut:])


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
    glyphs, lab, bw = _glyph_parts(crop)
    if glyphs and len(glyphs) != len(chars):
        return _latin_tail(text, crop, glyphs)
    if not glyphs:
        return text
    # heights, not tops: a photo's turned or curved line moves the tops along it; to a
    # fraction of a pixel, as a blur leaves them (:func:`_soft_heights`)
    heights = _soft_heights(crop, glyphs, lab, bw)
    caps = [hh * (ASCENDER if c in _ASCENDING else 1.0)
            for c, hh in zip(chars, heights, strict=True) if c in _CAP_HIGH]
    small = [hh for c, hh in zip(chars, heights, strict=True) if c in _SMALL]
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
        high = heights[k]
        k += 1
        if c in _TWO_CASES and not _crowded(glyphs, k - 1):
            if abs(high - tall) <= CAP_NEAR * tall:
                c = c.upper()
            elif abs(high - low) <= CAP_NEAR * tall or \
                    not small and X_SMALL[0] * tall <= high <= X_SMALL[1] * tall:
                c = c.lower()
        out.append(c)
    return "".join(out)
