"""A word the page prints twice, read once with a doubled letter lost.

The recognizer reads a line's characters off CTC columns, where two same letters need a
blank between them: in small or blurred print that blank is often lost and "ll" comes back
"l" ("amoxicilin" under the box's title "Amoxicillin": ``bench_ocr_user47``'s medicine box
as a phone photo, round 47). It never invents a doubled letter the print lacks. A reader
who has just read the word in the title spells it the same further down:
:func:`doubled_letters` puts the letter back where the same page reads the word with it.
"""

from __future__ import annotations

import re

__all__ = ["doubled_letters", "LEAST_LETTERS"]

# only words of this many letters or more (as read, the doubled letter lost) are looked at:
# short words differ by a doubled letter often ("Ann", "An"; "tool", "tol")
LEAST_LETTERS = 6
_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")  # Latin letters (a CJK line has no doubled misreads)


def _undoubled(word: str) -> dict[str, int]:
    """``word`` (lower case) with each of its doubled letters read once: the shortened
    word mapped to the place of the letter that was lost."""
    return {word[:k] + word[k + 1:]: k for k in range(1, len(word)) if word[k] == word[k - 1]}


def doubled_letters(texts: list[str]) -> list[str]:
    """``texts`` (a page's lines) with each word of :data:`LEAST_LETTERS` letters or more
    that another word of the page equals but for one doubled letter read with that letter
    doubled again (its case as read); a word that the page reads both ways in more than one
    doubled form is left as it is."""
    words = {m.group().lower() for t in texts for m in _WORD.finditer(t)
             if len(m.group()) > LEAST_LETTERS}
    fixes: dict[str, set[int]] = {}
    for w in words:
        for short, k in _undoubled(w).items():
            if len(short) >= LEAST_LETTERS:
                fixes.setdefault(short, set()).add(k)
    if not fixes:
        return list(texts)

    def fix(m: re.Match) -> str:
        word = m.group()
        places = fixes.get(word.lower())
        if not places or len(places) != 1:
            return word
        (k,) = places
        return word[:k] + word[k - 1] + word[k:]

    return [_WORD.sub(fix, t) for t in texts]
