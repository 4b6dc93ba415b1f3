"""A telephone "☎", an envelope "✉" or a heavy check "✔" the recognizer dropped from its
line, put back where the line's ink holds it.

The default recognizer's alphabet holds the three, but it gives them 0.000 in every column
of "☎ 010-6234 5678", "✉ info@example.com", "Tests passed ✔" (round 42, DejaVu Sans, Sans
Bold, Sans Mono and Noto Sans CJK at 22-30 px): nothing for a beam or a reread to find,
and no symbol read for :func:`.symbols.symbol_page` to open its gate on. Their ink is
measured against the symbols rendered in the installed fonts that hold them (DejaVu Sans,
Sans Bold, Sans Mono, Sans Condensed, Noto Sans CJK; a face's ".notdef" box never): the
glyph's box and the template's, each scaled to ``SIDE`` x ``SIDE``, correlated (centred,
unit length). Round 43 (`tmpl.py`: the three at 16, 22 and 30 px, sharp and blurred 0.8
px, against the letters, digits, box and check marks, stars, hearts and CJK characters of
eight faces): a telephone correlates 0.57-1.0 with its templates, anything else 0.45 at
most ("n" in Liberation Serif Bold); a heavy check 0.75-1.0, anything else 0.53 ("Z"); a
light "✓" 0.5-0.76 against a heavy one, so a dropped check is written as the weight its
ink shows (:func:`check_weight`, round 43 h12: the heavy templates' correlation must
exceed the light ones' by a margin; a phone photo's "✓ Renew passport" read "Renew
passport" was given "✔" before the light one was matched too), and a "✓" read first or
last in a line whose ink is a heavy check is written "✔" (:func:`heavy_ticks`, called
by :func:`.marks.tick_marks`). An
envelope's thin frame correlates less (0.42 blurred at 16 px) and a "☒" as much, so it
is known by its shape: a frame inked along all four sides of a box wider than tall
(``ENVELOPE_WIDE``; a check box is square) with ink inside.

Only a line's one-glyph words are looked at (components joined into glyphs where their
columns overlap, glyphs into words where the blank between them is under ``WORD_GAP`` of
the line's cap height), inside the line only where its ink holds one word more than its
reading: a page of plain print pays a labelling of each line's crop. Without Pillow's FreeType
nothing changes."""

from __future__ import annotations

import functools
import os
import re

import numpy as np

from .spacing import ink_mask
from .symbols import column_glyphs

__all__ = ["check_weight", "dropped_symbols", "heavy_ticks", "shape_symbol", "small_envelope",
           "SYMBOLS"]

SYMBOLS = "\u260e\u2709\u2714"  # "☎", "✉", "✔"
LIGHT = "\u2713"  # "✓": matched too, so that a light check put back is written light
CHECKS = ("\u2714", LIGHT)
# a check is heavy where its heavy templates correlate this much more than its light ones
# (check_weight); for a glyph under SMALL_CHECK px tall, HEAVY_MARGIN_SMALL
HEAVY_MARGIN, HEAVY_MARGIN_SMALL, SMALL_CHECK = 0.07, 0.15, 10
SIDE = 24  # both boxes scaled to SIDE x SIDE before they are correlated
# the least correlation with a template: a telephone's, a heavy check's
MATCH = {"\u260e": 0.55, "\u2714": 0.65, "\u2713": 0.65}
ASPECT = 1.25  # a glyph's box within this factor of the template's (width over height)
# an envelope: a box ENVELOPE_WIDE times as wide as tall or more (a check box's is square),
# its four sides inked along FRAME of their length, ink inside, correlating ENVELOPE_MATCH
ENVELOPE_WIDE, FRAME, ENVELOPE_MATCH = 1.15, 0.85, 0.35
# an envelope 14-18 px (its glyph under SMALL_ENVELOPE px tall), whose blurred inside fills or
# whose frame binarises away: its grey ink correlated with "✉" drawn at its own height (within
# one px) in the faces holding it, sharp and blurred, ENVELOPE_GREY or more, its box
# ENVELOPE_WIDE times as wide as tall; a reading's edge word of one of ENVELOPE_READS (what
# the recognizer made of such an envelope) is written over (round 47, h7)
SMALL_ENVELOPE, ENVELOPE_GREY, ENVELOPE_READS = 12, 0.85, "\u2612\u00d7\u22a0\u2297\u03b5\u56f3"
WORD_GAP, SYMBOL_TALL = 0.4, 0.4  # as in :mod:`.symbols`; a symbol's height over the cap (an
# envelope in DejaVu Sans Mono: 0.48)
_FONTS = "/usr/share/fonts/"
FACES = (_FONTS + "truetype/dejavu/DejaVuSans.ttf", _FONTS + "truetype/dejavu/DejaVuSans-Bold.ttf",
         _FONTS + "truetype/dejavu/DejaVuSansMono.ttf",
         _FONTS + "truetype/dejavu/DejaVuSansCondensed.ttf",
         _FONTS + "opentype/noto/NotoSansCJK-Regular.ttc")


def _vector(mask: np.ndarray) -> np.ndarray:
    """A 0/1 mask cut to its box, scaled to SIDE x SIDE, centred and of unit length."""
    import cv2

    v = cv2.resize(mask.astype(np.float32), (SIDE, SIDE), interpolation=cv2.INTER_AREA)
    v -= v.mean()
    return v / (float(np.linalg.norm(v)) + 1e-9)


def _cut(mask: np.ndarray) -> np.ndarray | None:
    ys, xs = np.nonzero(mask)
    if not len(ys):
        return None
    return mask[ys.min():ys.max() + 1, xs.min():xs.max() + 1]


@functools.lru_cache(maxsize=1)
def _templates() -> dict[str, list[tuple[np.ndarray, float]]]:
    """{symbol: [(vector, width over height)]} of each installed face holding it, drawn at
    64 px; empty without Pillow's FreeType. A face lacks a symbol whose drawing is its
    ".notdef" glyph's, which U+FFFF (a noncharacter, in no face's cmap) draws: reading
    the faces' cmaps with fontTools (the CJK face's 65,000 entries) took 0.18 CPU s of each
    process that reached a symbol, this 0.01 s, the same templates (round 44, h2)."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        return {}
    out: dict[str, list[tuple[np.ndarray, float]]] = {}
    for path in FACES:
        if not os.path.exists(path):
            continue
        try:
            face = ImageFont.truetype(path, 64)
        except (OSError, ValueError):
            continue

        def draw(ch, face=face):
            im = Image.new("L", (192, 192), 255)
            ImageDraw.Draw(im).text((64, 32), ch, font=face, fill=0)
            return np.asarray(im)

        notdef = draw("\uffff")
        for sym in SYMBOLS + LIGHT:
            drawn = draw(sym)
            if np.array_equal(drawn, notdef):
                continue  # its ".notdef" box
            glyph = _cut(drawn < 128)
            if glyph is not None:
                out.setdefault(sym, []).append((_vector(glyph), glyph.shape[1] / glyph.shape[0]))
    return out


def _framed(box: np.ndarray) -> bool:
    """Whether a glyph's box (0/1, cut to its ink) is a frame inked along its four sides
    (``FRAME`` of their length) with ink inside."""
    h, w = box.shape
    if h < 6 or w < 6:
        return False
    t = max(1, round(0.15 * h)), max(1, round(0.15 * w))
    sides = (box[:t[0]].any(0).mean(), box[-t[0]:].any(0).mean(),
             box[:, :t[1]].any(1).mean(), box[:, -t[1]:].any(1).mean())
    return min(sides) >= FRAME and bool(box[t[0]:-t[0], t[1]:-t[1]].any())


def shape_symbol(glyph: np.ndarray) -> str | None:
    """The symbol of :data:`SYMBOLS` a glyph's ink is (a 0/1 mask), or None."""
    box = _cut(np.asarray(glyph) > 0)
    if box is None or min(box.shape) < 6:
        return None
    vec, aspect = _vector(box), box.shape[1] / box.shape[0]
    best, score = None, -1.0
    for sym, shapes in _templates().items():
        for tvec, taspect in shapes:
            if not 1 / ASPECT <= aspect / taspect <= ASPECT:
                continue
            c = float((vec * tvec).sum())
            if c > score:
                best, score = sym, c
    if best in MATCH and score >= MATCH[best]:
        return check_weight(box) if best in CHECKS else best
    if aspect >= ENVELOPE_WIDE and _framed(box) and any(
            float((vec * t).sum()) >= ENVELOPE_MATCH for t, _ in _templates().get("\u2709", [])):
        return "\u2709"
    return None


@functools.lru_cache(maxsize=1)
def _small_envelopes() -> list[tuple[tuple[int, int], np.ndarray]]:
    """[((height, width), vector)] of "✉" drawn at 10-23 px in each face of ``FACES``
    holding it, sharp and blurred (0.6, 1.0 px), at two half-pixel offsets: the grey ink
    (darkness) cut to its box (darkness over 0.25), scaled to 12 x 12, centred, unit
    length. Empty without Pillow's FreeType."""
    try:
        from PIL import Image, ImageDraw, ImageFilter, ImageFont
    except ImportError:
        return []
    out = []
    for path in FACES:
        if not os.path.exists(path):
            continue
        for px in range(10, 24):
            try:
                face = ImageFont.truetype(path, px)
            except (OSError, ValueError):
                break
            for dx in (0.0, 0.5):
                im = Image.new("L", (3 * px, 3 * px), 255)
                ImageDraw.Draw(im).text((px + dx, px + dx), "\u2709", font=face, fill=0)
                if px == 10 and dx == 0.0:
                    blank = Image.new("L", im.size, 255)
                    ImageDraw.Draw(blank).text((px, px), "\uffff", font=face, fill=0)
                    if np.array_equal(np.asarray(im), np.asarray(blank)):
                        break  # its ".notdef" box
                for blur in (0.0, 0.6, 1.0):
                    g = im.filter(ImageFilter.GaussianBlur(blur)) if blur else im
                    ink = 1 - np.asarray(g, np.float32) / 255
                    ys, xs = np.nonzero(ink > 0.25)
                    if len(ys):
                        box = ink[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
                        out.append((box.shape, _grey_vector(box)))
            else:
                continue
            break
    return out


def _grey_vector(ink: np.ndarray) -> np.ndarray:
    import cv2

    v = cv2.resize(ink.astype(np.float32), (12, 12), interpolation=cv2.INTER_AREA)
    v -= v.mean()
    return v / (float(np.linalg.norm(v)) + 1e-9)


def small_envelope(ink: np.ndarray) -> bool:
    """Whether a glyph's grey ink (darkness, cut to the glyph's box) is a small "✉": under
    ``SMALL_ENVELOPE`` px tall, 7 or more, ``ENVELOPE_WIDE`` times as wide as tall or more,
    correlating ``ENVELOPE_GREY`` or more with a template of its height and width (within one
    px). Round 47 (h7, `env.py`: "✉ info@example.com", "Mail us ✉" in DejaVu Sans, Bold,
    Mono, Condensed and their bolds at 14-18 px, sharp and blurred 0.8): envelopes 0.78-1.0
    (109 of 120 that wide: Condensed's at 1.1-1.13 are not); "☒", "⊠", "⌧", "■", "□",
    "回", "田", "図", "m", "w", "M", "W", "@" ... in DejaVu, Liberation and Noto Sans CJK
    that wide: 0.70 at most ("⌧"); a "☒", square, up to 0.89."""
    h, w = ink.shape
    if not 7 <= h < SMALL_ENVELOPE or w < ENVELOPE_WIDE * h:
        return False
    v = _grey_vector(ink)
    return any(abs(th - h) <= 1 and abs(tw - w) <= 1 and float((v * t).sum()) >= ENVELOPE_GREY
               for (th, tw), t in _small_envelopes())


def _glyph_ink(crop: np.ndarray, bw: np.ndarray, y0, y1, x0, x1) -> np.ndarray:
    """The crop's grey ink (darkness, or lightness where the ink is light) in a box."""
    grey = crop.astype(np.float32).mean(2) if crop.ndim == 3 else crop.astype(np.float32)
    ink_dark = grey[bw > 0].mean() < grey[bw == 0].mean() if bw.any() and (bw == 0).any() \
        else True
    g = grey[y0:y1, x0:x1] / 255
    return 1 - g if ink_dark else g


def check_weight(glyph: np.ndarray) -> str | None:
    """"✔" or "✓" for a check mark's ink (a 0/1 mask), None where it correlates with
    neither as ``MATCH`` asks. The recognizer reads most heavy checks "✓" and drops some
    light ones; both templates correlate 0.6-0.95 with either, so the weight is their
    difference: heavy where the heavy templates' best correlation exceeds the light ones'
    by ``HEAVY_MARGIN`` (``HEAVY_MARGIN_SMALL`` for a glyph under ``SMALL_CHECK`` px tall,
    whose strokes a blur evens). Round 43 (h12, `tick.py`: "✓"/"✔ Book the venue" in
    DejaVu Sans, Bold and Mono at 16, 22 and 30 px, sharp and as phone photos): glyphs 10
    px tall or more, light -0.33 to +0.05, heavy +0.09 to +0.26; under 10 px, light up to
    +0.13 (a phone photo's DejaVu Sans Mono at 16 px), heavy +0.13 to +0.24."""
    box = _cut(np.asarray(glyph) > 0)
    if box is None or min(box.shape) < 6:
        return None
    vec, aspect = _vector(box), box.shape[1] / box.shape[0]
    best = {}
    for sym in CHECKS:
        for tvec, taspect in _templates().get(sym, ()):
            if 1 / ASPECT <= aspect / taspect <= ASPECT:
                best[sym] = max(best.get(sym, -1.0), float((vec * tvec).sum()))
    heavy, light = best.get("\u2714", -1.0), best.get(LIGHT, -1.0)
    if max(heavy, light) < MATCH[LIGHT]:
        return None
    margin = HEAVY_MARGIN if box.shape[0] >= SMALL_CHECK else HEAVY_MARGIN_SMALL
    return "\u2714" if heavy - light >= margin else LIGHT


_TICK = re.compile(r"(?<!\S)\u2713(?!\S)")


def heavy_ticks(text: str, crop: np.ndarray) -> str:
    """``text`` with a "✓" standing first or last in the line written "✔" where its ink is
    a heavy check (:func:`check_weight`): the ink's first or last word is one glyph."""
    ticks = [m.start() for m in _TICK.finditer(text)]
    if not ticks or crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    read = text.split()
    ends = {k for k, t in ((0, read[0]), (len(read) - 1, read[-1])) if t == LIGHT}
    if not ends:
        return text
    lab, st, glyphs, words, heights, cap = _words(ink_mask(crop))
    if not words:
        return text
    for k in sorted(ends):
        gs = words[0] if k == 0 else words[-1]
        if len(gs) != 1:
            continue
        x0, x1, ks = glyphs[gs[0]]
        y0 = min(st[j, 1] for j in ks)
        y1 = max(st[j, 1] + st[j, 3] for j in ks)
        if check_weight(np.isin(lab[y0:y1, x0:x1], ks)) == "\u2714":
            read[k] = "\u2714"
    return " ".join(read) if read != text.split() else text


def _words(bw: np.ndarray):
    """(labels, stats, glyphs, words, heights, cap) of a line's 0/1 ink: glyphs are lists
    of component labels whose columns overlap, words lists of glyph indices."""
    import cv2

    n, lab, st, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    keep = [k for k in range(1, n) if st[k, 4] >= 2 and st[k, 2] < 0.9 * bw.shape[1]]
    glyphs = column_glyphs(st, keep)  # [x0, x1, labels]
    if not glyphs:
        return lab, st, glyphs, [], [], 0.0
    heights = [max(st[k, 1] + st[k, 3] for k in ks) - min(st[k, 1] for k in ks)
               for *_, ks in glyphs]
    # the tallest glyphs' height (a lowercase line's x-height would part "i" from "nfo")
    cap = float(np.median([h for h in heights if h >= 0.8 * max(heights)]))
    words: list[list[int]] = []
    for g in range(len(glyphs)):
        if words and glyphs[g][0] - glyphs[words[-1][-1]][1] < WORD_GAP * cap:
            words[-1].append(g)
        else:
            words.append([g])
    return lab, st, glyphs, words, heights, cap


def dropped_symbols(text: str, crop: np.ndarray) -> str:
    """``text`` with a "☎", "✉" or "✔" its line's ink holds and the reading left out put
    back ("010-6234 5678" of a crop "☎ 010-6234 5678" -> "☎ 010-6234 5678"): exactly one
    of the ink's one-glyph words, ``SYMBOL_TALL`` of the cap height or more, is such a
    symbol (:func:`shape_symbol`); first or last in the line it is put first or last
    (unless the reading's first or last word is one character that is no letter or digit:
    the symbol read as something else), inside it only where the ink holds one word more
    than ``text``, after as many words as stand left of it. Else ``text``."""
    read = text.split()
    if not read or crop.ndim < 2 or min(crop.shape[:2]) < 8 or \
            any(s in text for s in SYMBOLS + LIGHT):
        return text
    bw = ink_mask(crop)
    lab, st, glyphs, words, heights, cap = _words(bw)
    if len(words) < 2:
        return text
    found = []
    for w, gs in enumerate(words):
        if len(gs) != 1 or heights[gs[0]] < SYMBOL_TALL * cap:
            continue
        if 0 < w < len(words) - 1 and len(words) != len(read) + 1:
            continue
        x0, x1, ks = glyphs[gs[0]]
        y0 = min(st[k, 1] for k in ks)
        y1 = max(st[k, 1] + st[k, 3] for k in ks)
        own = np.isin(lab[y0:y1, x0:x1], ks)
        sym = shape_symbol(own)
        if sym is None and small_envelope(_glyph_ink(crop, bw, y0, y1, x0, x1)):
            sym = "\u2709"
        if sym is not None:
            found.append((w, sym))
    if len(found) != 1:
        return text
    w, sym = found[0]
    if w == 0 or w == len(words) - 1:
        edge = read[0] if w == 0 else read[-1]
        if sym == "\u2709" and edge in ENVELOPE_READS and len(words) == len(read):
            # the envelope read as something else ("☒", "×", "ε"...): written over
            return " ".join([sym] + read[1:] if w == 0 else read[:-1] + [sym])
        if len(edge) == 1 and not edge.isalnum():
            return text
        return " ".join([sym] + read if w == 0 else read + [sym])
    return " ".join(read[:w] + [sym] + read[w:])
