"""A Greek or Cyrillic letter read inside a Latin word is put back as the Latin letter or
digit the recognizer gave most probability there.

The default recognizer holds Latin, Greek and Cyrillic. Under blur, noise and JPEG at 13-17
px it reads a Latin word's letter now and then as a like-shaped one of another script:
"Tiρ 2.00" for "Tip 2.00", "3vμ" for "Soup", "a7mρ" for "ending". Print mixes scripts
within a word almost never; a unit's "μm", "5μm" or a Greek word beside Latin ones keeps its
letters where the recognizer is sure of them (a Latin runner-up under ``LATIN_P``) or where
the word is mostly of that script.

>>> a = ["", "T", "i", "p", "\\u03c1"]
>>> p = np.full((4, 5), 0.001); p[0, 1] = p[1, 2] = 0.9; p[2, 4] = 0.6; p[2, 3] = 0.3
>>> latin_letters("Ti\\u03c1", p, a)
'Tip'
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np

__all__ = ["latin_letters", "LATIN_P", "unread_ink", "user_stacklevel", "greek_warning"]

# the Latin runner-up's probability in the frame that a foreign letter takes at least this:
# the recognizer hesitated between the two shapes
LATIN_P = 0.05
_FOREIGN = re.compile(r"[\u0370-\u03FF\u0400-\u04FF]")
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")
_CJK = re.compile(r"[\u2E80-\u9FFF\uAC00-\uD7AF\uF900-\uFAFF]")


def latin_letters(text: str, probs, alphabet: list[str]) -> str:
    """``text`` (greedy CTC of ``probs``, (T, C), over ``alphabet``) with each Greek or
    Cyrillic letter that stands in a word of mostly Latin letters and digits replaced by
    the most probable ASCII letter or digit of its frame, where that one has at least
    ``LATIN_P``; ``text`` as it is when it holds CJK, no such letter, or its characters
    are not the greedy path's (a line changed by the word pass)."""
    if not text or not _FOREIGN.search(text) or _CJK.search(text):
        return text
    probs = probs.get() if hasattr(probs, "get") else np.asarray(probs)
    best = probs.argmax(1)
    keep = best != 0
    keep[1:] &= best[1:] != best[:-1]
    frames = np.flatnonzero(keep)
    chars = [alphabet[i] if i < len(alphabet) else "" for i in best[frames]]
    solid = [(c, f) for c, f in zip(chars, frames, strict=True) if c.strip()]
    if "".join(c for c, _ in solid) != "".join(text.split()):
        return text
    latin = [k for k, a in enumerate(alphabet) if len(a) == 1 and _ASCII_ALNUM.fullmatch(a)]
    if not latin:
        return text
    frame_of = iter(f for _, f in solid)
    out = list(text)
    at = [(k, next(frame_of)) for k, c in enumerate(text) if c.strip()]
    for word in re.finditer(r"\S+", text):
        inside = [(k, f) for k, f in at if word.start() <= k < word.end()]
        foreign = [(k, f) for k, f in inside if _FOREIGN.match(text[k])]
        own = sum(1 for k, _ in inside if _ASCII_ALNUM.match(text[k]))
        if not foreign or own <= len(foreign):
            continue
        for k, f in foreign:
            j = latin[int(np.argmax(probs[f, latin]))]
            if probs[f, j] >= LATIN_P:
                out[k] = alphabet[j]
    return "".join(out)


# a line of a script the recognizer does not hold (Hangul, Cyrillic, Arabic, Hebrew with
# the default set) is read as nothing where its letters stand, or as a few Latin or CJK
# shapes: "Привет, мир! Цена 120 руб." -> ", !  120" at 0.92-0.98, "영업시간 안내" -> "Hh IY".
# Its ink then stands far wider than what was read: the columns where the ink spans at
# least TALL of the line's ink height (glyph bodies; not a leader's dots, an underline or a
# rule) against the width the reading's characters take (CJK, kana and full-width forms
# WIDE_EM of the ink height, other letters and digits NARROW_EM, marks MARK_EM, spaces none)
TALL = 0.4
WIDE_EM, NARROW_EM, MARK_EM = 0.9, 0.45, 0.1
FILL_GAP = 0.3
UNREAD_INK = 2.5  # tall ink columns per column the reading accounts for, at least
UNREAD_MIN_EM = 2.0  # and at least this many ink heights of tall ink unaccounted for


def _wide(c: str) -> bool:
    o = ord(c)
    return 0x2E80 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF or \
        0xFF01 <= o <= 0xFF5E


_SMALL_MARKS = frozenset(".,:;'\"`\u00b7-_~")


def _ems(text: str) -> float:
    return sum(0.0 if c.isspace() else WIDE_EM if _wide(c) else
               MARK_EM if c in _SMALL_MARKS else NARROW_EM for c in text)


SOLID = 0.8  # the share of a tall ink box inked past which it is a bar, not print


def _solid(crop: np.ndarray) -> bool:
    """Whether the crop's dark part (against its own light and dark levels; a local ink mask
    hollows a thick bar out) fills more than :data:`SOLID` of its bounding box."""
    grey = crop.mean(2) if crop.ndim == 3 else crop.astype(np.float64)
    lo, hi = np.percentile(grey, (5, 95))
    if hi - lo < 1:
        return False
    dark = grey < (lo + hi) / 2
    rows, cols = np.flatnonzero(dark.any(1)), np.flatnonzero(dark.any(0))
    if not len(rows):
        return False
    box = dark[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    return float(box.mean()) > SOLID


def unread_ink(text: str, crop: np.ndarray) -> float:
    """How many times wider the line's tall ink is than the characters of ``text`` account
    for (0.0 where it is not, or the crop is too small to tell): at least ``UNREAD_INK``,
    with ``UNREAD_MIN_EM`` ink heights left over, is print the recognizer did not read (a
    script its dictionary lacks)."""
    from .spacing import local_ink_mask

    if crop.ndim < 2 or min(crop.shape[:2]) < 8:
        return 0.0
    # the ink is at least 0.4 of the crop's height: a line too narrow for its reading
    # even so is not looked at (most lines)
    if crop.shape[1] < UNREAD_INK * 0.4 * crop.shape[0] * _ems(text):
        return 0.0
    bw = local_ink_mask(crop).astype(bool)
    rows = np.flatnonzero(bw.any(1))
    if len(rows) < 6:
        return 0.0
    ink_h = float(rows[-1] - rows[0] + 1)
    span = np.zeros(bw.shape[1])
    cols = np.flatnonzero(bw.any(0))
    if not len(cols):
        return 0.0
    sub = bw[:, cols]
    top = np.argmax(sub, 0)
    bottom = sub.shape[0] - 1 - np.argmax(sub[::-1], 0)
    span[cols] = (bottom - top + 1) / ink_h
    on = np.flatnonzero(span >= TALL)
    if not len(on):
        return 0.0
    # a solid bar (a redaction, a heavy rule, a progress bar read "___") is no print: a
    # script's strokes leave most of their box blank (round 36: a 6-px bar "222x wider")
    if _solid(crop):
        return 0.0
    # the glyphs' extent: tall columns with the gaps inside a word (under FILL_GAP of the
    # ink height) counted too, as the characters' widths count their own blank
    steps = np.diff(on)
    tall = float(len(on) + steps[(steps > 1) & (steps <= FILL_GAP * ink_h)].sum()
                 - ((steps > 1) & (steps <= FILL_GAP * ink_h)).sum())
    want = ink_h * _ems(text)
    ratio = tall / max(want, 1.0)
    if tall - want < UNREAD_MIN_EM * ink_h or ratio < UNREAD_INK:
        return 0.0
    return ratio


_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` made by the caller of this function that
    names the first frame outside the skiff package: the user's ``skiff.ocr(...)`` line,
    however deep the pipeline called it (Python 3.11 has no ``skip_file_prefixes``). A
    stack wholly inside skiff (a worker thread's) gives its outermost frame's level."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and \
            os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    return level


# modern Greek's accented letters and final sigma: none is in a shipped dictionary (round 36:
# `ch` holds 76 Greek letters, `ch-tiny` 50, `ch-v4` 10, no tonos, no dialytika, no "ς"),
# and the recognizer drops them ("Ελληνικά" -> "Eλληνικ", "Καλημέρα σας" -> "Kαλημρα σα")
GREEK_MARKED = "\u03ac\u03ad\u03ae\u03af\u03cc\u03cd\u03ce\u03c2\u03ca\u03cb\u0390\u03b0"
# a lower-case Greek word: three Greek small letters in a row (a unit's "μm", a lone "α" or
# a formula's "αβ" is none; capitals carry no accents in Greek print)
_GREEK_WORD = re.compile("[\u03b1-\u03c9]{3}")


def greek_warning(label, text: str, alphabet, model: str) -> str:
    """The line said where ``text`` (a line read) holds a lower-case Greek word and the
    recognizer's ``alphabet`` lacks letters of :data:`GREEK_MARKED`, which such print
    most likely held and the reading dropped; "" elsewhere."""
    if not _GREEK_WORD.search(text):
        return ""
    held = set(alphabet)
    missing = "".join(c for c in GREEK_MARKED if c not in held)
    if not missing:
        return ""
    shown = text if len(text) <= 40 else text[:37] + "..."
    return (f"{label}: the line read {shown!r} is Greek, and {model!r}'s dictionary holds "
            f"no {' '.join(missing)}: accented letters and the final sigma are dropped "
            "from the reading; %train ocr-rec adds them from labelled crops")
