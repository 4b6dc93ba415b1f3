"""Spaces in a line's reading that its pixels contradict.

The recognizer reads a gap as a space by its width alone. Two kinds of lines put spaces
where a reader sees none, and the crop's ink, cut into glyphs by its empty columns, tells
them apart from ordinary spacing:

* :func:`cell_spaces`: a seven-segment display's right-set "1" ("635 143" for "635143");
* :func:`letter_spaces`: letter-spaced capitals on signs and headings ("O P E N  D A I L Y"
  for "OPEN DAILY"), where the gaps between words are wider than those between letters.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

import numpy as np

__all__ = ["ink_mask", "glyph_runs", "cell_spaces", "letter_spaces"]


def ink_mask(crop: np.ndarray) -> np.ndarray:
    """The crop's ink as a 0/1 uint8 mask: Otsu's threshold of its grey, the lesser side."""
    import cv2

    grey = crop.mean(2) if crop.ndim == 3 else crop
    _, bw = cv2.threshold(np.ascontiguousarray(grey, np.uint8), 0, 1,
                          cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    return 1 - bw if bw.mean() > 0.5 else bw


def glyph_runs(crop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The crop's ink cut into glyphs by its empty columns: ``(edges, heights)``, the
    ``[start, end)`` columns of each run of inked columns and the height of its ink."""
    bw = ink_mask(crop)
    on = np.r_[False, bw.any(0), False]
    edges = np.flatnonzero(on[1:] != on[:-1]).reshape(-1, 2)
    rows = [np.flatnonzero(bw[:, a:b].any(1)) for a, b in edges]
    return edges, np.array([r[-1] - r[0] + 1 for r in rows], float)


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
    steps = steps[[":" not in text[a:b] for a, b in itertools.pairwise(at)]]
    if not len(steps):
        return text
    pitch = float(np.median(steps))
    widest = float((full[:, 1] - full[:, 0]).max())
    if not 0 < pitch <= 1.45 * widest or np.abs(steps - pitch).max() > 0.2 * pitch:
        return text  # off the pitch, or cells wider than a digit and its gap: spaced digits
    return text.replace(" ", "")


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
