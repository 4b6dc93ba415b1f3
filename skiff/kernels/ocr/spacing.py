"""Spaces in a line's reading that its pixels contradict.

The recognizer reads a gap as a space by its width alone. Two kinds of lines put spaces
where a reader sees none, and the crop's ink, cut into glyphs by its empty columns, tells
them apart from ordinary spacing:

* :func:`cell_spaces`: a seven-segment display's right-set "1" ("635 143" for "635143");
* :func:`letter_spaces`: letter-spaced capitals on signs and headings ("O P E N  D A I L Y"
  for "OPEN DAILY"), where the gaps between words are wider than those between letters.

And one kind of line loses a space its pixels show: :func:`missed_spaces` puts back a word
gap the recognizer read as nothing ("line7" for "line 7"), common on JPEG'd scans.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

import numpy as np

from .images import grey_of

__all__ = ["ink_mask", "local_ink_mask", "glyph_runs", "cell_spaces", "letter_spaces",
           "missed_spaces", "cjk_spaces", "separator_spaces", "digit_spaces",
           "spurious_spaces", "one_width"]


def ink_mask(crop: np.ndarray) -> np.ndarray:
    """The crop's ink as a 0/1 uint8 mask: Otsu's threshold of its grey, the lesser side."""
    import cv2

    if crop.ndim == 3 and crop.shape[2] == 3 and crop.dtype == np.uint8:
        grey = grey_of(crop)  # the channels' mean rounded down, as the cast below gives it
    else:
        grey = crop.mean(2) if crop.ndim == 3 else crop
    _, bw = cv2.threshold(np.ascontiguousarray(grey, np.uint8), 0, 1,
                          cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    return 1 - bw if bw.mean() > 0.5 else bw


def local_ink_mask(crop: np.ndarray) -> np.ndarray:
    """The crop's ink as a 0/1 uint8 mask under uneven light (a photo's shadow across a
    line): each pixel against its neighbourhood's background (the brightest, or for light
    print the darkest, grey within a square of the crop's height, wider than any stroke),
    then Otsu's threshold of that contrast; of the two polarities the sparser mask is the
    ink. A global threshold (:func:`ink_mask`) took the shadowed half of such a line for
    ink whole, and its letters for gaps."""
    import cv2

    grey = np.ascontiguousarray(crop.mean(2) if crop.ndim == 3 else crop, np.float32)
    k = max(3, int(crop.shape[0]) | 1)
    kernel = np.ones((k, k), np.uint8)
    masks = []
    for contrast in (cv2.dilate(grey, kernel) - grey, grey - cv2.erode(grey, kernel)):
        top = float(contrast.max())
        if top <= 0:
            masks.append(np.zeros(grey.shape, np.uint8))
            continue
        scaled = np.clip(contrast * (255.0 / top), 0, 255).astype(np.uint8)
        _, bw = cv2.threshold(scaled, 0, 1, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
        masks.append(bw)
    return min(masks, key=lambda m: float(m.mean()))


def glyph_runs(crop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The crop's ink cut into glyphs by its empty columns: ``(edges, heights)``, the
    ``[start, end)`` columns of each run of inked columns and the height of its ink."""
    bw = ink_mask(crop)
    on = np.r_[False, bw.any(0), False]
    edges = np.flatnonzero(on[1:] != on[:-1]).reshape(-1, 2)
    rows = [np.flatnonzero(bw[:, a:b].any(1)) for a, b in edges]
    return edges, np.array([r[-1] - r[0] + 1 for r in rows], float)


# a display's cells stand one pitch apart, across a right-set "1"'s dark half too; where
# the steps between the right edges of digits the reading spaces are at least SPACED_STEP
# times those of the digits it does not, the spaces are real ("7 14 21 28" in Liberation
# Serif at 12-16 px, tabular digits whose "1"s stand in the right of their cells: steps
# 11, 9, 11, 8, 12, 8 read as one pitch, "7142128")
SPACED_STEP = 1.15
_SPACED_NUMBER = re.compile(r"-? ?[\d.:]+(?: [\d.:]+)*")


def cell_spaces(text: str, crop: np.ndarray) -> str:
    """``text`` without its spaces when it is a number read from a display whose digits
    stand in equal cells one after another: a seven-segment "1" lights only the right of
    its cell, and the recognizer reads the dark left half as a space ("635 143" for
    "635143"). Only for a reading of digits (with ``-``, ``.``, ``:``) and spaces, and only
    when the crop's ink, cut into glyphs by its empty columns, gives as many full-height
    glyphs as the reading has digits, with their right edges a steady pitch apart (each step
    within a fifth of the median; not across a clock's colon) of at most 1.45 times the
    widest glyph: a real space, in any font, moves the digits after it half a digit or more
    off that pitch, so does a display's blank cell, and digits spaced evenly ("3 1 4") stand
    further apart than their own width."""
    if " " not in text or not _SPACED_NUMBER.fullmatch(text):
        return text
    digits = sum(c.isdigit() for c in text)
    if digits < 3 or crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    edges, tall = glyph_runs(crop)
    full = edges[tall >= 0.6 * tall.max()]
    if len(full) != digits:
        return text
    steps = np.diff(full[:, 1].astype(float))
    # a clock's colon stands between cells of its own: steps across one are not counted
    at = [i for i, c in enumerate(text) if c.isdigit()]
    pairs = [text[a:b] for a, b in itertools.pairwise(at)]
    steps = steps[[":" not in p for p in pairs]]
    if not len(steps):
        return text
    across = np.array([" " in p for p in pairs if ":" not in p])
    if across.any() and (~across).any() and \
            np.median(steps[across]) >= SPACED_STEP * np.median(steps[~across]):
        return text  # the digits a space stands between are further apart: real spaces
    pitch = float(np.median(steps))
    widest = float((full[:, 1] - full[:, 0]).max())
    if not 0 < pitch <= 1.45 * widest or np.abs(steps - pitch).max() > 0.2 * pitch:
        return text  # off the pitch, or cells wider than a digit and its gap: spaced digits
    return text.replace(" ", "")


# single digits a word's gap apart ("1 2 3 4 5 6 7", a calendar's week, lottery numbers):
# the recognizer gives their gaps the space at 0.001-0.05 and reads "1234567". Its glyphs
# are spaced digits when every gap is at least DIGIT_GAP of the ink's height, their median
# at least DIGIT_MEDIAN, the widest at most DIGIT_EVEN times the narrowest (evenly set:
# "12 3" in DejaVu Serif, its "1"'s foot a third of the height from the "2", is a number and
# a digit), and their right edges at least DIGIT_PITCH times the widest glyph apart.
# Measured on "2 4 6", "1 2 3 4 5 6 7" against "2046", "90210" in DejaVu Sans and
# Liberation Sans and Serif at 12-36 px: spaced gaps 0.33-0.73 (median 0.38 or more),
# a number's 0.06-0.33 (a tabular "1"; median 0.25 or less); a display's cells stand one
# glyph and a bit apart, a display's "1" is a lone bar (no glyph narrower than BAR_1 of the
# height is looked at), and a run of "1"s (narrow glyphs far apart in any face) is left
DIGIT_GAP, DIGIT_MEDIAN, DIGIT_PITCH, DIGIT_EVEN = 0.3, 0.35, 1.3, 1.7
# a reading with spaces of its own ("1 234567": some of the gaps hinted) is spaced through
# only where its unspaced gaps are at least DIGIT_LIKE of its spaced ones ("12 3", "3 12"
# in DejaVu at 12-14 px: 0.43-0.6; spaced digits' gaps are within 1.5 of each other)
DIGIT_LIKE = 0.65


def digit_spaces(text: str, crop: np.ndarray) -> str:
    """``text`` with a space between each two of its digits where it is only digits and
    spaces (three digits or more, not all "1"s) and the crop's ink (:func:`glyph_runs`)
    gives one glyph a digit, every gap at least ``DIGIT_GAP`` of the ink's height, their
    median at least ``DIGIT_MEDIAN``, the widest at most ``DIGIT_EVEN`` times the
    narrowest, the glyphs' right edges at least ``DIGIT_PITCH`` times the widest glyph
    apart, and (where the reading has spaces) the gaps read as none at least
    ``DIGIT_LIKE`` of those read as spaces: single digits set a word apart ("1234567" or
    "1 234567" for a calendar's "1 2 3 4 5 6 7")."""
    digits = text.replace(" ", "")
    if len(digits) < 3 or not digits.isdigit() or not digits.isascii() or \
            not set(digits) - {"1"} or text != text.strip() or "  " in text or \
            crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    edges, tall = glyph_runs(crop)
    if len(edges) != len(digits):
        return text
    bw = ink_mask(crop)
    rows = np.flatnonzero(bw.any(1))
    height = float(rows[-1] - rows[0] + 1) if len(rows) else 0.0
    widths = (edges[:, 1] - edges[:, 0]).astype(float)
    if height < 6 or widths.min() < BAR_1 * height or tall.min() < 0.6 * tall.max():
        return text
    gaps = (edges[1:, 0] - edges[:-1, 1]).astype(float) / height
    pitch = np.diff(edges[:, 1]).astype(float)
    if gaps.min() < DIGIT_GAP or np.median(gaps) < DIGIT_MEDIAN or \
            gaps.max() > DIGIT_EVEN * gaps.min() or pitch.min() < DIGIT_PITCH * widths.max():
        return text
    spaced = np.zeros(len(gaps), bool)  # the gaps the reading has a space in
    spaced[[i - k - 1 for k, i in enumerate(j for j, c in enumerate(text) if c == " ")]] = True
    if spaced.any() and (~spaced).any() and \
            gaps[~spaced].min() < DIGIT_LIKE * gaps[spaced].min():
        return text  # "12 3": the gap read as none is narrower than the one read as a space
    return " ".join(digits)


# letter-spaced words: a reading of at least LETTERS cased letters (Latin, Greek, Cyrillic;
# not CJK, whose characters stand apart anyway) whose glyphs stand TRACKED times their
# height apart or more (ordinary print: a tenth or so); a gap WORD_GAP times the median
# gap or wider ends a word
LETTERS, TRACKED, WORD_GAP = 4, 0.3, 1.6


def letter_spaces(text: str, crop: np.ndarray) -> str:
    """``text`` spaced as a letter-spaced line's glyphs stand: a sign's or heading's
    capitals set wide apart ("O P E N   D A I L Y") read as one letter a word, or with
    spaces here and there ("OPEN D AILY"), where a reader sees "OPEN DAILY".

    Only for a reading of at least :data:`LETTERS` cased letters and spaces, and only when
    the crop's ink cuts into exactly that many glyphs (:func:`glyph_runs`) whose gaps are
    of two kinds at most: the letters' own, each within half to 1.5 times their median and
    that median at least :data:`TRACKED` times the glyphs' height (ordinary print stands
    closer, and its glyphs often touch), and wider ones (:data:`WORD_GAP` times the median
    or more), which are the spaces between words where the reading has a space there.
    Spaces are only taken away, never added (the narrow letters of a monospaced font
    stand as far apart as tracked ones). Gaps of every width (letters laid out
    freely), a glyph broken or two touching keep the reading as it was. A line of single
    letters at ordinary word spacing ("A B C D") reads closed up too: the two look alike,
    and tracked words are the common case on signs."""
    letters = text.replace(" ", "")
    if " " not in text.strip() or len(letters) < LETTERS or \
            any(unicodedata.category(c) not in ("Lu", "Ll", "Lt") for c in letters):
        return text
    if crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return text
    edges, tall = glyph_runs(crop)
    keep = tall >= 0.3 * tall.max() if len(tall) else np.ones(0, bool)  # specks: no glyphs
    edges, tall = edges[keep], tall[keep]
    if len(edges) != len(letters):
        return text
    gaps = (edges[1:, 0] - edges[:-1, 1]).astype(float)
    gap = float(np.median(gaps))
    word = gaps >= WORD_GAP * gap
    inner = gaps[~word]
    if (gap < TRACKED * float(np.median(tall)) or not len(inner) or inner.min() < 0.5 * gap
            or inner.max() > 1.5 * gap):
        return text
    spaced, n = set(), 0  # the letters the reading puts a space after
    for c in text.strip():
        if c == " ":
            spaced.add(n - 1)
        else:
            n += 1
    return "".join(c + (" " if i in spaced and i < len(word) and word[i] else "")
                   for i, c in enumerate(letters))


# a gap between two glyphs is a word's when its run of empty columns is at least this many
# times the line's ink height, and at least SPACE_OF_LINE times the narrowest gap read as a
# space in the same line (or, in a line with no space read, the recognizer gave the space at
# least SPACE_P there). Measured on 1,600 rendered Latin lines (nine DejaVu and Liberation
# faces, sans, serif, mono, bold, italic; 14-36 px, upscaled 1-3x, JPEG quality 50 and 75):
# letter gaps reach 0.41 of the height (a tabular "1" in its cell, "i" in a monospaced one),
# read spaces go down to 0.22, missed ones start at 0.30 and sit at 0.8 of the line's read
# spaces or more; 79 of 80 missed spaces put back, 2 letter gaps spaced of 22,000
SPACE_GAP = 0.3
SPACE_OF_LINE = 0.8
SPACE_P = 0.05
SPACE_HINT = 0.02
_NUMBERISH = frozenset("0123456789.,:-/")
# between two characters of numbers ("12 345", "3,200.00 15,604.01", "- 1 -") the gap is
# only looked at where the recognizer gave the space at least NUMBER_P: a digit's gap in
# a monospaced or tabular cell (a "1", the cell after a "." or ":") is as wide as a word's,
# but the space's probability tells them apart. Measured on 599 rendered lines of numbers
# (ten DejaVu and Liberation faces, 11-28 px, a third JPEG'd): 48 spaces between numbers
# read as nothing, all with the space at 0.03-0.50; of 6,577 pairs with no space, 2 reach
# 0.05, both after a separator inside a number (_INNER), which never takes a space
NUMBER_P = 0.05
_INNER = frozenset(",.:")
# between a word and a number ("customer3875" for "customer 3875", "3446order") the
# recognizer may give the space far less than SPACE_HINT: a 100-dpi raster page rendered
# from its PDF at 180-250 dpi (56-70 px crops, 1.8-2.5x upscaled print read at 48 rows)
# gave it 0.0008-0.018 in 7 of 40 pages' word gaps, read right at 100, 150 and 300 dpi.
# Such a pair is looked at from WORD_NUMBER_HINT, and takes a space where the line reads
# spaces of its own and the gap is at least WORD_NUMBER_OF_LINE of the narrowest (and
# SPACE_GAP). Measured on 1,125 letter-digit pairs of rendered lines (eight DejaVu and
# Liberation faces, sans, serif, mono, bold; 40-64 px, and 20-32 px upscaled 2x or through
# a PDF at 180-250 dpi): word gaps 0.92 of the line's spaces or more (hint 0.0008 and up),
# a letter beside a digit ("A4", "v2", "Room12B", "3.5kg", "F16") at most 0.67 (hint up to
# 0.0014: the hint does not tell them apart, the ink does)
WORD_NUMBER_HINT = 1e-4
WORD_NUMBER_OF_LINE = 0.85
# a word and a number in a line that reads no space of its own (a table's date cell "19 Nov"
# in Liberation Serif 18-28 px blurred, DejaVu Serif 14-22: read "19Nov", the space's hint
# 0.0017-0.046, under SPACE_P, and no read space to measure against) take a space where the
# gap is at least LONE_GAP of the ink's height, LONE_OF_OTHERS times the widest other gap
# of the line, and the hint at least LONE_HINT (round 45, h3's `wnprobe.py`: 52 words x 8
# DejaVu and Liberation faces x 14-28 px x clean/blurred: the missed spaces 0.50-0.60 of the
# height, 2.0 times the others or more, hints from 0.0017; 3,237 tight letter-digit pairs
# ("Room12B", "iPhone15", "No1", "F16", "3rd") at most 0.33, hints up to 0.024)
LONE_GAP = 0.45
LONE_OF_OTHERS = 1.8
LONE_HINT = 1.5e-3
LONE_PEAK = 10.0  # the hint there over its most between the line's other pairs (0.0045
# against 3.6e-7 in the statement's cell; a hint as high everywhere says nothing)
_DIGITS = frozenset("0123456789")


def _word_number(a: str, b: str) -> bool:
    """Whether a letter and an ASCII digit stand side by side (either way round)."""
    return (a.isalpha() and b in _DIGITS) or (a in _DIGITS and b.isalpha())
# a "1" whose ink is narrower than BAR_1 times the line's ink height is a seven-segment
# display's, one bar at the right of its cell, whose dark left half the recognizer gives a
# space's probability (DSEG7 0.05-0.15; printed "1"s, flag and foot, 0.36-0.65): no space
# goes before it (153 DSEG7 lines: 26 false spaces, none with it)
BAR_1 = 0.25
_CLOSING = frozenset(",.:;!?)]}%'\"")  # no space goes before these (an italic's overhang
_OPENING = frozenset("([{")  # leaves a gap before ":"), nor after these


def _spaced_script(c: str) -> bool:
    """Whether ``c`` is of a script written with spaces between words (not CJK, kana, Hangul
    or fullwidth forms)."""
    if c.isspace():
        return False
    name = unicodedata.name(c, "")
    return not name.startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "FULLWIDTH",
                                "IDEOGRAPHIC"))


def _solid(text: str, best: np.ndarray, alphabet: list[str], crop: np.ndarray):
    """The greedy reading's characters other than spaces as ``(frame, char)`` and the
    indices of those ``text`` puts a space after; None when ``text`` is not the greedy
    reading of ``best`` but for its spaces, or the crop is too small to measure."""
    best = np.asarray(best)
    kept = best != 0  # greedy CTC's frames: not blank, not a repeat of the frame before
    kept[1:] &= best[1:] != best[:-1]
    frames = np.flatnonzero(kept)
    chars = [alphabet[i] if i < len(alphabet) else "" for i in best[frames]]
    solid = [(f, c) for f, c in zip(frames, chars) if c and not c.isspace()]
    if len(solid) < 2 or "".join(c for _, c in solid) != "".join(text.split()) or \
            crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return None
    after, n = set(), 0  # the solid characters the text puts a space after
    for c in text.strip():
        if c.isspace():
            after.add(n - 1)
        else:
            n += len(c)
    return solid, after


# in a line that holds CJK, a run of Latin letters and digits ("净含量：500 mL") is measured
# against its own ink height, not the line's: the Chinese characters stand 0.88-0.95 em
# high, the digits and capitals 0.70-0.75, so a word gap of 0.3 of the Latin run's height
# is 0.23-0.25 of the line's (round 41: the tea label's photo read "500mL", its blank 0.29
# of the line's height, under SPACE_GAP). A run whose own height is under LATIN_OF_LINE of
# the line's (small letters only, "mm") keeps the line's
LATIN_OF_LINE = 0.6


def _latin_heights(bw: np.ndarray, solid, frame_px: float, ink_h: float) -> dict:
    """``{k: height}`` for each pair ``solid[k]``, ``solid[k + 1]`` of spaced-script
    characters inside a run of such characters of a line that holds a CJK character: the
    ink height (rows of ``bw``) over the columns of the run's glyphs (the runs of inked
    columns under its first and last characters' frames, ``frame_px`` crop columns a
    frame). Empty for a line without CJK."""
    if not any(_cjk_char(c[0]) for _, c in solid):
        return {}
    on = np.r_[False, bw.any(0), False]
    runs = np.flatnonzero(on[1:] != on[:-1]).reshape(-1, 2)
    if not len(runs):
        return {}
    centres = (runs[:, 0] + runs[:, 1] - 1) / 2.0

    def run_of(j: int) -> np.ndarray:
        x = (solid[j][0] + 0.5) * frame_px
        inside = np.flatnonzero((runs[:, 0] <= x) & (x < runs[:, 1]))
        return runs[int(inside[0]) if len(inside) else int(np.argmin(np.abs(centres - x)))]

    spaced = [_spaced_script(c[0]) and _spaced_script(c[-1]) for _, c in solid]
    out: dict = {}
    j = 0
    while j < len(solid):
        if not spaced[j]:
            j += 1
            continue
        e = j
        while e + 1 < len(solid) and spaced[e + 1]:
            e += 1
        if e > j:
            a, b = run_of(j)[0], run_of(e)[1]
            rows = np.flatnonzero(bw[:, a:b].any(1)) if b > a else np.array([], int)
            if len(rows) >= 6:
                h = float(rows[-1] - rows[0] + 1)
                if LATIN_OF_LINE * ink_h <= h < ink_h:
                    out.update({k: h for k in range(j, e)})
        j = e + 1
    return out


def _gap_of(crop: np.ndarray, solid, frame_width: float, height: int, latin: bool = False):
    """A function of ``k``: the widest run of empty columns of the crop's ink between the
    frames of ``solid[k]`` and ``solid[k + 1]``, in heights of the line's ink (its
    ``ink_h``, in crop pixels; with ``latin``, a pair inside a Latin run of a line holding
    CJK in heights of the run's ink, :func:`_latin_heights`); None when the crop has too
    little ink to measure."""
    h, w = crop.shape[:2]
    bw = local_ink_mask(crop)
    rows = np.flatnonzero(bw.any(1))
    if len(rows) < 6:
        return None
    ink_h = float(rows[-1] - rows[0] + 1)
    empty = ~bw.any(0)
    scale = w / max(1, min(4096, int(np.ceil(height * w / h))))  # crop columns an input column

    def widest(k: int) -> tuple[int, int]:
        a = max(0, int((solid[k][0] + 0.5) * frame_width * scale))
        b = int((solid[k + 1][0] + 0.5) * frame_width * scale)
        run = most = end = 0
        for x, e in enumerate(empty[a:min(w, b + 1)], a):
            run = run + 1 if e else 0
            if run > most:
                most, end = run, x + 1
        return most, end

    spans = _latin_heights(bw, solid, frame_width * scale, ink_h) if latin else {}

    def gap(k: int) -> float:
        return widest(k)[0] / spans.get(k, ink_h)

    def glyph_after(k: int) -> float:
        """The width of the ink that follows the gap ``gap(k)`` measures, up to the next
        empty column, in heights of the line's ink."""
        most, end = widest(k)
        if not most:
            return 0.0
        x = end
        while x < w and not empty[x]:
            x += 1
        return (x - end) / spans.get(k, ink_h)

    gap.ink_h = ink_h
    gap.glyph_after = glyph_after
    return gap


# full-width digits and Latin letters ("１２月８日", "ＡＢＣ科技") stand in cells a CJK glyph
# wide, their ink in the middle, so the blank on either side looks like a word gap (round
# 34: "１２月８日" read "1 2月8日", "ＡＢＣ科技有限公司" "A B C科技有限公司"). Two such characters
# side by side in a line that holds CJK have their ink centres one em apart, where
# half-width ones stand an advance apart, at most about 0.9 em ("WM")
def _alnum(c: str) -> bool:
    return c.isascii() and c.isalnum() or 0xFF10 <= ord(c) <= 0xFF5A and c.isalnum()


def _wide_form(c: str) -> bool:
    return 0xFF10 <= ord(c) <= 0xFF5A and c.isalnum()


def _cjk_char(c: str) -> bool:
    return not _spaced_script(c) and not c.isspace() and not (0xFF01 <= ord(c) <= 0xFF5E)


def _pitches(text: str, best: np.ndarray, alphabet: list[str], crop: np.ndarray,
             frame_width: float, height: int = 48, edges: bool = False):
    """``{k: pitch}`` for each pair of digits or Latin letters ``solid[k]``, ``solid[k + 1]``
    of a line that holds a CJK character: the distance between the centres of the two
    characters' runs of inked columns, in heights of the line's ink; None for a pair whose
    characters share one run (touching glyphs). Empty when there is no such pair. With
    ``edges``, also the pairs of such a character and a CJK one beside it."""
    found = _solid(text, best, alphabet, crop)
    if found is None:
        return {}
    solid, _ = found
    if not any(_cjk_char(c[0]) for _, c in solid):
        return {}
    pairs = [k for k in range(len(solid) - 1)
             if _alnum(solid[k][1][-1]) and _alnum(solid[k + 1][1][0])]
    if not pairs:
        return {}
    if edges:
        a, b = [c[-1] for _, c in solid[:-1]], [c[0] for _, c in solid[1:]]
        pairs = sorted(set(pairs) | {k for k in range(len(solid) - 1) if
                                     (_alnum(a[k]) and _cjk_char(b[k]))
                                     or (_cjk_char(a[k]) and _alnum(b[k]))})
    h, w = crop.shape[:2]
    bw = local_ink_mask(crop)
    rows = np.flatnonzero(bw.any(1))
    if len(rows) < 6:
        return {}
    ink_h = float(rows[-1] - rows[0] + 1)
    on = np.r_[False, bw.any(0), False]
    runs = np.flatnonzero(on[1:] != on[:-1]).reshape(-1, 2)
    if not len(runs):
        return {}
    scale = w / max(1, min(4096, int(np.ceil(height * w / h))))
    centres = (runs[:, 0] + runs[:, 1] - 1) / 2.0

    def run_of(k: int) -> int:
        x = (solid[k][0] + 0.5) * frame_width * scale
        inside = np.flatnonzero((runs[:, 0] <= x) & (x < runs[:, 1]))
        return int(inside[0]) if len(inside) else int(np.argmin(np.abs(centres - x)))

    out = {}
    for k in pairs:
        a, b = run_of(k), run_of(k + 1)
        out[k] = None if a == b else float(abs(centres[b] - centres[a])) / ink_h
    return out


FULL_PITCH = (0.85, 1.3)
FULL_SPREAD = 0.2
FULL_DROP_RUN = 3


def _full_width_pairs(text: str, best: np.ndarray, alphabet: list[str], crop: np.ndarray,
                      frame_width: float, height: int = 48, least: int = 2,
                      edges: bool = False) -> set[int]:
    """The pairs ``k`` (``solid[k]``, ``solid[k + 1]``, as :func:`_solid` gives them) inside a
    run of at least ``least`` digits or Latin letters that stand in full-width cells: in a
    line holding CJK, every two neighbours' ink centres ``FULL_PITCH`` heights of the line's
    ink apart (one em: 0.94-1.14 over 1,246 rendered full-width pairs, five CJK faces at
    16-44 px; half-width pairs without a space 0.25-0.9) and within ``FULL_SPREAD`` of each
    other. With ``edges``, also the pair of such a run's first or last character and a CJK
    character beside it one em apart."""
    pitches = _pitches(text, best, alphabet, crop, frame_width, height, edges)
    if not pitches:
        return set()
    found = _solid(text, best, alphabet, crop)
    solid = found[0]
    out: set[int] = set()
    both = [k for k in pitches if _alnum(solid[k][1][-1]) and _alnum(solid[k + 1][1][0])]
    keys = sorted(both)
    start = 0
    for i in range(1, len(keys) + 1):
        if i < len(keys) and keys[i] == keys[i - 1] + 1:
            continue
        run, start = keys[start:i], i
        vals = [pitches[k] for k in run]
        if len(run) + 1 < least or any(v is None for v in vals):
            continue
        if not (FULL_PITCH[0] <= min(vals) and max(vals) <= FULL_PITCH[1]
                and max(vals) - min(vals) <= FULL_SPREAD):
            continue
        out.update(run)
        for k in (run[0] - 1, run[-1] + 1) if edges else ():
            v = pitches.get(k)
            if v is not None and FULL_PITCH[0] <= v <= FULL_PITCH[1]:
                out.add(k)
    return out


def missed_spaces(text: str, best: np.ndarray, space_p: np.ndarray | None,
                  alphabet: list[str], crop: np.ndarray, frame_width: float,
                  height: int = 48) -> str | None:
    """``text`` with the spaces put back that the recognizer read as nothing where the
    crop's ink shows a word gap ("line7" for "line 7", "$1,284.50including" for "...
    including"); None when none is missing, or when ``text`` is not the greedy reading of
    ``best`` (each frame's best class, the line's CTC columns) but for its spaces.

    Each character's frame is placed on the crop (``frame_width`` input columns a frame,
    the crop resized to ``height`` rows as :func:`.rec.rec_input` does); between two
    characters of a spaced script (not two of a number's: a display's right-set "1" stands
    as far from its neighbour as a word), the widest run of empty columns of the ink
    (:func:`local_ink_mask`) is a word gap when it is at least ``SPACE_GAP`` times the ink's
    height (in a line holding CJK, a Latin run's own, :func:`_latin_heights`) and
    ``SPACE_OF_LINE`` times the narrowest gap read as a space in the line, or, in a line
    with no space read, where ``space_p`` (the space's probability per frame)
    reached ``SPACE_P`` between the two. Between a word and a number ("customer3875") the
    ink is looked at from a hint of ``WORD_NUMBER_HINT``; under ``SPACE_HINT`` the gap must
    be ``WORD_NUMBER_OF_LINE`` of the line's narrowest read space; in a line with no space
    read, a word and a number under ``SPACE_P`` take one where the gap and the hint stand
    out of the line's (:func:`_lone_word_number`: a date cell's "19Nov")."""
    found = _solid(text, best, alphabet, crop)
    if found is None or space_p is None:
        return None
    solid, after = found
    pairs = range(len(solid) - 1)
    hints = {}  # the pairs that could take a space: the space had SPACE_HINT between them
    for k in pairs:
        a, b = solid[k][1], solid[k + 1][1]
        if k in after or not (_spaced_script(a[-1]) and _spaced_script(b[0])) or \
                b[0] in _CLOSING or a[-1] in _OPENING:
            continue
        numbers = a[-1] in _NUMBERISH and b[0] in _NUMBERISH
        if numbers and ((a[-1] in _INNER and k > 0 and solid[k - 1][1][-1:].isdigit())
                        or "-" in (a[-1], b[0])):
            continue  # a separator inside a number ("1,234", "3.50", "14:30"), a dash (a
            # monospaced "-12-" stands as far from its dashes as a word); a slash only
            # with a word gap on both its sides (below)
        hint = float(np.max(space_p[solid[k][0]:solid[k + 1][0] + 1]))
        floor = NUMBER_P if numbers else \
            WORD_NUMBER_HINT if _word_number(a[-1], b[0]) else SPACE_HINT
        if hint >= floor:
            hints[k] = hint
    if not hints:  # most lines: the ink is not looked at
        return None
    gap = _gap_of(crop, solid, frame_width, height, latin=True)
    if gap is None:
        return None
    if any(_alnum(solid[k][1][-1]) and _alnum(solid[k + 1][1][0]) for k in hints):
        for k in _full_width_pairs(text, best, alphabet, crop, frame_width, height):
            hints.pop(k, None)  # a full-width cell's blank: no word gap

    # the line's word gaps: spaces read between two characters of spaced scripts (one next
    # to a Chinese character is often read in a narrow gap)
    read = [gap(k) for k in pairs if k in after and _spaced_script(solid[k][1][-1])
            and _spaced_script(solid[k + 1][1][0])]
    least = min(read) if read else None
    put = set()
    for k, hint in hints.items():
        g = gap(k)
        if g < SPACE_GAP:
            continue
        if solid[k][1][-1] in _NUMBERISH and solid[k + 1][1][0] in _NUMBERISH and \
                gap.glyph_after(k) < BAR_1 and _one_next(solid, k):
            continue  # a seven-segment "1": a lone bar at the right of its cell (the frames
            # of a "1" and the digit after it can hold the gap before the next "1")
        if least is None and hint < SPACE_P and _word_number(solid[k][1][-1], solid[k + 1][1][0]):
            if _lone_word_number(gap, k, solid, space_p):
                put.add(k)  # a date cell's "19 Nov": no read space to measure against
        elif hint < SPACE_HINT:  # a word and a number the recognizer hardly spaced
            if least is not None and g >= WORD_NUMBER_OF_LINE * least:
                put.add(k)
        elif (g >= SPACE_OF_LINE * least) if least is not None else hint >= SPACE_P:
            put.add(k)
    put -= {k for k in put if not _both_sides(solid, k, put | set(after))}
    if not put:
        return None
    return "".join(c + (" " if k in put or k in after else "")
                   for k, (_, c) in enumerate(solid)).strip()


def _one_next(solid, k: int) -> bool:
    """Whether a "1" is read within the two characters after the gap ``k``: only then is
    a narrow stroke after the gap a seven-segment "1"'s bar. A "0"'s left stroke is as
    narrow where its counter stands empty (DejaVu Sans Mono Bold's dotted zero: a barcode's
    "4 006381" read "4006381" on a phone photo, the gap 0.39 of the ink's height and the
    space hinted 0.17; round 48)."""
    return any(solid[j][1][:1] == "1" for j in (k + 1, k + 2) if j < len(solid))


def _lone_word_number(gap, k: int, solid, space_p: np.ndarray) -> bool:
    """Whether the pair ``k`` of a word and a number in a line that reads no space takes
    one: its gap at least ``LONE_GAP`` and ``LONE_OF_OTHERS`` times the line's widest other
    gap, the space's hint there at least ``LONE_HINT`` and ``LONE_PEAK`` times its most
    between any other pair (the recognizer hesitated at this gap alone)."""
    n = len(solid)
    if n < 3:
        return False
    hint = [float(np.max(space_p[solid[i][0]:solid[i + 1][0] + 1])) for i in range(n - 1)]
    others = [i for i in range(n - 1) if i != k]
    if hint[k] < LONE_HINT or hint[k] < LONE_PEAK * max(hint[i] for i in others):
        return False
    g = gap(k)
    return g >= LONE_GAP and g >= LONE_OF_OTHERS * max(gap(i) for i in others)


def _both_sides(solid, k: int, spaced: set) -> bool:
    """Whether a space put between ``solid[k]`` and ``solid[k + 1]`` may stay: unless a
    slash between numbers stands on one side of it, always; else where the slash's other
    side is spaced too (a slide's page "1 / 24", round 41: the recognizer reads "1/24"; a
    monospaced "2/3" or "14/11" leaves a blank on one side of its slash at most)."""
    a, b = solid[k][1], solid[k + 1][1]
    if b[:1] == "/" and a[-1:] in _NUMBERISH and len(b) == 1:
        return k + 1 in spaced
    if a[-1:] == "/" and b[:1] in _NUMBERISH and len(a) == 1:
        return k - 1 in spaced
    return True


# two Chinese characters of one line stand apart as fields (an ID card's "民族  汉", a
# form's label and its value) when the empty columns between them are at least CJK_GAP
# times the line's ink height: the recognizer, which learned Chinese without spaces, reads
# such a gap as nothing at 0.5-1.5 em (Noto Sans CJK: "民族汉" even at 1.5 em). Measured on
# 2,089 pairs of ordinary lines (words drawn from wordfreq's Chinese list; Noto Sans and
# Serif CJK, WenQuanYi Zen Hei, AR PL UKai; 16, 22 and 30 px; margins of 0.15-0.45 em):
# at most 0.50 (UKai at 16 px; 0.36 at the 99th percentile); fields 0.5 em apart measure
# 0.53-0.84, 0.75 em apart 0.80-1.16. A Chinese character beside an ASCII digit or letter
# (the recognizer reads most such gaps itself: "出生 1990年"; not "出生1990年" in UKai at
# 16 px): 504 pairs of 20 ordinary mixed lines ("11月11日", "型号A3纸张") at most 0.54,
# a tabular "1" in its cell
CJK_GAP = 0.7
# a line holding kana is Japanese, which sets a space between a word of kana or kanji and a
# Latin word or a number ("ノート A5", "USB メモリ 32GB"); the recognizer reads most of
# those as nothing. Round 43 (h12, `jgap.py`: 16 such lines in Noto Sans, Serif and Sans
# Bold CJK JP at 16, 22 and 30 px, with and without their spaces): the pairs set apart by
# a space measure 0.25-0.75 of the ink's height (44 of 65 at least 0.45), the pairs set
# tight at most 0.33 ("7月1日", "合計3点"; 0.42 in a misread "USB メモリ" at 16 px)
KANA_GAP = 0.45
# a line of kanji or hanzi without kana may still be Japanese ("2026年12月7日 14:32",
# "価格 1,280円") or Chinese set with spaces; its own face sets the scale, so a Chinese
# character beside an ASCII letter or digit takes a space only where the ink's gap is at
# least HAN_GAP of the ink's height AND at least HAN_OF_LINE times every other such pair's
# gap of the line (one pair stands out). Round 43 (h17, `/work/round43/h17s/probe.py`: 20
# kana-less lines, Noto Sans CJK JP/SC, Noto Serif CJK JP/SC, AR PL UKai, 16/22/30 px,
# clean and blurred, 600 reads): spaced pairs 0.19-1.0 and tight ones up to 0.54 (UKai's
# "1" in its cell: "11月11日"), so no gap alone separates them; the tight pairs of one line
# stand within 1.5 times each other's gap (UKai "11月11日" at 16 px: 1.3-1.5)
HAN_GAP, HAN_OF_LINE = 0.4, 1.6
# a narrower space stands out further: a pair at least HAN_GAP_NARROW of the ink's height
# and more than HAN_OF_LINE_NARROW times every other such pair's takes one too. Round 44
# (h3, h17's 600 reads, `/work/round44/h3s/sim7.py`, `q_all.out`): "価格 1,280円" in Noto
# Sans, whose space is 0.29-0.37 (its "0円" 0-0.12), 6 more lines right, 6 more in Serif,
# none made wrong (472/600 exact, 460 with the first rule alone); at twice exactly a
# blurred 16-px "共 3 件" (0.375 against 0.1875) is read "共 3件"; 0.30 puts UKai's "1" in
# its cell apart ("价格 128元", "第 11届": 0.30-0.33 and over twice the line's others)
HAN_GAP_NARROW, HAN_OF_LINE_NARROW = 0.35, 2.05
# a kana-less line's one Chinese character beside an ASCII letter (a label's name and its
# English: "有机绿茶 Organic Green Tea") takes a space where the ink's gap is at least
# HAN_WORD_GAP of its height. Round 44 (h3, `/work/round44/h3s/latgap2.py`: 30 tight
# lines such as "iPhone手机", "Wi-Fi密码", "HDMI线", "AI芯片", "编号A1024" and 13 spaced ones
# in Noto Sans/Serif CJK JP/SC, WenQuanYi Zen Hei, AR PL UKai at 16/22/30 px, clean and
# blurred): 1,116 tight letter pairs at most 0.36 (UKai's "i" of "Wi-Fi密码"), spaced ones
# 0.21-1.2; the label's phone photo 0.63, read without its space (a digit beside a
# character is left out: UKai's "1" in its cell stands 0.54 apart)
HAN_WORD_GAP = 0.45


def _stands_out(gap: float, others: float) -> bool:
    """Whether a pair's ``gap`` (in ink heights) is a space beside the widest of its line's
    other pairs, ``others``: wide and well out, or narrower and further out."""
    return (gap >= HAN_GAP and gap >= HAN_OF_LINE * others) or \
        (gap >= HAN_GAP_NARROW and gap >= HAN_OF_LINE_NARROW * others)


def _ideograph(c: str) -> bool:
    return "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf"


def _kana(c: str) -> bool:
    return "\u3041" <= c <= "\u30ff" and c not in "\u30fb"  # not the middle dot "・"


def _kana_pair(a: str, b: str) -> bool:
    """A kana or kanji beside an ASCII letter or digit (either order)."""
    return any((_ideograph(x) or _kana(x)) and y.isascii() and y.isalnum()
               for x, y in ((a, b), (b, a)))


def _letter_pair(a: str, b: str) -> bool:
    """A Chinese character beside an ASCII letter (either order)."""
    return any(_ideograph(x) and y.isascii() and y.isalpha() for x, y in ((a, b), (b, a)))


def _field_pair(a: str, b: str) -> bool:
    """Two characters a field's gap may stand between: Chinese ones, or one Chinese and an
    ASCII letter or digit."""
    return (_ideograph(a) or _ideograph(b)) and \
        all(_ideograph(c) or (c.isascii() and c.isalnum()) for c in (a, b))


def cjk_spaces(text: str, best: np.ndarray, alphabet: list[str], crop: np.ndarray,
               frame_width: float, height: int = 48) -> str | None:
    """``text`` with a space between two Chinese characters (or one and an ASCII letter or
    digit) that the crop's ink shows set apart by a field's gap, at least ``CJK_GAP`` times
    the ink's height ("民族汉" for an ID card's "民族  汉"), and an ideographic space (U+3000)
    read inside the line as an ordinary one; None when nothing changes. Only pairs whose
    frames are at least a crop's height apart (``height`` input columns: an ordinary
    character's advance is under 0.8 of it) have their ink looked at. In a line holding
    kana (Japanese), a kana or kanji beside an ASCII letter or digit takes a space where
    the ink's gap is at least ``KANA_GAP`` of its height ("ノートA5" for "ノート A5"); in a
    line without kana, where that gap is at least ``HAN_GAP`` and ``HAN_OF_LINE`` times
    every other such pair's of the line ("2026年12月7日14:32" for "... 14:32"), or narrower
    and further out (``HAN_GAP_NARROW``, ``HAN_OF_LINE_NARROW``: "価格1,280円"); a line's one
    such pair of a character and a letter where the gap is at least ``HAN_WORD_GAP``
    ("有机绿茶Organic Green Tea")."""
    plain = text.replace("\u3000", " ")
    found = _solid(plain, best, alphabet, crop)
    if found is None:
        return plain if plain != text else None
    solid, after = found
    wide = [k for k in range(len(solid) - 1)
            if k not in after and _field_pair(solid[k][1][-1], solid[k + 1][1][0])
            and (solid[k + 1][0] - solid[k][0]) * frame_width >= height]
    japanese = any(_kana(c) for _, c in solid)
    spaced = [k for k in range(len(solid) - 1) if japanese and k not in after
              and _kana_pair(solid[k][1][-1], solid[k + 1][1][0])]
    mixed = [] if japanese else [k for k in range(len(solid) - 1)
                                 if _kana_pair(solid[k][1][-1], solid[k + 1][1][0])]
    word = [k for k in mixed if len(mixed) == 1 and k not in after
            and _letter_pair(solid[k][1][-1], solid[k + 1][1][0])]
    mixed = mixed if len(mixed) > 1 else []
    gap = _gap_of(crop, solid, frame_width, height) if wide or spaced or mixed or word \
        else None
    put = {k for k in wide if gap(k) >= CJK_GAP} if gap is not None else set()
    if gap is not None:
        put |= {k for k in spaced if gap(k) >= KANA_GAP}
        g = {k: gap(k) for k in mixed}
        put |= {k for k in mixed if k not in after and _stands_out(
            g[k], max(g[j] for j in mixed if j != k))}
        put |= {k for k in word if gap(k) >= HAN_WORD_GAP}
    if not put:
        return plain if plain != text else None
    return "".join(c + (" " if k in put or k in after else "")
                   for k, (_, c) in enumerate(solid)).strip()


# a space read after a number's separator ("$3, 450,000.00" in Liberation Mono, whose comma
# stands at the left of its cell) is dropped when its gap is at most SEP_SPACE times the
# widest gap after a separator the same line reads without one, plus a pixel of the crop
# (at 11 px: 3 against 4 px), and only where that reference gap is at least
# SEP_CELL of the ink's height: the separator stands in a digit's cell of a monospaced face
# (0.3-0.45; a proportional face's 0.1-0.15, where a space proper, 0.3, came within the
# slack: "Lot 7, 450,000" lost its space in 5 of 576 such gaps over nine faces)
SEP_SPACE, SEP_CELL = 1.3, 0.25
_SPACED_SEP = re.compile(r"\d[,.] \d")


def separator_spaces(text: str, best: np.ndarray, alphabet: list[str], crop: np.ndarray,
                     frame_width: float, height: int = 48) -> str | None:
    """``text`` without the spaces read after a thousands separator or decimal mark inside
    a number where the ink shows none: a monospaced face sets "," and "." at the left of a
    digit's cell, and the recognizer reads the rest of the cell as a space ("$3, 450,000.00",
    "987,654, 321", "2.500, 00"). Only where the same line reads another separator between
    digits without a space (the reference, at least ``SEP_CELL`` of the ink's height: a
    monospaced cell), the gap after the spaced one is at most ``SEP_SPACE`` times the
    widest such reference gap plus a pixel, and the digits
    after it are a group of two or three (a list, "1.5, 2.5" or "3, 4, 5", keeps its
    spaces); None otherwise."""
    if not _SPACED_SEP.search(text):
        return None
    found = _solid(text, best, alphabet, crop)
    if found is None:
        return None
    solid, after = found
    chars = [c for _, c in solid]
    seps = [k for k in range(1, len(solid) - 1)
            if chars[k] in ",." and chars[k - 1][-1:].isdigit() and chars[k + 1][:1].isdigit()]
    spaced = [k for k in seps if k in after and _group_after(chars, k + 1)]
    tight = [k for k in seps if k not in after]
    if not spaced or not tight:
        return None
    gap = _gap_of(crop, solid, frame_width, height)
    if gap is None:
        return None
    ref = max(gap(k) for k in tight)
    if ref < SEP_CELL:
        return None
    drop = {k for k in spaced if gap(k) <= SEP_SPACE * ref + 1.0 / gap.ink_h}
    if not drop:
        return None
    return "".join(c + (" " if k in after and k not in drop else "")
                   for k, c in enumerate(chars)).strip()


def _group_after(chars: list[str], k: int) -> bool:
    """Whether ``chars[k:]`` begins with a group of two or three digits that the number's
    next separator or its end follows."""
    n = 0
    while k + n < len(chars) and chars[k + n].isdigit():
        n += 1
    return n in (2, 3) and (k + n == len(chars) or not chars[k + n].isalnum())


# a space the recognizer reads inside a word under blur ("Ret eipt" for "Receipt"; RapidOCR
# reads "Rec eipt"): between two Latin letters whose case does not start a word, the crop's
# ink shows a gap under INNER_GAP of the ink's height and under INNER_OF_WORD of the
# narrowest of the line's other spaces, of which there are at least two about as wide as
# each other (within WORD_SPREAD: the line's ink resolves its word gaps, and none of them
# is a column's or a tab's; under heavy blur every gap closes, and the recognizer's spaces
# are the only word gaps left), and the recognizer read it less surely than SURE_SPACE (an
# italic's word gap can measure as narrow: "it jilt" in Liberation Serif Bold Italic at 18
# px, 0.12 against 0.41 and 0.35, read at 0.9994). "Ret eipt No. 90417": 0.14 against 0.43
# and 0.43, read at 0.906.
SURE_SPACE = 0.98
INNER_GAP = 0.2
INNER_OF_WORD = 0.5
WORD_SPREAD = 1.6


def _latin_letter(c: str) -> bool:
    return c.isalpha() and ord(c) < 0x250


def _bracket_space(chars: list[str], k: int) -> bool:
    """Whether a space read between ``chars[k]`` and ``chars[k + 1]`` is the blank of a CJK
    line's full-width bracket or colon, which stands at the far side of its cell and leaves
    half an em blank beside it ("备注 (无)", "会议室 （三楼)", "电话 ：", "Tel： 021" for
    "备注（无）", "会议室（三楼）", "电话：", "Tel：021"; CJK print puts no space there): an opening
    bracket after a CJK character that a CJK character follows, or one read full-width; a
    colon after a CJK character; a space after a colon or a closing bracket read
    full-width. A half-width bracket round Latin print keeps the space that sets it off
    ("会议室 (Room 3)"), and so does a half-width colon ("产地: 澳大利亚", as packaging prints
    it)."""
    a, b = chars[k][-1], chars[k + 1][0]
    nxt = chars[k + 2][0] if k + 2 < len(chars) else " "
    if b == "\uff08" or b == "(" and _cjk_char(nxt):
        return _cjk_char(a)
    if b in (":", "\uff1a"):
        return _cjk_char(a)
    return a in ("\uff1a", "\uff09")


def spurious_spaces(text: str, best: np.ndarray, space_p: np.ndarray | None,
                    alphabet: list[str], crop: np.ndarray, frame_width: float,
                    height: int = 48) -> str | None:
    """``text`` without the spaces the recognizer read inside a word where the crop's ink
    shows no word gap ("Ret eipt No. 90417" -> "Reteipt No. 90417"); None when none is
    dropped, or when ``text`` is not the greedy reading of ``best`` but for its spaces.

    A space between two Latin letters (not a lower-case letter before a capital) goes
    where the widest run of empty ink columns between the two characters' frames is under
    ``INNER_GAP`` times the ink's height and ``INNER_OF_WORD`` times the narrowest gap of
    the line's other spaces between characters of spaced scripts, at least two of them,
    within ``WORD_SPREAD`` of each other, and ``space_p`` (the space's probability per
    frame) stayed under ``SURE_SPACE`` between the two characters."""
    found = None if space_p is None else _solid(text, best, alphabet, crop)
    if found is None:
        return None
    solid, after = found
    after = {k for k in after if 0 <= k < len(solid) - 1}
    chars = [c for _, c in solid]
    bracketed = {k for k in after if _bracket_space(chars, k)}
    if bracketed:  # the blank a full-width bracket or colon holds in its own cell
        after -= bracketed
        text = "".join(c + (" " if k in after else "") for k, c in enumerate(chars)).strip()
        return spurious_spaces(text, best, space_p, alphabet, crop, frame_width,
                               height) or text
    full = {k for k in after if _alnum(solid[k][1][-1]) or _alnum(solid[k + 1][1][0])}
    if full:  # spaces read between full-width digits or letters ("A BC科技" for "ＡＢＣ科技"),
        # or between such a run and a CJK character ("ABC 科技"); a run of two only where
        # the recognizer read it full-width itself ("１ ２月")
        runs = _full_width_pairs(text, best, alphabet, crop, frame_width, height,
                                 least=FULL_DROP_RUN, edges=True)
        pairs = _full_width_pairs(text, best, alphabet, crop, frame_width, height, edges=True)
        wide = {k for k in pairs if _wide_form(solid[k][1][-1]) or _wide_form(solid[k + 1][1][0])}
        full &= runs | wide
        if full:
            after -= full
            text = "".join(c + (" " if k in after else "")
                           for k, (_, c) in enumerate(solid)).strip()
            return spurious_spaces(text, best, space_p, alphabet, crop, frame_width,
                                   height) or text
    if len(after) < 3:
        return None
    cands = [k for k in sorted(after)
             if _latin_letter(solid[k][1][-1]) and _latin_letter(solid[k + 1][1][0])
             and not (solid[k][1][-1].islower() and solid[k + 1][1][0].isupper())
             and float(np.max(space_p[solid[k][0]:solid[k + 1][0] + 1])) < SURE_SPACE]
    if not cands:  # most lines: the ink is not looked at
        return None
    gap = _gap_of(crop, solid, frame_width, height)
    if gap is None:
        return None
    gaps = {k: gap(k) for k in after if _spaced_script(solid[k][1][-1])
            and _spaced_script(solid[k + 1][1][0])}
    drop = set()
    for k in cands:
        others = [g for j, g in gaps.items() if j != k]
        if len(others) < 2 or max(others) > WORD_SPREAD * min(others):
            continue
        if gaps[k] < INNER_GAP and gaps[k] < INNER_OF_WORD * min(others):
            drop.add(k)
    if not drop:
        return None
    return "".join(c + (" " if k in after and k not in drop else "")
                   for k, (_, c) in enumerate(solid)).strip()


_ALNUM_RUN = re.compile(r"[0-9A-Za-z\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]{2,}")
_MIXED_PAIR = re.compile("[(\uff08]([^()\uff08\uff09]*)[)\uff09]")


def one_width(text: str) -> str:
    """``text`` with each run of digits and Latin letters that the recognizer read partly
    full-width and partly half-width ("２０24年", "1２月") written full-width throughout, in a
    line holding CJK (elsewhere :func:`.rec.half_width` makes them ASCII). Print never mixes
    the two widths inside one number or word, and over 384 readings of rendered CJK lines
    (four faces, 18-40 px, with detection and without) 8 of full-width print mixed them
    inside a run, none of half-width print: the recognizer, whose dictionary holds
    both forms, reads a full-width run as ASCII at small sizes and partly as full-width at
    large ones. Not NFKC: as PaddleOCR, the characters read are kept (a Chinese line's
    "：", "（" stay), only a run's own disagreement is settled. A pair of brackets read one
    full-width and one half-width ("李四(经理）", "海淀区（东门)": 14 of 120 rendered CJK lines with
    full-width brackets, four faces, 18-40 px, round 36) is written full-width both.

    >>> one_width("２０24年１2月３日"), one_width("2024年12月"), one_width("ＡＢ12")
    ('２０２４年１２月３日', '2024年12月', 'ＡＢ12')
    >>> one_width("李四(经理）"), one_width("备注(无)")
    ('李四（经理）', '备注(无)')
    """
    if not text or not any(0xFF08 <= ord(c) <= 0xFF5A for c in text) or \
            not any(_cjk_char(c) for c in text):
        return text
    text = _MIXED_PAIR.sub(lambda m: "\uff08" + m.group(1) + "\uff09"
                           if (m.group(0)[0] == "(") != (m.group(0)[-1] == ")")
                           else m.group(0), text)

    def fold(m: re.Match) -> str:
        run = m.group(0)
        if all(c.isascii() for c in run) or not any(c.isascii() for c in run):
            return run
        return "".join(chr(ord(c) + 0xFEE0) if c.isascii() else c for c in run)

    return _ALNUM_RUN.sub(fold, text)
