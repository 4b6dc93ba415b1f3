"""Glare on a photo: a bright reflection washing part of the print out, and the second
reading of such a photo on contrast-boosted pixels (:func:`read_glare`).

A glossy sign or page photographed under a lamp has a patch where added light saturates the
paper to white; the print inside it keeps a few grey levels, and the detector puts no box
over it (docs/ocr.md "Round 41 (h1)": 141/25's "小心台阶" read "台阶", its one line at
score 1.00, so no unsure reading asks for a second look). :func:`has_glare` tells such a
photo from its pixels alone, cheaply (a 256-px copy: the paper level under the ink, a
saturated patch of it falling off smoothly to paper well under white, ink inside the patch
and outside it); :func:`boosted` is the photo with CLAHE on its lightness. Only where the
test fires is the photo detected and read again boosted, and a line of that reading is kept
only where the first reading had none, or where it holds a first line whole and reads more
characters (:func:`read_glare`).
"""

from __future__ import annotations

import time

import numpy as np

from .images import grey_of
from .item import Item
from .twins import charge_time, lines_by_image, read_twins

# the test's copy of the photo is at most this many pixels on its long side
SIDE = 256
# the paper under the ink (a dilation, then a box blur, of the grey copy) counts as
# saturated from this level up ...
WHITE = 248
# ... and as plain paper, well under the glare, between these levels
PAPER = (120, 232)
# the saturated patch covers this share of the photo, at least and at most: a white page
# is all of it, a glint on a frame a speck
PATCH = (0.05, 0.6)
# the test stops at once where white pixels of the copy itself cover less or more than
# this share of it (the patch's paper, under its print, covers PATCH)
WHITE_SHARE = (0.02, 0.75)
# ... and, before that copy is made, where they cover less or more than this share of a
# coarse glance at the photo (~64 px across)
GLANCE = (0.01, 0.9)
# a smooth fall-off: paper between PAPER[1] and WHITE covers at least this share, and ...
RAMP = 0.03
# ... plain paper at least this share (a page that is white all over has none)
PLAIN = 0.06
# ink (this much darker than its paper, in grey levels) covers at least this share of the
# patch and of the plain paper: print runs under the reflection and out of it
INK_STEP = 12
INK_SHARE = 0.01
# the darker quarter of the ink inside the patch is at least this many grey levels lighter
# than on the plain paper (mottled paper's white blotches hold ink as dark as elsewhere)
WASH = 40
# ... and the patch is one: its largest connected part holds at least this share of it
# (a mottled or cloudy paper saturates in a dozen blotches)
ONE_PATCH = 0.8
# a line of the second reading meets one of the first where their rectangles share this
# much of the smaller; it holds one where this much of the first line's lies inside it
MEET, HELD = 0.25, 0.7
# CLAHE of the second reading: the clip limit and the tile grid (h1's measured setting)
CLIP, TILES = 3.0, 4


def paper_of(bgr: np.ndarray, quick: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The grey copy (at most ``SIDE`` px; every few pixels are taken, then averaged down)
    of ``bgr`` and the paper level under it: ink taken off by a grey dilation over a 24th
    of the side, then smoothed over as much. ``quick``: None for the paper where the
    copy's own white pixels (``WHITE``) are outside ``WHITE_SHARE`` of it, which no glare
    patch gives (the paper under the ink is at least as white as the pixels)."""
    import cv2

    step = max(1, max(bgr.shape[:2]) // SIDE)  # every step-th pixel first: cheap
    g = grey_of(np.ascontiguousarray(bgr[::step, ::step]))
    h, w = g.shape
    s = min(1.0, SIDE / max(h, w))
    if s < 1:
        g = cv2.resize(g, (max(1, round(w * s)), max(1, round(h * s))),
                       interpolation=cv2.INTER_AREA)
    if quick and not WHITE_SHARE[0] <= np.count_nonzero(g >= WHITE) / g.size <= WHITE_SHARE[1]:
        return g, None  # hardly a white pixel (most photos), or white nearly all over
    k = max(3, (max(g.shape) // 24) | 1)
    bg = cv2.dilate(g, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    return g, cv2.blur(bg, (k, k))


def has_glare(bgr: np.ndarray) -> bool:
    """Whether a photo has a glare patch over its print: its paper saturates to white
    (``WHITE``) over ``PATCH`` of it, falls off smoothly (``RAMP`` of it in between) to
    plain paper (``PAPER``, at least ``PLAIN`` of it), and ink lies both inside the patch
    and on the plain paper (``INK_SHARE`` of each), the ink under the patch washed out
    (``WASH``), the patch in one piece (``ONE_PATCH``). A page white all over, a dark photo, a
    text-free picture or a grey-on-grey screen does not pass; about 1 ms an image."""
    if bgr is None or min(bgr.shape[:2]) < 16:
        return False
    # a glance first (every step-th pixel, ~64 px across): most images stop here
    step = max(1, max(bgr.shape[:2]) // 64)
    glance = grey_of(bgr[::step, ::step])
    if not GLANCE[0] <= np.count_nonzero(glance >= WHITE) / glance.size <= GLANCE[1]:
        return False
    g, bg = paper_of(bgr, quick=True)
    if bg is None:
        return False
    n = bg.size
    sat = bg >= WHITE
    if not PATCH[0] <= sat.sum() / n <= PATCH[1]:
        return False
    plain = (bg >= PAPER[0]) & (bg < PAPER[1])
    if plain.sum() < PLAIN * n or ((bg >= PAPER[1]) & ~sat).sum() < RAMP * n:
        return False
    ink = (bg.astype(np.int16) - g) > INK_STEP
    inked, plain_ink = ink & sat, ink & plain
    if inked.sum() < INK_SHARE * sat.sum() or plain_ink.sum() < INK_SHARE * plain.sum():
        return False
    # the print under the patch is washed out: its darker quarter lighter by WASH levels
    if np.percentile(g[inked], 25) - np.percentile(g[plain_ink], 25) < WASH:
        return False
    import cv2

    _, lab = cv2.connectedComponents(sat.astype(np.uint8))
    return bool(np.bincount(lab[sat]).max() >= ONE_PATCH * sat.sum())


def boosted(bgr: np.ndarray) -> np.ndarray:
    """``bgr`` with CLAHE (clip ``CLIP``, ``TILES`` x ``TILES`` tiles) on its L channel."""
    import cv2

    if bgr.ndim == 2:
        bgr = cv2.cvtColor(bgr, cv2.COLOR_GRAY2BGR)
    lab = cv2.cvtColor(np.ascontiguousarray(bgr[..., :3]), cv2.COLOR_BGR2LAB)
    lab[..., 0] = cv2.createCLAHE(clipLimit=CLIP, tileGridSize=(TILES, TILES)).apply(lab[..., 0])
    return cv2.cvtColor(lab, cv2.COLOR_LAB2BGR)


def _rect(box) -> tuple[float, float, float, float]:
    lo, hi = np.asarray(box).min(0), np.asarray(box).max(0)
    return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])


def _area(a) -> float:
    return max(1e-6, (a[2] - a[0]) * (a[3] - a[1]))


def _common(a, b) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, w) * max(0.0, h)


def _inside(a, b) -> float:
    """The share of rectangle ``a``'s area that lies inside ``b``."""
    return _common(a, b) / _area(a)


def _meet(a, b) -> bool:
    """Whether two lines' rectangles share at least ``MEET`` of the smaller one (the line
    above a tilted line's rectangle shares a thin strip of it)."""
    return _common(a, b) >= MEET * min(_area(a), _area(b))


def _chars(text: str) -> int:
    return len("".join(text.split()))


def read_glare(pipe, good: list[Item], crops, owners, texts, flipped):
    """Read the glare photos of ``good`` (:func:`has_glare`) again on boosted pixels and
    merge: a line of the second reading is added where it meets no line of the first
    (:func:`_meet`), or replaces the first lines it meets where it holds each of them
    (``HELD`` inside it) and reads more characters than they do at ``min_score``. Crops
    of the added lines are cut from the boosted pixels. Other images are untouched (one
    :func:`has_glare` each)."""
    if not good or not pipe.use_det:
        return crops, owners, texts, flipped
    lines = lines_by_image(owners)
    twins, whose = [], []
    for pos, it in enumerate(good):
        t0 = time.perf_counter()
        fires = has_glare(it.bgr)
        it.timings["glare_test"] = time.perf_counter() - t0
        if fires:
            twins.append(Item(-1 - len(twins), it.label, boosted(it.bgr)))
            whose.append(pos)
    if not twins:
        return crops, owners, texts, flipped
    t_crops, t_owners, t_texts, t_flipped, t_lines = read_twins(pipe, twins)
    owners, flipped = list(owners), list(flipped)
    for j, pos in enumerate(whose):
        it, twin = good[pos], twins[j]
        charge_time(it, twin)
        mine = [k for k in lines.get(pos, []) if owners[k][0] == pos]
        old = {k: _rect(it.boxes[owners[k][1]][0]) for k in mine}
        added = 0
        for t in t_lines.get(j, []):
            text, score = t_texts[t]
            if not text or score < pipe.min_score:
                continue
            new = _rect(twin.boxes[t_owners[t][1]][0])
            meets = [k for k, r in old.items() if _meet(r, new)]
            if meets:
                held = all(_inside(old[k], new) >= HELD for k in meets)
                got = sum(_chars(texts[k][0]) for k in meets
                          if texts[k][0] and texts[k][1] >= pipe.min_score)
                if not held or _chars(text) <= got:
                    continue
                for k in meets:  # the first lines it holds give way
                    owners[k] = (-1, owners[k][1])
                    del old[k]
            it.boxes = list(it.boxes) + [twin.boxes[t_owners[t][1]]]
            crops.append(t_crops[t])
            owners.append((pos, len(it.boxes) - 1))
            texts.append(t_texts[t])
            flipped.append(t_flipped[t])
            added += 1
        it.timings["glare"] = added
    return crops, owners, texts, flipped
