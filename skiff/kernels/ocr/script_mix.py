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

import re

import numpy as np

__all__ = ["latin_letters", "LATIN_P"]

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
