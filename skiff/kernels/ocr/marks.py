"""A line's first or last mark read as a point where its ink is a dash.

At 10 px a page number's dashes ("- 1 -" on a page shown at 0.44) are a pixel high and
three wide, and the recognizer reads them as points ("-1.", ".1."); RapidOCR's larger
input reads "-1-". A point sits on the baseline and a dash halfway up the digits, which
the crop's ink tells apart."""

from __future__ import annotations

import re

import numpy as np

from .spacing import _cjk_char, glyph_runs, ink_mask
from .symbol_shapes import _words, heavy_ticks

__all__ = ["edge_dashes", "en_dashes", "lone_dashes", "full_width_colons", "footnote_marks",
           "micro_signs",
           "page_number_spaces", "empty_brackets",
           "tick_marks", "cross_marks", "degree_signs", "fraction_echoes", "box_marks",
           "could_be_box", "bullet_mark",
           "is_round_dot", "BULLET"]

# a mark whose ink's middle lies between these fractions of the digits' ink, from the top,
# stands halfway up (a dash); a point's lies at 0.85 or below
MID = (0.3, 0.7)


def edge_dashes(text: str, crop: np.ndarray) -> str:
    """``text`` with a point that is its first or last character, beside a digit, read as
    "-" where the crop's first or last glyph (:func:`.spacing.glyph_runs`) is no higher
    than wide and stands halfway up the other glyphs' ink. Only for a short reading of
    digits between such marks ("-1.", ".12-", ".3."), as a page number is printed."""
    t = text.strip()
    if not 2 <= len(t.replace(" ", "")) <= 8 or "." not in (t[0], t[-1]) or \
            not all(c.isdigit() or c in ".- " for c in t) or not any(c.isdigit() for c in t):
        return text
    if crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    edges, _ = glyph_runs(crop)
    marks = (t[0] in ".-") + (t[-1] in ".-")
    digits = sum(c.isdigit() for c in t)
    if len(edges) < marks + 1 or len(edges) > marks + digits:
        return text
    bw = ink_mask(crop)
    inner = bw[:, edges[1 if t[0] in ".-" else 0][0]:edges[-2 if t[-1] in ".-" else -1][1]]
    rows = np.flatnonzero(inner.any(1))
    if len(rows) < 5:
        return text
    top, height = rows[0], rows[-1] - rows[0] + 1

    def dash(run) -> bool:
        a, b = run
        ys = np.flatnonzero(bw[:, a:b].any(1))
        if not len(ys) or ys[-1] - ys[0] + 1 > b - a:
            return False
        middle = ((ys[0] + ys[-1]) / 2 - top) / height
        return MID[0] <= middle <= MID[1]

    first = "-" if t[0] == "." and dash(edges[0]) else t[0]
    last = "-" if t[-1] == "." and dash(edges[-1]) else t[-1]
    if len(t) == 1 or (first, last) == (t[0], t[-1]):
        return text
    return first + t[1:-1] + last


# a page number's dash stands a word's gap from its digits ("- 1 -") where the empty columns
# between them are at least PAGE_GAP times the digits' ink height; a hyphen set tight
# ("-1-") stands 0.1-0.15 away. The recognizer gives a single digit's gaps no space at all
# (the space's probability 0.000-0.005 in Liberation Serif at 12-24 px: "-1-")
PAGE_GAP = 0.3
_PAGE_NUMBER = re.compile(r"([-\u2013\u2014])(\d{1,4})([-\u2013\u2014])")


def page_number_spaces(text: str, crop: np.ndarray) -> str:
    """``text`` spaced as a page number's ink stands: a reading of a dash, one to four
    digits and a dash ("-1-", "- 12-") gets a space on each side where the crop's first and
    last glyphs (:func:`.spacing.glyph_runs`), no higher than wide, stand at least
    ``PAGE_GAP`` of the digits' ink height from the digits ("- 1 -"), or the reading has
    one there. A monospaced face sets a tight dash 0.2-0.5 of that height away, so its
    "-12-" may read "- 12 -": a line of only a page number, either way a user finds it."""
    t = text.strip()
    m = _PAGE_NUMBER.fullmatch(t.replace(" ", ""))
    if m is None or crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    edges, _ = glyph_runs(crop)
    if len(edges) < 3 or len(edges) > 2 + len(m.group(2)):
        return text
    bw = ink_mask(crop)
    rows = np.flatnonzero(bw[:, edges[1][0]:edges[-2][1]].any(1))
    if len(rows) < 5:
        return text
    height = rows[-1] - rows[0] + 1

    def flat(run) -> bool:
        ys = np.flatnonzero(bw[:, run[0]:run[1]].any(1))
        return bool(len(ys)) and ys[-1] - ys[0] + 1 <= run[1] - run[0]

    if not (flat(edges[0]) and flat(edges[-1])):
        return text
    left = edges[1][0] - edges[0][1] >= PAGE_GAP * height or t[1] == " "
    right = edges[-1][0] - edges[-2][1] >= PAGE_GAP * height or t[-2] == " "
    return m.group(1) + (" " if left else "") + m.group(2) + (" " if right else "") + m.group(3)


# an empty pair of brackets read with a space between ("f( )") in a monospaced line stands
# tight where its two brackets' centres are one cell apart (within BRACKET_CELL of a cell),
# not two; a line is monospaced where at least MONO_SHARE of the steps between its glyphs'
# centres are whole cells (within MONO_TOL of one), over at least MONO_GLYPHS glyphs
BRACKET_CELL = 0.25
MONO_SHARE = 0.85
MONO_TOL = 0.15
MONO_GLYPHS = 5
_EMPTY_PAIR = re.compile(r"([(\[{]) ([)\]}])")
_TALL = "()[]{}|"


def _cell(centres: np.ndarray) -> float | None:
    """The cell width of a monospaced line from its glyphs' centres, or None where the
    steps between them are not whole cells (a proportional face)."""
    steps = np.diff(np.sort(centres))
    if len(steps) + 1 < MONO_GLYPHS:
        return None
    cell = float(np.percentile(steps, 25))  # most steps are one cell; a word gap two
    if cell < 3:
        return None
    whole = np.abs(steps / cell - np.round(steps / cell))
    return cell if (whole <= MONO_TOL).mean() >= MONO_SHARE else None


def empty_brackets(text: str, crop: np.ndarray) -> str:
    """``text`` with the space dropped from an empty pair of brackets read "( )", "[ ]" or
    "{ }" in a monospaced line where the crop's two brackets stand one cell apart: a
    monospaced face sets "()" a cell apart, and the recognizer reads the blank as a space
    (round 35: "f()" in Liberation Mono and DejaVu Sans Mono read "f( )" at 20-28 px;
    RapidOCR reads "f()"). The brackets are found as the line's tallest narrow glyphs (from
    its ascenders to its descenders) and matched to the reading's brackets and bars in
    order; where their count differs, or the line's glyphs do not stand on a grid of cells
    (:func:`_cell`: a proportional face, whose "( )" the recognizer reads as set), nothing
    changes. "( ) Yes" set with a space in a monospaced face keeps it (two cells)."""
    if _EMPTY_PAIR.search(text) is None or crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    import cv2

    bw = ink_mask(crop)
    rows = np.flatnonzero(bw.any(1))
    if len(rows) < 6:
        return text
    top, bottom = rows[0], rows[-1]
    n, _, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    x, y, w, h = (stats[1:, k] for k in range(4))
    full = bottom - top + 1
    # the tallest narrow glyphs: from near the line's top to near its bottom
    tall = (h >= 0.8 * full) & (w <= 0.5 * h) & (y <= top + 0.15 * full)
    order = np.argsort(x[tall])
    centres = (x[tall] + w[tall] / 2)[order]
    if sum(c in _TALL for c in text) != len(centres) or not len(centres):
        return text
    edges, _ = glyph_runs(crop)
    cell = _cell(edges.mean(1))
    if cell is None:
        return text
    out, k, pos = [], 0, 0  # k: the index of the next tall character of ``text``
    for m in _EMPTY_PAIR.finditer(text):
        k += sum(c in _TALL for c in text[pos:m.start()])
        tight = abs(centres[k + 1] - centres[k] - cell) <= BRACKET_CELL * cell
        out.append(text[pos:m.start()] + m.group(1) + ("" if tight else " ") + m.group(2))
        k += 2
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


# a lone "V" is a tick where the top of its left arm's ink lies at least this much of the
# ink's height below the top of its right arm's (a V's arms rise alike)
TICK_LEAN = 0.25
_TICK_TOKEN = re.compile(r"(?<!\S)√(?!\S)")


def tick_marks(text: str, crop: np.ndarray) -> str:
    """``text`` with its tick marks written as the check mark "✓" (U+2713). The recognizer
    reads a printed tick as "√" (the square root, the tick of Chinese forms it learned) or,
    alone in its box, as "V"; a user's tick column or "✓ Paid" wants one sign. A "√"
    standing as a word of its own (not before its operand: "√2", "√x" stay) is a tick, and
    so is a line that is only "V" or "v" where the crop's ink leans as a tick does: the
    left arm's top at least ``TICK_LEAN`` of the ink's height below the right arm's.
    A tick first or last in its line whose ink is a heavy check is written "✔" (U+2714,
    :func:`.symbol_shapes.heavy_ticks`): the recognizer reads most of those "✓" too."""
    t = text.strip()
    if t in ("V", "v"):
        return heavy_ticks("✓", crop) if _leans(crop) else text
    if _SLASH_FIRST.match(text) and _slash_is_tick(crop):
        text = "✓" + text[1:]  # "✓ Paid" at 9-10 px read "/ Paid"
    if "√" in text:
        text = _TICK_TOKEN.sub("✓", text)
    return heavy_ticks(text, crop) if "✓" in text else text


# a tick under 10 px read "/" first in its line, a word of its own before a word ("✓ Paid"
# in DejaVu Sans at 8-10 px): its ink is a tick where it is at least TICK_WIDE of its height
# wide (a slash's 0.3-0.5 in DejaVu and Liberation at 8-16 px, a tick's 0.8-1.1) and rises
# from its lowest row's left half to its top row's right half
_SLASH_FIRST = re.compile(r"/ (?=[^\W\d_])")
TICK_WIDE = 0.75


def _slash_is_tick(crop: np.ndarray) -> bool:
    if crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return False
    lab, st, glyphs, words, _, _ = _words(ink_mask(crop))
    if len(words) < 2 or len(words[0]) != 1:
        return False
    x0, x1, ks = glyphs[words[0][0]]
    y0 = min(st[j, 1] for j in ks)
    y1 = max(st[j, 1] + st[j, 3] for j in ks)
    ink = np.isin(lab[y0:y1, x0:x1], ks)
    h, w = ink.shape
    if h < 4 or w < TICK_WIDE * h:
        return False
    return bool(np.flatnonzero(ink[0]).mean() >= w / 2 > np.flatnonzero(ink[-1]).mean())


def _leans(crop: np.ndarray) -> bool:
    if crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return False
    bw = ink_mask(crop)
    cols, rows = np.flatnonzero(bw.any(0)), np.flatnonzero(bw.any(1))
    if len(cols) < 6 or len(rows) < 6:
        return False
    ink = bw[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    h, w = ink.shape
    quarter = max(1, w // 4)

    def top(part) -> float:
        ys = np.flatnonzero(part.any(1))
        return ys[0] / h if len(ys) else 1.0

    return top(ink[:, :quarter]) - top(ink[:, w - quarter:]) >= TICK_LEAN


# a cross read as a letter or the multiplication sign: a word of its own
_CROSS_TOKEN = re.compile(r"(?<!\S)[Xx\u00d7](?!\S)")
_LEADING_CROSS = re.compile(r"[Xx\u00d7](?= |$)")


def cross_marks(texts: list[str]) -> list[str]:
    """A page's lines with their cross marks written "✗" (U+2717), the tick's partner. The
    recognizer has no cross mark: it reads "✗" and "✘" as "X", "x" or "×", which are also
    a letter and the multiplication sign ("2 x 3.50", "Malcolm X"), so a cross is only read
    where ticks show the page is a checklist: on a page with a "✓", an "X", "x" or "×"
    standing as a word of its own in a line with a "✓" (not an "x" or "×" between two
    numbers: "2 x 3.50" is a product), or first in its line ("x Failed",
    a lone "X" in a tick column). Elsewhere it stays as read: "x" is what a user types
    for a cross and searches for."""
    if not any("✓" in t for t in texts):
        return texts
    out = []
    for t in texts:
        if "✓" in t:
            t = _CROSS_TOKEN.sub(lambda m, t=t: m.group() if _times(t, m) else "✗", t)
        else:
            head = t.lstrip()
            if _LEADING_CROSS.match(head):
                t = t[:len(t) - len(head)] + "✗" + head[1:]
        out.append(t)
    return out


# a ring after a digit read as the ordinal "º" (U+00BA) on a page that reads degrees
# elsewhere, or before "C" or "F"; the ring read twice before a Celsius sign ("12°℃")
_ORDINAL_DEGREE = re.compile("(?<=\\d)\u00ba")
_ORDINAL_SCALE = re.compile("(?<=\\d)( ?)\u00ba(?=[CF](?![^\\W\\d_]))")
_RING_TWICE = re.compile("[\u00b0\u00ba]\u2103")


def degree_signs(texts: list[str]) -> list[str]:
    """A page's lines with their degree signs as printed. The recognizer reads a degree
    ring "°" after a digit as the ordinal indicator "º" now and then (a weather card's
    "Mon 13° 7º" in Liberation Sans 22 px), and a "°C" as "°℃", the ring read twice. Where
    a line reads "°" or "℃" elsewhere on the page (or the "º" stands before "C" or "F"),
    a "º" after a digit is a degree; "°℃" is written "°C". A page with no degree read
    keeps its "º": "1º" is an ordinal in Spanish and Portuguese print."""
    out = [_RING_TWICE.sub("\u00b0C", t) for t in texts]
    if not any("\u00ba" in t for t in out):
        return out
    if any("\u00b0" in t or "\u2103" in t for t in out):
        return [_ORDINAL_DEGREE.sub("\u00b0", t) for t in out]
    return [_ORDINAL_SCALE.sub("\\1\u00b0", t) for t in out]


# a vulgar fraction's own numerator and denominator read beside it: "1½2" for "½"
_FRACTION_ECHO = re.compile("(?<!\\d)(?:1\u00bd2|1\u00bc4|3\u00be4)(?!\\d)")


def fraction_echoes(text: str) -> str:
    """``text`` with a vulgar fraction read together with its parts written alone: "½"
    drawn as a small "1", a slash and a small "2" reads "1½2" on a phone photo (a recipe's
    "½ tsp salt" in DejaVu Serif 21 px; RapidOCR reads the same), "1¼4", "3¾4" alike. No
    number holds such a run: a mixed number "1½" followed by a "2" is written "1½ 2"."""
    return _FRACTION_ECHO.sub(lambda m: m.group()[1], text) if "\u00bd" in text or \
        "\u00bc" in text or "\u00be" in text else text


def _times(text: str, m: re.Match) -> bool:
    """Whether the sign ``m`` of ``text`` is a product's: an "x" or "×" between two
    numbers ("2 x 3.50"; a cross read "X" there: "✓ 12 X 3")."""
    before, after = text[:m.start()].rstrip(), text[m.end():].lstrip()
    return m.group() != "X" and before[-1:].isdigit() and after[:1].isdigit()


# a crossed check box read as a letter, a product sign, a cross, the squared times sign or
# "冈" (a frame with a cross in it)
_BOX_CROSS = re.compile(r"^([Xx\u00d7\u2717\u2718\u22a0\u2612\u5188])(?= |$)")
# the frame of a box: each side's line covers at least this much of its side
BOX_SIDE = 0.7
# and the box is at most this much longer one way than the other
BOX_ASPECT = 1.4


def box_marks(text: str, crop: np.ndarray, around: np.ndarray | None = None) -> str:
    """``text`` with a crossed check box that begins it written "☒" (U+2612, in the
    recognizer's dictionary): the recognizer reads a box with an X in it as "X", "x", "×"
    or "⊠" (the squared times sign) or "冈", or loses it. Where the reading begins with one of
    those as a word of its own and the crop's first ink, from the left, is a square frame
    (each side's line at least ``BOX_SIDE`` of its side, no more than ``BOX_ASPECT`` times
    as long one way as the other, at least half the line's ink high) with ink inside it,
    that mark is the box. "X marks the spot" in plain print, "2 x 3" and "× 3" stay.
    ``around``, the box's place in the image with a margin: the detector may box the mark
    alone inside its frame, cutting the frame's sides off the crop."""
    if not could_be_box(text) or crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    framed = _framed_first(crop) or (around is not None and min(around.shape[:2]) >= 8
                                     and _framed_first(around))
    return "\u2612" + text[1:] if framed else text


def could_be_box(text: str) -> bool:
    """Whether ``text`` begins with a mark a crossed box is read as (:func:`box_marks`)."""
    return bool(_BOX_CROSS.match(text))


def _framed_first(crop: np.ndarray) -> bool:
    import cv2

    bw = ink_mask(crop)
    rows = np.flatnonzero(bw.any(1))
    if len(rows) < 6:
        return False
    n, labels, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    if n < 2:
        return False
    big = [k for k in range(1, n) if stats[k, cv2.CC_STAT_HEIGHT] >= 0.5 * (rows[-1] - rows[0] + 1)]
    if not big:
        return False
    k = min(big, key=lambda j: stats[j, cv2.CC_STAT_LEFT])
    x, y, w, h = (int(stats[k, i]) for i in (cv2.CC_STAT_LEFT, cv2.CC_STAT_TOP,
                                              cv2.CC_STAT_WIDTH, cv2.CC_STAT_HEIGHT))
    if w < 6 or h < 6 or max(w, h) > BOX_ASPECT * min(w, h):
        return False
    part = labels[y:y + h, x:x + w] == k
    band = max(1, min(w, h) // 6)  # a frame's line may sit a pixel or two inside its box
    sides = [part[:band].any(0).mean(), part[-band:].any(0).mean(),
             part[:, :band].any(1).mean(), part[:, -band:].any(1).mean()]
    if min(sides) < BOX_SIDE:
        return False
    inside = bw[y + band:y + h - band, x + band:x + w - band]
    inner = part[band:h - band, band:w - band]
    # a frame is hollow: the cross inside is ink of its own or thin strokes across it
    return inside.size > 0 and inner.mean() < 0.5 and inside.mean() > 0.05


# a drawn bullet: a round dot, its side this share of the line's other ink high, its middle
# this share of that ink down from its top, solid as a disc (pi/4 of its square; a drawn
# square or a frame is not one), a blank at least half its width after it
BULLET_SIDE = (0.15, 0.6)
BULLET_MID = (0.25, 0.72)
BULLET_FILL = (0.6, 0.92)
BULLET = "\u2022"
BULLET_ROUND = 0.72  # the dot's overlap with the ellipse of its box, over their union
# readings of a bullet that the recognizer gives as a word of its own
_BULLET_READ = re.compile(r"^[\u00b7\u2219\u30fb.\u3002\u00b0](?= |$)")
_BULLETS = "\u2022\u25cf\u25e6\u25aa\u25a0\u25cb\u00b7\u2219\u30fb\u2013\u2014-*+>"


def is_round_dot(part: np.ndarray) -> bool:
    """Whether the 0/1 mask ``part`` (one mark, cut to its box) is a round, solid dot: at
    least 4 px, its box no more than 1.3 times longer one way, :data:`BULLET_FILL` of it
    ink, and the ink and the ellipse its box holds overlapping by :data:`BULLET_ROUND` of
    their union (a letter set alone, "a new coarse grid" in a 22 px serif, is about as
    solid, but not that shape: 0.23-0.66 for "a", "e", "n", "s", "c", "o" at 14-28 px)."""
    part = np.asarray(part, bool)
    h, w = part.shape
    if min(w, h) < 4 or max(w, h) > 1.3 * min(w, h) or \
            not BULLET_FILL[0] <= part.mean() <= BULLET_FILL[1]:
        return False
    yy, xx = np.mgrid[0:h, 0:w]
    disc = ((xx + 0.5 - w / 2) / (w / 2)) ** 2 + ((yy + 0.5 - h / 2) / (h / 2)) ** 2 <= 1
    return bool((part & disc).sum() >= BULLET_ROUND * (part | disc).sum())


def bullet_mark(text: str, crop: np.ndarray) -> str:
    """``text`` with the drawn bullet that is the crop's first ink written "• " first, where
    the recognizer skipped it or read it as a point. A slide's first bullet point came back
    without its bullet while the later ones had it (round 32's office slide and round 33's
    "Beta opens on 3 March"; RapidOCR read "●"). The first ink must be one round, solid dot
    (:data:`BULLET_FILL` of its square, :data:`BULLET_SIDE` of the other ink's height, its
    middle :data:`BULLET_MID` down that ink, as a bullet sits by the x-height), apart from
    the next ink by half its width; a reading that already begins with a bullet or a dash
    stays."""
    import cv2

    t = text.lstrip()
    if not t or t[0] in _BULLETS and not _BULLET_READ.match(t) or crop.ndim < 2 or \
            min(crop.shape[:2]) < 8 or len(t.split()[0]) == 1 and t[0].isalnum():
        return text  # a first word of one letter or digit: what the first ink was read as
    bw = ink_mask(crop)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    if n < 3:
        return text
    left = stats[1:, cv2.CC_STAT_LEFT]
    k = 1 + int(np.argmin(left))
    x, y, w, h = (int(stats[k, i]) for i in (
        cv2.CC_STAT_LEFT, cv2.CC_STAT_TOP, cv2.CC_STAT_WIDTH, cv2.CC_STAT_HEIGHT))
    if not is_round_dot(labels[y:y + h, x:x + w] == k):
        return text
    rest = bw.copy()
    rest[labels == k] = 0
    cols, rows = np.flatnonzero(rest.any(0)), np.flatnonzero(rest.any(1))
    if not len(cols) or cols[0] < x + w + 0.5 * w:
        return text  # other ink beside or under the dot: a glyph's part, not a bullet
    top, bottom = int(rows[0]), int(rows[-1]) + 1
    high = bottom - top
    mid = (y + h / 2 - top) / max(high, 1)
    if not BULLET_SIDE[0] * high <= h <= BULLET_SIDE[1] * high or \
            not BULLET_MID[0] <= mid <= BULLET_MID[1]:
        return text
    m = _BULLET_READ.match(t)
    return BULLET + " " + (t[m.end():].lstrip() if m else t)


# a "1" read glued to the end of a word of letters: a footnote's "¹" the recognizer reads
# as the digit where the face draws it as a small "1" with a foot (Liberation Serif at 18-24
# px: "¹" 0.15-0.53 against "1", round 36; an "l" too turned "install?" and "Travel" into
# "instal¹?" and "Trave¹": a "?" or a tick raised beside it took the pairing)
_FOOTNOTE = re.compile(r"(?<=[^\W\d_]{2})1(?=[\s.,;:!?)]|$)")
# a unit's power read as a digit after its number ("+7 m2" for "+7 m²": a table's cell of
# 13-px serif print as a scan, round 44): square and cubic metres, centimetres, feet...
_UNIT_POWER = re.compile(r"(?<=\d)(\s?)(?:[kcdm]?m|ft|in)([23])(?=[\s.,;:)/]|$)")
_POWER = {"1": "\u00b9", "2": "\u00b2", "3": "\u00b3"}
# a unit's micro prefix after its number ("25 µs", "100 µg/mL", "10µF"): the micro sign and
# the Greek mu are one glyph in print; the recognizer gives either for the same ink
_MICRO = re.compile(r"(?<=\d)(\s?)\u03bc(?=(?:mol|Hz|Pa|[gsmlLFAVWHKCJNTSΩ])(?![^\W\d_]))")
# a count's power of ten before a per-volume unit, as lab reports write it ("10^9/L",
# "x10^12/L"), whose small caret the recognizer read as a tilde (a lab table as a thumbnail:
# "10~9/L", round 46): the powers blood counts use (3, 6, 9, 12), so that a range written
# with a tilde, as CJK text writes them ("10~20/L"), keeps it
_TEN_POWER = re.compile(r"(?<![\d.,])(10)~(3|6|9|12)(?=/(?:[µμu]?[Ll]|[mnpf]?l|kg|dL)\b)")
# characters read whose ink stands raised above the baseline as parts taller than wide, and
# how many parts each: quotes, superscript digits
_RAISED = {"'": 1, "\u2018": 1, "\u2019": 1, '"': 2, "\u201c": 2, "\u201d": 2, "\u00b9": 1,
           "\u00b2": 1, "\u00b3": 1, "\u2070": 1, **{chr(c): 1 for c in range(0x2074, 0x207a)}}
# a raised part: its bottom at least RAISED_BY of the letters' median height above their
# baseline, at least 0.3 of that height tall and at most RAISED_TALL of the capitals'
RAISED_BY, RAISED_TALL = 0.3, 0.75


def power_carets(text: str) -> str:
    """``text`` with a count's power of ten before a per-volume unit read with a tilde for
    its caret ("10~9/L") written "10^9/L", as a lab report prints it; other tildes (an
    approximate "~10 L", "10~20 mL", a path) keep theirs."""
    return _TEN_POWER.sub(r"\1^\2", text) if "~" in text else text


def micro_signs(text: str) -> str:
    """``text`` with a unit's micro prefix after a number ("25 μs", "100 μg/mL", "10μF")
    written as the micro sign U+00B5, whichever of it and the Greek mu U+03BC the
    recognizer gave: the two are one glyph in print (Liberation, DejaVu), and the
    recognizer reads the same ink either way by face and size ("−25 µs" read "μs" at 18 px,
    "µs" at 28). The micro sign is what a keyboard types (AltGr+M, Option+M) and what a
    document's units carry; NFKC still maps it to the mu. Greek words keep their mu."""
    return _MICRO.sub(lambda m: m.group(1) + "\u00b5", text) if "\u03bc" in text else text


def footnote_marks(text: str, crop: np.ndarray) -> str:
    """``text`` with a "1" read at the end of a word of letters written "¹" where
    its ink stands raised: the crop's raised parts (:data:`RAISED_BY` above the letters'
    baseline, 0.3 of their height to :data:`RAISED_TALL` of the capitals', taller than
    wide), left to right, pair one to one
    with the parts of the characters read that stand raised (quotes, superscript digits)
    and of these, and such a "1" is paired with a part within three letter heights
    of where its place in the text puts it ("notes1 below" for "notes¹ below" in
    Liberation Serif; "all", "Room A1" keep theirs). A unit's power read as a digit after
    its number (:data:`_UNIT_POWER`: "42 m2", "3 cm3") is written "²", "³" alike, and
    a unit's micro prefix after its number read as a Greek "μ" is written "µ"
    (:func:`micro_signs`); a lab unit's "10~9/L" "10^9/L" (:func:`power_carets`)."""
    text = power_carets(micro_signs(text))
    found = sorted([m.start() for m in _FOOTNOTE.finditer(text)] +
                   [m.start(2) for m in _UNIT_POWER.finditer(text)])
    if not found or crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    import cv2

    bw = ink_mask(crop)
    n, _, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    if n < 4:
        return text
    x, y = stats[1:, cv2.CC_STAT_LEFT], stats[1:, cv2.CC_STAT_TOP]
    w, h = stats[1:, cv2.CC_STAT_WIDTH], stats[1:, cv2.CC_STAT_HEIGHT]
    letters = h >= 0.35 * h.max()
    height = float(np.median(h[letters]))
    base = float(np.median((y + h)[letters]))
    tall = float(np.percentile(h[letters], 90))  # capitals and ascenders
    raised = (y + h <= base - RAISED_BY * height) & (h >= 0.3 * height) & \
        (h <= RAISED_TALL * tall) & (h > w)
    parts = np.sort(x[raised] + w[raised] / 2)
    want = sorted([(k, j) for k, c in enumerate(text) for j in range(_RAISED.get(c, 0))] +
                  [(k, 0) for k in found])
    if len(parts) != len(want):
        return _power_at_end(text, found, bw, base, height)
    left, right = float(x.min()), float((x + w).max())
    at = {k: p for (k, _), p in zip(want, parts, strict=True)}
    chars = list(text)
    for k in found:
        guess = left + (k + 0.5) / len(text) * (right - left)
        if abs(at[k] - guess) <= 3 * height:
            chars[k] = _POWER[text[k]]
    return "".join(chars)


def _power_at_end(text: str, found: list[int], bw: np.ndarray, base: float,
                  height: float) -> str:
    """``text`` with a unit's power that ends it written raised where the crop's last
    columns hold raised ink only: a run from the right edge of the ink whose every column's
    lowest ink stands :data:`RAISED_BY` of the letters' height above their baseline, 0.25-0.8
    of that height wide and at least 0.3 of it tall. A scan's blur joins the "²" to its "m"
    (a table cell "+7 m²" at 13 px read "+7 m2", round 44): no part of its own to pair."""
    k = len(text) - 1
    if not found or found[-1] != k or text[k] not in "23" or \
            not _UNIT_POWER.search(text[max(0, k - 4):]):
        return text
    cols = np.flatnonzero(bw.any(0))
    if not len(cols):
        return text
    low = bw.shape[0] - 1 - np.argmax(bw[::-1], axis=0)  # each column's lowest ink row
    top = np.argmax(bw, axis=0)
    run = []
    for c in range(int(cols[-1]), int(cols[0]) - 1, -1):
        if not bw[:, c].any():
            if run:
                break
            continue
        if low[c] + 1 > base - RAISED_BY * height:
            break
        run.append(c)
    if not run or not 0.25 * height <= len(run) <= 0.8 * height:
        return text
    if float(low[run].max() + 1 - top[run].min()) < 0.3 * height:
        return text
    return text[:k] + _POWER[text[k]]


# an en dash read "-": its ink, less its own thickness, spans at least EN_DASH of the line's
# digit or capital height (from the median top of its big glyphs' highest tenth to their
# median baseline). Over 39 installed faces at 14-44 px (round 37) a hyphen spans at most
# 0.36 (Noto Serif CJK Bold at 14 px) and an en dash at least 0.27 (DejaVu Sans Bold), 0.45
# in Liberation, Noto and monospaced faces: the DejaVu bold faces' en dashes overlap their
# hyphens and are left as read. Less the thickness, a blurred photo's dash keeps its span.
EN_DASH = 0.38
# a dash stands a word's space from its neighbour where the blank columns between their
# ink are at least SPACED of the digit height, and set tight at most TIGHT of it
SPACED, TIGHT = 0.3, 0.12
# a dash's ink fills at least DASH_FILL of its bounding box; a tilde's wave less (0.48-0.74
# in DejaVu Sans Mono at 14-26 px; a blurred 18-px monospaced en dash falls under it too).
# Between letters or digits ("12–15", "Mon – Fri") DASH_FILL_WORDS will do: a phone photo's
# blur and turn leave its dashes 0.5-0.8 of their box (a tilde read "-" there is wrong as
# read either way; in a path, "cd ~/skiff", the stricter figure holds)
DASH_FILL, DASH_FILL_WORDS = 0.8, 0.6
# a dash joined to its neighbour by a photo's blur (:func:`_joined_dashes`) keeps the grey
# bridge between them: a hyphen's run spans up to 0.40 of the digit height there (Liberation
# Serif 22 px as a phone photo), an en dash's 0.47-0.73; nor is it looked for where the
# digits stand under JOINED_TALL px (an 11-14 px hyphen's bridge spans 0.4-0.5)
JOINED_DASH, JOINED_TALL = 0.45, 12
# characters read that are one flat mark halfway up (paired in order with such marks)
_FLAT = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212~"
_MATH = re.compile(r"[=+\u00d7\u00f7]")
# a sign: a dash that begins a number, at the line's start or after a space that no number
# ends before ("-80.4", "x = -3"; "8:00 -18:30" is a range read without its space)
_SIGN = re.compile(r"(?:(?<=^)|(?<=^ )|(?<=[^\d\s] )|(?<=[^\d\s]))-(?=\d)")
# the same sign read by the recognizer as "\u2212" ("Temp \u22125 °C" in Liberation Sans at 28 px,
# "\u221225 µs" in DejaVu Sans at 28; "-" at 18): written "-" as round 40 decided for a sign
_SIGN_MINUS = re.compile(_SIGN.pattern.replace("-(?=", "\u2212(?="))


def _flat_marks(bw: np.ndarray) -> tuple[list[tuple[int, int, int, float]], float,
                                         float] | None:
    """The flat marks halfway up a line's ink mask, left to right, as ``(first column, end
    column, thickness, fill of the box)``, the line's digit height and the row of its top;
    None for a mask too small to tell. A mark is a component no higher than 0.3 of the
    digit height, twice as wide as high, its middle 0.3-0.8 of that height down, with no
    other ink above or below it (not a bar of "=", "÷", "±")."""
    import cv2

    n, _, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    if n < 3:
        return None
    x, y, w, h, area = (stats[1:, k].astype(float) for k in range(5))
    big = h >= 0.5 * h.max()
    base = float(np.median((y + h)[big]))
    tall = base - float(np.percentile(y[big], 10))
    if tall < 8:
        return None
    middle = (y + h / 2 - (base - tall)) / tall
    flat = (h <= 0.3 * tall) & (w >= 2 * h) & (middle >= 0.3) & (middle <= 0.8)
    for i in np.flatnonzero(flat):
        over = (x < x[i] + w[i]) & (x + w > x[i])
        over[i] = False
        if over.any():
            flat[i] = False
    marks = [(int(x[i]), int(x[i] + w[i]), int(h[i]), float(area[i] / (w[i] * h[i])))
             for i in np.flatnonzero(flat)]
    return sorted(marks), tall, base - tall


def _joined_dashes(bw: np.ndarray, tall: float, top: float,
                   marks: list) -> list[tuple[int, int, int, float]]:
    """Dashes a photo's blur joined to a neighbour, as :func:`_flat_marks` gives marks:
    runs of columns, outside ``marks``, whose only ink is one unbroken stroke no thicker
    than 0.3 of the digit height ``tall``, its middle 0.3-0.8 of that height below ``top``,
    its ends moving a pixel at most from column to column, the run at least twice as long
    as thick. A hyphen's run is no longer than the hyphen, so the width rule holds for it
    as for a free mark; a capital H's bar is such a run too: then the counts differ and the
    line stays as read."""
    ink = bw.astype(bool)
    count = ink.sum(0)
    first = ink.argmax(0)
    last = bw.shape[0] - 1 - ink[::-1].argmax(0)
    middle = ((first + last) / 2 - top) / tall
    one = (count > 0) & (last - first + 1 == count) & (count <= 0.3 * tall) & \
        (middle >= 0.3) & (middle <= 0.8)
    for x0, x1, _, _ in marks:
        one[x0:x1] = False
    runs, c = [], 0
    while c < len(one):
        if not one[c]:
            c += 1
            continue
        d = c
        while d + 1 < len(one) and one[d + 1] and abs(int(first[d + 1]) - int(first[d])) <= 1 \
                and abs(int(last[d + 1]) - int(last[d])) <= 1:
            d += 1
        thick = int(last[c:d + 1].max() - first[c:d + 1].min() + 1)
        if d + 1 - c >= 2 * thick:
            runs.append((c, d + 1, thick, float(count[c:d + 1].sum() / ((d + 1 - c) * thick))))
        c = d + 1
    return runs


def en_dashes(text: str, crop: np.ndarray) -> str:
    """``text`` with a "-" written "–" where its ink is an en dash's, and the spaces beside
    such a dash as its ink stands: the crop's flat marks (no higher than 0.3 of the line's
    digit height, twice as wide as high, their middle 0.3-0.8 of that height down, no other
    ink above or below them: not "=", "÷" or "±"), left to right, pair one to one with the
    reading's dashes, hyphens, minus signs and tildes, and a "-" whose mark spans
    :data:`EN_DASH` of the digit height or more is an en dash ("Mon – Fri", "12–15" in
    Liberation Sans read "Mon - Fri", "12-15"; a hyphen in any face spans at most 0.36), a
    minus sign "−" in a line of arithmetic (one with "=", "+", "×" or "÷"). Such a dash
    between two characters gets a space on a side whose blank is at least :data:`SPACED`
    of the digit height and loses one whose blank is at most :data:`TIGHT` ("8:00 -18:30"
    in Liberation Serif: "8:00 – 18:30") where the characters beyond it are letters or
    digits. Where the reading holds more dashes than the free marks, a dash the blur of a
    photo joined to its digit is looked for (:func:`_joined_dashes`: "06:35–07:05" in
    Liberation Sans 20-32 px). Where the counts differ nothing changes; nor in a line with
    CJK characters (AR PL UKai's hyphen spans 0.50: "电话 010-8821"), nor for a mark filling
    under :data:`DASH_FILL` of its box (a prompt's "~" read "-"; :data:`DASH_FILL_WORDS`
    between letters or digits), nor for a sign, a dash that begins a
    number not after another ("-80.4" on a display, "x = -3"), nor doubled hyphens (C's
    "x--;", "--flag": a small monospaced hyphen can span :data:`EN_DASH`). A sign the
    recognizer read "−" is written "-" too (round 40's rule; "12 − 5 = 7" keeps its
    operator)."""
    if "\u2212" in text:  # a sign read "\u2212" as the recognizer may: "-" (:data:`_SIGN_MINUS`)
        text = _SIGN_MINUS.sub("-", text)
    if "-" not in text or crop.ndim < 2 or min(crop.shape[:2]) < 8 or \
            any(_cjk_char(c) for c in text):
        return text
    bw = ink_mask(crop)
    found = _flat_marks(bw)
    if found is None:
        return text
    marks, tall, top = found
    read = [k for k, c in enumerate(text) if c in _FLAT]
    least = [EN_DASH] * len(marks)
    if len(read) > len(marks) and tall >= JOINED_TALL:  # a photo's blur joined a dash to
        # its digit ("06:35–07:05")
        joined = _joined_dashes(bw, tall, top, marks)
        order = np.argsort([m[0] for m in marks + joined], kind="stable")
        least = [(least + [JOINED_DASH] * len(joined))[i] for i in order]
        marks = [(marks + joined)[i] for i in order]
    if len(read) != len(marks):
        return text
    inked = np.flatnonzero(bw.any(0))
    dash = "\u2212" if _MATH.search(text) else "\u2013"
    chars = list(text)
    for k, (x0, x1, thick, fill), span in zip(read, marks, least, strict=True):
        words = text[:k].rstrip()[-1:].isalnum() and text[k + 1:].lstrip()[:1].isalnum()
        if chars[k] != "-" or (x1 - x0 - thick) / tall < span or _SIGN.match(text, k) or \
                fill < (DASH_FILL_WORDS if words else DASH_FILL) or \
                "-" in (text[k - 1:k], text[k + 1:k + 2]):  # "~" read "-"; "x--", "--flag"
            continue
        chars[k] = dash
        left, right = inked[inked < x0], inked[inked >= x1]
        if dash != "\u2013" or not len(left) or not len(right):
            continue
        gaps = ((x0 - left[-1] - 1) / tall, (right[0] - x1) / tall)
        if not words:
            continue  # "build:~/skiff" read "build:-/skiff": no space goes in
        for side, gap in zip((-1, 1), gaps, strict=True):
            j = k + side
            if not 0 <= j < len(chars):
                continue
            if chars[j] == " " and gap <= TIGHT:
                chars[j] = ""
            elif chars[j] not in ("", " ") and gap >= SPACED:
                chars[j] = chars[j] + " " if side < 0 else " " + chars[j]
    return "".join(chars)


# a dash alone in its box, its ink less its thickness over its row's digit height: under
# EN_DASH a hyphen (0.15-0.33 drawn at 18 and 30 px in Liberation Sans, Serif, Mono, Sans
# Bold, DejaVu Sans, Serif, Sans Condensed, Sans Bold), under EM_DASH an en dash (0.57-0.75
# in Liberation, 0.31-0.50 in DejaVu: under EN_DASH there, as en_dashes leaves them), else
# an em dash (0.80-0.83 in Liberation Mono, 0.92-1.42 in the others)
EM_DASH = 0.78
_LONE = ("\u4e00", "-", "\u2013", "\u2014", "\u2212")


def lone_dashes(rows: list[list[int]], boxes: list[np.ndarray], texts: list[str],
                image: np.ndarray | None) -> list[str]:
    """``texts`` with each box read as one dash alone (a timetable's "–" for a train that
    does not stop, read "一", CJK one, in Liberation Sans 22 px) written as its ink's width
    says, on a page with no CJK character elsewhere: the mark's width less its thickness
    over the digit height of its row's other lines (each line's, as :func:`en_dashes`
    measures it, the median) is a hyphen "-" under :data:`EN_DASH`, an en dash "–" under
    :data:`EM_DASH`, an em dash "—" else. A box without such neighbours, or whose ink is
    not one flat mark, stays as read."""
    lone = [i for i, t in enumerate(texts) if t.strip() in _LONE]
    if image is None or not lone or \
            any(_cjk_char(c) for i, t in enumerate(texts) if i not in lone for c in t):
        return texts
    out = list(texts)
    row_of = {i: row for row in rows for i in row}
    for i in lone:
        heights = []
        for j in row_of.get(i, []):
            found = None if j in lone else _flat_marks(ink_mask(_box_crop(image, boxes[j])))
            if found is not None:
                heights.append(found[1])
        mark = _one_flat_mark(_box_crop(image, boxes[i]))
        if not heights or mark is None:
            continue
        span = mark / float(np.median(heights))
        out[i] = "-" if span < EN_DASH else "\u2013" if span < EM_DASH else "\u2014"
    return out


def _box_crop(image: np.ndarray, box: np.ndarray) -> np.ndarray:
    """The image under ``box``'s upright bounding rectangle."""
    p = np.asarray(box, np.float64)
    h, w = image.shape[:2]
    x0, y0 = (max(0, int(np.floor(v))) for v in p.min(0))
    x1, y1 = min(w, int(np.ceil(p[:, 0].max()))), min(h, int(np.ceil(p[:, 1].max())))
    return image[y0:max(y0, y1), x0:max(x0, x1)]


def _one_flat_mark(crop: np.ndarray) -> float | None:
    """The width less the thickness, in pixels, of the crop's ink where it is one component
    at least twice as wide as thick; None else."""
    import cv2

    if crop.ndim < 2 or min(crop.shape[:2]) < 4:
        return None
    n, _, stats, _ = cv2.connectedComponentsWithStats(ink_mask(crop), connectivity=8)
    if n != 2:
        return None
    w, h = float(stats[1, 2]), float(stats[1, 3])
    return w - h if w >= 2 * h else None


# a colon read ":" stands in a full-width cell where the blank columns on both sides of its
# dots are at least FULL_COLON of the line's digit height: 0.55-1.0 for "：" after Latin
# print in Noto Sans and Serif CJK, WenQuanYi Zen Hei and AR PL UKai at 18-40 px, at most
# 0.46 before a half-width colon (UKai; 0.13-0.31 in the others)
FULL_COLON = 0.5
_SPACED_COLON = re.compile(r" ?: ?")
# a simplified-Chinese face sets "：" at the left of its cell (Noto Sans and Serif CJK SC:
# 0.12-0.30 of the digit height blank before its dots, 0.62-1.0 after; their half-width
# colon and a space 0.09-0.22 and 0.33-0.51, WenQuanYi Zen Hei's up to 0.62): after a Han
# character such a colon read ":" is the full-width one. AR PL UKai's half-width colon and
# a space reach 0.25-0.45 and 0.85-1.14, but its dots stand 0.30-0.40 of the digit height
# apart, SC's "：" 0.41-0.66 (LEFT_COLON_SPAN)
LEFT_COLON_BEFORE = (0.12, 0.3)
LEFT_COLON_AFTER = 0.65
LEFT_COLON_SPAN = 0.41
# Noto Serif CJK SC's "：" at 16-28 px (clean, blurred, as a phone photo) stands 0.33-0.41
# apart too, but its dots are small: each 0.013-0.023 of the digit height squared in ink,
# UKai's half-width ones 0.020-0.065 (round 45 h15, `colon2.py`: of UKai's 66 ": " in the
# window above, the one at 0.385 or more has dots of 0.065, the nearest under it 0.379 and
# 0.023); such a pair at LEFT_COLON_NEAR or more with dots of at most LEFT_COLON_DOT is
# "：" too
LEFT_COLON_NEAR = 0.385
LEFT_COLON_DOT = 0.024


def full_width_colons(text: str, crop: np.ndarray, cjk_page: bool) -> str:
    """``text`` with each ":" whose ink stands in a full-width cell written "：" without
    the spaces read beside it, on a page with CJK print (``cjk_page``): a Chinese form's
    "Tel：021-5555" or "Email：li@abc.cn" after Latin print reads "Tel:021-5555",
    "Tel : 021-5555" or "Tel: 021-5555" by the face and size (the recognizer's, and a
    line without CJK characters of its own escapes the CJK rules of
    :mod:`~skiff.kernels.ocr.spacing`). The crop's colons (two small marks one above the
    other) pair in order with the reading's; where the counts differ nothing changes. A
    French "Tel : 021" (a space each side, 0.42-0.76 of the digit height) looks the same:
    hence only on a page with CJK print, and a colon read with a space each side stays (a
    full-width one read so too, "Fax : 021" in Noto Sans CJK at 28 px, is left)."""
    if not cjk_page or ":" not in text or crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    bw = ink_mask(crop)
    found = _flat_marks(bw)
    if found is None:
        return text
    tall = found[1]
    colons = _colon_marks(bw, tall)
    spots = list(_SPACED_COLON.finditer(text))
    if len(spots) != len(colons):
        return text
    out, at = [], 0
    for m, (before, after, span, dot) in zip(spots, colons, strict=True):
        out.append(text[at:m.start()])
        last = text[:m.start()][-1:]
        full = min(before, after) >= FULL_COLON and (last.isalnum() or last == ".") and \
            m.group() != " : "  # read spaced both sides: as a French "Tel : 021" is set
        full = full or ("\u4e00" <= last <= "\u9fff" and m.group() in (":", ": ")
                        and LEFT_COLON_BEFORE[0] <= before <= LEFT_COLON_BEFORE[1]
                        and after >= LEFT_COLON_AFTER and (span >= LEFT_COLON_SPAN or (
                            span >= LEFT_COLON_NEAR and dot <= LEFT_COLON_DOT)))
        out.append("\uff1a" if full else m.group())
        at = m.end()
    return "".join(out) + text[at:]


def _colon_blanks(bw: np.ndarray, tall: float) -> list[tuple[float, float]]:
    """The colons of an ink mask, left to right, as the blank columns before and after
    each over ``tall`` (:func:`_colon_marks` without the dots' span)."""
    return [(before, after) for before, after, _, _ in _colon_marks(bw, tall)]


def _colon_marks(bw: np.ndarray, tall: float) -> list[tuple[float, float, float, float]]:
    """The colons of an ink mask, left to right, as the blank columns before and after
    each and the rows from the top of its upper dot to the top of its lower one, over
    ``tall``, and its dots' mean ink over ``tall`` squared: two components no bigger than
    0.3 of ``tall`` each way, one over the other (their centres within 0.15 of ``tall``
    across, 0.3 of it apart down)."""
    import cv2

    n, _, stats, _ = cv2.connectedComponentsWithStats(bw, connectivity=8)
    x, y, w, h, area = (stats[1:, k].astype(float) for k in range(5))
    small = np.flatnonzero((h <= 0.3 * tall) & (w <= 0.3 * tall))
    inked = np.flatnonzero(bw.any(0))
    out = []
    for a in small:
        for b in small:
            if y[b] - y[a] < 0.3 * tall or abs(x[a] + w[a] / 2 - x[b] - w[b] / 2) > 0.15 * tall:
                continue
            lo, hi = min(x[a], x[b]), max(x[a] + w[a], x[b] + w[b])
            left, right = inked[inked < lo], inked[inked >= hi]
            out.append((lo, (lo - left[-1] - 1) / tall if len(left) else np.inf,
                        (right[0] - hi) / tall if len(right) else np.inf,
                        (y[b] - y[a]) / tall, (area[a] + area[b]) / 2 / tall ** 2))
    return [(before, after, span, dot) for _, before, after, span, dot in sorted(out)]
