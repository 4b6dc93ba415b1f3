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

__all__ = ["inline_symbols", "lone_symbol", "symbol_page"]

# a disc of at least SOLID of the glyph's larger side fits in a symbol's ink (0.18 at most
# in a letter); under FILLED (a bullet's, a square's 0.46 or more)
SOLID, FILLED = 0.2, 0.4
# a heart fills its hull (HEART_HULL or more), a star's points leave STAR_HULL of it empty
HEART_HULL, STAR_HULL = (0.9, 1.2), (0.5, 0.8)
# and a heart's cleft dents its hull by HEART_NOTCH of its side or more (a triangle's, a
# diamond's, a disc's outline by none)
HEART_NOTCH = 0.05
SUN_DISC, SUN_RAYS = 0.15, 4
# a plain solid shape: a square fills SQUARE_FILL of its box; a triangle's flat side runs
# along FLAT_SIDE of its box's side or more (a diamond's points touch each side in a pixel)
SQUARE_FILL, FLAT_SIDE = 0.9, 0.7
# inside a line (`inline_symbols`): a word of one glyph as tall as SYMBOL_TALL of the
# line's cap height, words apart by WORD_GAP of it; a component filling CANDIDATE_FILL of
# its box lets a line be looked at, as does a character the recognizer reads for a symbol
SYMBOL_TALL, WORD_GAP, CANDIDATE_FILL = 0.6, 0.4, 0.4
# a heart is its own mirror image (MIRRORED of its ink or more); inside a line its cleft
# dents it by INLINE_NOTCH (a 14-20 px "◆"'s stepped edge by up to 0.1); a star stands on
# the line (its foot within STAR_BASE of the cap height of the glyphs' feet: an asterisk's
# hangs higher)
MIRRORED, INLINE_NOTCH, STAR_BASE = 0.85, 0.14, 0.2
# a heart's lowest fifth is on the mean at most HEART_FOOT of its widest row (a point: 0.14-0.31
# in DejaVu, blurred too; a "☎"'s base 0.45-0.87)
HEART_FOOT = 0.38
_SYMBOLISH = "*\u2022\u2192\u2190\u00b7"  # "*", "•", "→", "←", "·" (not "So" in Unicode)
_MISREAD = {"\u00a9": "\u263a", "*": "\u2600\u2605", "\u25c6": "\u2665",
            "\u0394": "\u26a0", "\u2206": "\u26a0", "\u25b3": "\u26a0", "\u2463": "\u26a0"}
# "©" for "☺", "*" for "☀" or "★", "◆" for "♥", "Δ", "∆", "△" or "④" for "⚠" (DejaVu Sans,
# Noto Sans CJK): a one-character word so read is written over where its ink says so


def _shape(crop: np.ndarray) -> tuple[int, float, float, int, float] | None:
    """``(components, disc, hull fill of the largest, marks inside its ring, notch)`` of
    the crop's ink (components of 2 pixels or more), the disc and the deepest dent of the
    largest's outline into its hull over the ink's larger side."""
    return _shape_of(ink_mask(crop))


def _shape_of(bw: np.ndarray) -> tuple[int, float, float, int, float] | None:
    """:func:`_shape` of a 0/1 ink mask."""
    import cv2

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


def _solid(own: np.ndarray) -> str | None:
    """The plain solid shape a glyph of one component is ("■", "●", "▶", "◀", "▲", "▼",
    "◆"), or None: its inner disc :data:`SOLID` of its side or more (a letter's at most
    0.18), a square filling its box (:data:`SQUARE_FILL`), a disc filling 0.7-0.9 of it
    with an inner disc of :data:`FILLED`, a triangle or a diamond filling half of it, the
    triangle with one side flat against its box (a column or row of ink along it spanning
    :data:`FLAT_SIDE` of the other side), the diamond with none."""
    import cv2

    ys, xs = np.nonzero(own)
    h, w = int(ys.max() - ys.min() + 1), int(xs.max() - xs.min() + 1)
    if not 0.7 <= w / h <= 1.45:
        return None
    box = own[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    disc = float(cv2.distanceTransform(np.pad(box, 1), cv2.DIST_L2, 3).max()) / max(h, w)
    fill = float(box.sum()) / (h * w)
    if disc < SOLID:
        return None
    if fill >= SQUARE_FILL and disc >= FILLED:
        return "\u25a0"
    if 0.7 <= fill < SQUARE_FILL and disc >= FILLED:
        return "\u25cf"
    if not 0.4 <= fill <= 0.62:
        return None
    sides = {"\u25b6": box[:, :2].any(1).mean(), "\u25c0": box[:, -2:].any(1).mean(),
             "\u25bc": box[:2].any(0).mean(), "\u25b2": box[-2:].any(0).mean()}
    flat = [k for k, v in sides.items() if v >= FLAT_SIDE]
    if len(flat) == 1:
        return flat[0]
    if not flat and max(sides.values()) < 0.35:
        return "\u25c6"
    return None


def _mirrored(own: np.ndarray) -> float:
    """How much of a glyph's ink its mirror image (left for right) covers: a heart's 0.9
    or more, a check mark's (a heavy "✔" fills its hull and dents it as a heart) far less."""
    ys, xs = np.nonzero(own)
    box = own[ys.min():ys.max() + 1, xs.min():xs.max() + 1].astype(bool)
    return float((box & box[:, ::-1]).sum()) / max(int(box.sum()), 1)


def _pointed(own: np.ndarray) -> bool:
    """Whether a glyph ends below in a point (a heart's foot: its lowest fifth no wider than
    :data:`HEART_FOOT` of its width at the widest); a telephone "☎" stands on a flat base,
    and blurred its handset's dip reads as a heart's cleft."""
    ys, xs = np.nonzero(own)
    box = own[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    widths = box.sum(1)
    foot = widths[-max(1, len(widths) // 5):]
    return float(foot.mean()) <= HEART_FOOT * float(widths.max())


# a warning sign "⚠" (round 41): a triangle's outline, its top WARN_APEX of its width at
# most in its highest fifth, its base WARN_BASE of it or more in its lowest, filling at most
# WARN_FILL of its box, with an exclamation mark inside: between 0.4 and 0.9 of its height
# its middle band (WARN_BAND of the width either side of the centre) holds the bar and its
# dot, inked on WARN_MARK of the height or more, a row of the dot inked over WARN_DOT of
# the width at most (an "A"'s crossbar runs from side to side, a "Δ", a "△" leave the band
# empty; a circled "④" has no apex)
WARN_APEX, WARN_BASE, WARN_FILL, WARN_BAND, WARN_MARK = 0.45, 0.8, 0.5, 0.08, 0.2
WARN_DOT = 0.3


def _warning(own: np.ndarray) -> bool:
    """Whether one glyph's ink (a 0/1 mask) is a warning sign "⚠" (see ``WARN_APEX``)."""
    import cv2

    n, lab, st, _ = cv2.connectedComponentsWithStats(own.astype(np.uint8), connectivity=8)
    if n < 2:
        return False
    big = 1 + int(np.argmax(st[1:, 2] * st[1:, 3]))
    x0, y0, w, h = (int(v) for v in st[big, :4])
    if h < 10 or not 0.8 <= w / h <= 1.5 or st[big, 4] > WARN_FILL * w * h:
        return False
    tri = lab[y0:y0 + h, x0:x0 + w] == big
    cols = np.arange(w)

    def span(rows: np.ndarray) -> int:
        on = rows.any(0)
        return int(cols[on].max() - cols[on].min() + 1) if on.any() else 0

    fifth = max(1, h // 5)
    if span(tri[:fifth]) > WARN_APEX * w or span(tri[-fifth:]) < WARN_BASE * w:
        return False
    ink = own[y0:y0 + h, x0:x0 + w] > 0
    c, b = (w - 1) / 2.0, max(1.0, WARN_BAND * w)
    x0b, x1b = int(np.ceil(c - b)), int(np.floor(c + b)) + 1
    # below 0.4 of the height the sides stand outside the band; above 0.9 lies the base
    r0, r1 = int(0.4 * h), int(0.9 * h)
    rows = ink[r0:r1, x0b:x1b].any(1)
    on = np.r_[False, rows, False]
    runs = np.flatnonzero(on[1:] != on[:-1]).reshape(-1, 2)
    # the bar runs down from above the window, a blank row, the dot: a mark of its own,
    # apart from the outline (an "A"'s crossbar is one run, and the outline's; a "Δ", "△"
    # leave the band empty)
    if len(runs) != 2 or runs[0, 0] != 0 or rows.sum() < WARN_MARK * h:
        return False

    def centred(row: np.ndarray) -> bool:
        """Whether the row's ink in the band is a mark of its own: a run of inked columns
        at most WARN_DOT of the width wide, its middle in the band (an "A"'s leg, a
        crossbar: no)."""
        xs = np.flatnonzero(row[x0b:x1b]) + x0b
        if not len(xs):
            return False
        left, right = xs[0], xs[-1]
        while left > 0 and row[left - 1]:
            left -= 1
        while right < w - 1 and row[right + 1]:
            right += 1
        return right - left + 1 <= WARN_DOT * w and abs((left + right) / 2 - c) <= b + 0.5

    bar = ink[r0 + runs[0, 0]:r0 + runs[0, 1]]
    dot = ink[r0 + runs[1, 0]:r0 + runs[1, 1]]
    # the bar's rows near the apex may join the blurred sides: half of them
    return 2 * sum(centred(r) for r in bar) >= len(bar) and any(centred(r) for r in dot)


def _glyph_symbol(own: np.ndarray) -> str | None:
    """The symbol one glyph's ink is (``own``: its 0/1 mask, cut to its box with a margin),
    as :func:`lone_symbol` and :func:`_solid` say, or a warning sign (:func:`_warning`), or
    None."""
    if _warning(own):
        return "\u26a0"
    found = _shape_of(own)
    if found is None:
        return None
    named = _named(found, lambda: _mirrored(own) >= MIRRORED and _pointed(own))
    if named is not None:
        return named
    return _solid(own) if found[0] == 1 else None


def _named(found, heart_too=lambda: True) -> str | None:
    """The symbol a glyph's shape measures name (``_shape``'s parts, disc, hull fill, holes
    and notch): a heart (where ``heart_too()`` agrees), a star, a sun, a smiling face; or
    None."""
    parts, disc, fill, inside, notch = found
    if parts == 1 and SOLID <= disc < FILLED:
        if HEART_HULL[0] <= fill <= HEART_HULL[1] and notch >= HEART_NOTCH and heart_too():
            return "\u2665"
        if STAR_HULL[0] <= fill <= STAR_HULL[1]:
            return "\u2605"
    if parts >= SUN_RAYS and SUN_DISC <= disc < FILLED and inside == 0:
        return "\u2600"
    if disc < SUN_DISC and inside >= 2:
        return "\u263a"
    return None


def symbol_page(texts) -> bool:
    """Whether a page's readings hold a symbol ("★", "✓", "•", "→", "©", "◆", "*": a
    character of Unicode's "other symbol" or "math symbol" class outside ASCII, or "*"):
    the gate of :func:`inline_symbols` (a review card's stars and ticks, a slide's bullets;
    symbols come in company), so that a page of plain print pays nothing for it."""
    import unicodedata

    texts = list(texts)  # a generator, read twice
    return any(c in _SYMBOLISH or ord(c) > 127 and unicodedata.category(c) == "So"
               for t in texts for c in t) or \
        any(w in _MISREAD for t in texts for w in t.split())  # a lone "Δ", "④" (round 41)


def _notch(own: np.ndarray) -> float:
    """The deepest dent of a glyph's outline into its hull over its larger side."""
    found = _shape_of(own)
    return 0.0 if found is None else found[4]


def inline_symbols(text: str, crop: np.ndarray) -> str:
    """``text`` with a symbol inside its line that the recognizer dropped or misread
    written as its ink says ("☎ Support" aside: "♥ 4 of 5" read "4 of 5", "Rating ☺" read
    "Rating ©", a DejaVu Serif "♥" read "◆"). The crop's components are joined into glyphs
    where their columns overlap and the glyphs into words where the blank between them is
    under :data:`WORD_GAP` of the line's cap height (the median height of its glyphs of
    half the tallest's or more); a word of one glyph at least :data:`SYMBOL_TALL` of that
    height whose ink is a symbol (:func:`_glyph_symbol`) is put where the reading left it
    out (the ink holds one word more than the reading: inserted after as many words as
    stand left of it) or written over a one-character word read for it (as many words;
    not over a bullet or a check box the reading holds). Cheap where no glyph can be a
    symbol: only a component as wide as half its height, at least :data:`SYMBOL_TALL` of
    the tallest and filling :data:`CANDIDATE_FILL` of its box with an inner disc of
    :data:`SOLID` of its side (a solid shape, a heart, a star, a sun's disc: no letter) or
    a line read with a "©", "*" or "◆" is looked at; and the pipeline asks only on a page
    whose readings hold a symbol (:func:`symbol_page`)."""
    import cv2

    if len(text.strip()) < 2 or crop.ndim < 2 or min(crop.shape[:2]) < 10:
        return text
    bw = ink_mask(crop)
    n, lab, st, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    ok = (st[1:, 4] >= 2) & (st[1:, 2] < 0.9 * bw.shape[1])
    if ok.sum() < 2:
        return text
    w, h, area = st[1:, 2], st[1:, 3], st[1:, 4]
    solid = ok & (h >= SYMBOL_TALL * h[ok].max()) & (w >= 0.5 * h) & \
        (area >= CANDIDATE_FILL * w * h)
    tall = float(h[ok].max())
    r = int(SOLID * SYMBOL_TALL * tall / np.sqrt(2))  # a square inside the least such disc
    if r >= 1:  # what survives its erosion: a symbol's solid middle, a bold stroke at most
        inner = np.unique(lab[cv2.erode(bw, np.ones((2 * r + 1, 2 * r + 1), np.uint8)) > 0])
        solid &= np.isin(np.arange(1, n), inner)
    solid = [int(k) + 1 for k in np.flatnonzero(solid)]
    solid = [k for k in solid if cv2.distanceTransform(cv2.copyMakeBorder(
        (lab[st[k, 1]:st[k, 1] + st[k, 3], st[k, 0]:st[k, 0] + st[k, 2]] == k).view(np.uint8),
        1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0), cv2.DIST_L2, 3).max()
        >= SOLID * max(st[k, 2], st[k, 3])]  # no letter's stroke is so thick
    if not solid and not any(c in text for c in _MISREAD):
        return text
    keep = [int(k) + 1 for k in np.flatnonzero(ok)]
    glyphs = column_glyphs(st, keep)  # components whose columns overlap, left to right
    heights, bottoms = [], []
    for *_, ks in glyphs:
        bottoms.append(max(st[k, 1] + st[k, 3] for k in ks))
        heights.append(bottoms[-1] - min(st[k, 1] for k in ks))
    cap = float(np.median([h for h in heights if h >= 0.5 * max(heights)]))
    words: list[list[int]] = []
    for g in range(len(glyphs)):
        if words and glyphs[g][0] - glyphs[words[-1][-1]][1] < WORD_GAP * cap:
            words[-1].append(g)
        else:
            words.append([g])
    read = text.split()
    out = list(read)
    found = []
    for w, gs in enumerate(words):
        if len(gs) != 1 or heights[gs[0]] < SYMBOL_TALL * cap:
            continue
        x0, x1, ks = glyphs[gs[0]]
        own = np.isin(lab, ks).astype(np.uint8)
        ys = np.flatnonzero(own.any(1))
        pad = 3
        y0, y1 = max(0, ys[0] - pad), ys[-1] + 1 + pad
        cut = np.pad(own[y0:y1, max(0, x0 - pad):x1 + pad], pad)
        sym = _glyph_symbol(np.ascontiguousarray(cut))
        tall = [b for b, h in zip(bottoms, heights, strict=True) if h >= 0.5 * max(heights)]
        if sym == "\u2605" and bottoms[gs[0]] < np.median(tall) - STAR_BASE * cap:
            continue  # a raised asterisk, not a star on the line
        if sym == "\u2665" and _notch(cut) < INLINE_NOTCH:
            continue  # a small diamond's stepped edge, not a heart's cleft
        if sym == "\u25cf":
            continue  # a disc: the recognizer reads "●" itself, and a drawn bullet is "•"
            # (`marks.bullet_mark`, later)
        if sym is not None:
            found.append((w, sym))
    if len(found) != 1:
        return text
    w, sym = found[0]
    if len(words) == len(read) + 1 and heights[words[w][0]] >= SYMBOL_TALL * max(heights):
        out.insert(w, sym)
    elif len(words) == len(read) and sym in _MISREAD.get(read[w], ()):
        out[w] = sym
    else:
        return text
    return " ".join(out)


def lone_symbol(text: str, crop: np.ndarray) -> str:
    """``text`` where it is one character alone in its box ("米", "A", "￥" ...), written as
    the symbol its ink's shape says (see the module): "♥" for one solid component whose
    inner disc is :data:`SOLID` to :data:`FILLED` of its side and that fills its hull
    (:data:`HEART_HULL`) but for a cleft (:data:`HEART_NOTCH`), its own mirror image and
    pointed below (:func:`_heart_like`), "★" for such a component
    with :data:`STAR_HULL` of its hull, "☀" for a disc of :data:`SUN_DISC` among
    :data:`SUN_RAYS` components or more, "☺" for a ring (a thin largest component)
    holding two marks or more (eyes and mouth; a small face's mouth can touch its ring).
    Else as read."""
    t = text.strip()
    if len(t) != 1 or crop.ndim < 2 or min(crop.shape[:2]) < 10:
        return text
    bw = ink_mask(crop)
    found = _shape_of(bw)
    if found is None:
        return text
    return _named(found, lambda: _heart_like(bw)) or text


def _heart_like(bw: np.ndarray) -> bool:
    """Whether a crop's largest component is its own mirror image and ends below in a point,
    as a heart does (round 47, h7: a phone photo's lone "B", "5", "6", "8", "S" in a
    spreadsheet's cells at 13-18 px blur into one solid blob dented at a side, and were read
    "♥"; `lone.py`: 40 of 480 such crops in Liberation Sans, Bold, Serif and DejaVu Sans,
    none with the guard; DejaVu Sans, Bold and Serif "♥" at 20-40 px, sharp and blurred, 48 of
    48 either way)."""
    import cv2

    n, lab, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    if n < 2:
        return False
    own = (lab == 1 + int(np.argmax(stats[1:, 4]))).astype(np.uint8)
    return _mirrored(own) >= MIRRORED and _pointed(own)


def column_glyphs(st, keep) -> list[list]:
    """``[x0, x1, labels]`` left to right: the components ``keep`` (labels of
    ``cv2.connectedComponentsWithStats``'s ``st``) whose columns overlap, one glyph each."""
    glyphs: list[list] = []
    for k in sorted(keep, key=lambda k: st[k, 0]):
        x0, x1 = st[k, 0], st[k, 0] + st[k, 2]
        if glyphs and x0 < glyphs[-1][1]:
            glyphs[-1][1] = max(glyphs[-1][1], x1)
            glyphs[-1][2].append(k)
        else:
            glyphs.append([x0, x1, [k]])
    return glyphs
