"""What text usually says: English words and Chinese character pairs, for reading unsure lines.

A recognizer reading blurred 13-15 px print is often torn between two characters ("现金"
or "理金", "Coffee" or "Cattee"); a person settles it by knowing the words. This module holds
that knowledge, from the word-frequency lists of the ``wordfreq`` package (Apache-2.0 code,
CC-BY-SA data; subtitles, Wikipedia, news, web text): nothing is downloaded.

* ``Lexicon.pair_bonus(a, b)``: how much more likely Chinese character ``b`` is after ``a``
  than anywhere, as a log ratio (pointwise mutual information) from the character pairs
  inside the ``PAIR_WORDS`` most frequent Chinese words, ``a = "^"`` for a line's or a run's
  first character. Interpolated with ``b``'s own frequency, so an unseen pair costs only
  ``log(1 - PAIR_WEIGHT)`` and a character never costs its rarity: a rare word's characters
  are no worse than a common word's, only a known pair is better.
* ``Lexicon.frequency(word)``, ``Lexicon.near(word)``: the ``WORDS`` most frequent English
  words and the most frequent of those within ``NEAR`` edits of a word (one for a word of
  three letters), by an index of their deleted-letter forms (a word and a
  candidate share a form when they are within two edits).

The tables are built once per machine from ``wordfreq`` (~7 s) and cached (``cache_dir()/ocr``,
a 23 MB file; ~26 MB of memory, loaded in ~0.1 s, only once a line is unsure). Without
``wordfreq`` installed, :func:`lexicon` returns None and lines read as the recognizer gave
them.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import threading
import zlib
from pathlib import Path

import numpy as np

__all__ = ["Lexicon", "lexicon", "CJK", "WORDS", "NEAR"]

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
WORDS = 60_000  # English words proposed as corrections (most frequent first)
PAIR_WORDS = 200_000  # Chinese words whose character pairs are counted
PAIR_WEIGHT = 0.7  # the pair's share against the character's own frequency
NEAR = 2  # edits between a misread word and the words proposed for it
NEAR_MOST = 40  # proposals kept, the most frequent
VERSION = 3  # of the cached tables' layout

_lock = threading.Lock()
_loaded: dict = {}


def _deletes(word: str, n: int) -> set[str]:
    """``word`` and every form of it with up to ``n`` letters deleted."""
    out, frontier = {word}, {word}
    for _ in range(n):
        frontier = {w[:i] + w[i + 1:] for w in frontier for i in range(len(w))}
        out |= frontier
    return out


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions).

    >>> edit_distance("cattee", "coffee"), edit_distance("pakng", "parking")
    (3, 2)
    """
    if len(a) < len(b):  # the shorter along the inner loop
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _crc(s: str) -> int:
    return zlib.crc32(s.encode("utf-8"))


class Lexicon:
    """English word frequencies with a near-word index, and Chinese character-pair bonuses."""

    def __init__(self, words: list[str], freqs: np.ndarray, keys: np.ndarray, ids: np.ndarray,
                 pairs: np.ndarray, bonus: np.ndarray, chars: np.ndarray):
        self.words = words
        self.freq = dict(zip(words, freqs.tolist(), strict=True))
        self._keys, self._ids = keys, ids
        self._lengths = np.array([len(w) for w in words])
        # pairs as sorted codes (ord(a) << 21 | ord(b)) with their bonuses, and the listed
        # characters' codes: ~2 MB where a dict of strings took ~25
        self._pairs, self._bonus, self._chars = pairs, bonus, chars
        self.unseen = math.log(1 - PAIR_WEIGHT)

    def frequency(self, word: str) -> float:
        """Frequency of an English word (lowercase) among words; 0.0 when not in the list."""
        return self.freq.get(word, 0.0)

    def near(self, word: str, most: int = NEAR_MOST) -> list[str]:
        """Listed words within ``NEAR`` edits of lowercase ``word`` (one edit for a word of
        three letters: two would reach most short words), the ``most`` most
        frequent, itself excluded."""
        n = NEAR if len(word) > 3 else 1
        keys = np.array([_crc(d) for d in _deletes(word, n)], self._keys.dtype)  # the
        # index's own dtype: another would cast its 1.5 M keys on every call (~4 ms)
        lo = np.searchsorted(self._keys, keys, side="left")
        hi = np.searchsorted(self._keys, keys, side="right")
        if not (hi > lo).any():
            return []
        ids = np.unique(np.concatenate([self._ids[a:b] for a, b in zip(lo, hi, strict=True)]))
        ids = ids[np.abs(self._lengths[ids] - len(word)) <= n]  # ids are ranks: most frequent first
        out = []
        for i in ids.tolist():
            w = self.words[i]
            if w != word and edit_distance(word, w) <= n:
                out.append(w)
                if len(out) >= most:
                    break
        return out

    def pair_bonus(self, a: str, b: str) -> float:
        """log P(b | a) / P(b) for Chinese characters (``a = "^"``: the first); 0.0 when
        ``b`` is no listed character."""
        k = (ord(a) << 21) | ord(b)
        i = int(np.searchsorted(self._pairs, k))
        if i < len(self._pairs) and self._pairs[i] == k:
            return float(self._bonus[i])
        j = int(np.searchsorted(self._chars, ord(b)))
        return self.unseen if j < len(self._chars) and self._chars[j] == ord(b) else 0.0


def _build() -> dict:
    """The tables, from wordfreq's large English and Chinese lists."""
    from wordfreq import get_frequency_list  # noqa: PLC0415 (only on a first build)

    def ranked(lang):
        for cb, bin_ in enumerate(get_frequency_list(lang, wordlist="large")):
            f = 10.0 ** (-cb / 100)  # wordfreq's bins are centibels of frequency
            for w in bin_:
                yield w, f

    words, freqs = [], []
    seen = set()
    for w, f in ranked("en"):
        if w in seen or not (w.isascii() and w.isalpha() and len(w) >= 2):
            continue
        seen.add(w)
        words.append(w)
        freqs.append(f)
        if len(words) >= WORDS:
            break
    keys, ids = [], []
    for i, w in enumerate(words):
        if len(w) >= 3:
            for d in _deletes(w, NEAR):
                keys.append(_crc(d))
                ids.append(i)
    keys = np.asarray(keys, np.uint32)
    order = np.argsort(keys, kind="stable")
    pair: dict[str, float] = {}
    out: dict[str, float] = {}
    uni: dict[str, float] = {}
    n = 0
    for w, f in ranked("zh"):
        if n >= PAIR_WORDS:
            break
        if not all(CJK.match(c) for c in w):
            continue
        n += 1
        chars = "^" + w
        for a, b in zip(chars, chars[1:]):
            pair[a + b] = pair.get(a + b, 0.0) + f
            out[a] = out.get(a, 0.0) + f
            uni[b] = uni.get(b, 0.0) + f
        out[w[-1]] = out.get(w[-1], 0.0) + f  # the word ends here
    total = sum(uni.values())
    codes, bonus = [], []
    for ab, f in pair.items():
        pb = uni[ab[1]] / total
        codes.append((ord(ab[0]) << 21) | ord(ab[1]))
        bonus.append(math.log((PAIR_WEIGHT * f / out[ab[0]] + (1 - PAIR_WEIGHT) * pb) / pb))
    codes = np.asarray(codes, np.int64)
    by_code = np.argsort(codes)
    return {"words": np.asarray(words), "freqs": np.asarray(freqs, np.float64),
            "keys": keys[order], "ids": np.asarray(ids, np.int32)[order],
            "pairs": codes[by_code], "bonus": np.asarray(bonus, np.float32)[by_code],
            "chars": np.sort(np.array([ord(c) for c in uni], np.int64))}


def _cache_path() -> Path:
    from skiff.kernels.backend.cache import cache_dir  # noqa: PLC0415

    return cache_dir() / "ocr" / f"lexicon-v{VERSION}-{WORDS}-{PAIR_WORDS}.npz"


def lexicon() -> Lexicon | None:
    """The process's :class:`Lexicon`, built and cached on first use; None without
    ``wordfreq`` (or with ``SKIFF_OCR_LEXICON=0``)."""
    if os.environ.get("SKIFF_OCR_LEXICON", "1") == "0":
        return None
    with _lock:
        if "lex" in _loaded:
            return _loaded["lex"]
        path = _cache_path()
        tables = None
        if path.exists():
            try:
                with np.load(path, allow_pickle=False) as z:
                    tables = {k: z[k] for k in z.files}
            except (OSError, ValueError):
                tables = None  # a damaged cache is built again
        if tables is None:
            try:
                tables = _build()
            except ImportError:
                _loaded["lex"] = None
                return None
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
            try:  # a cache that cannot be written (read-only, full) is built again next time
                path.parent.mkdir(parents=True, exist_ok=True)
                np.savez(tmp, **tables)
                os.replace(tmp, path)
            except OSError:
                with contextlib.suppress(OSError):
                    tmp.unlink()
        lex = Lexicon(tables["words"].tolist(), tables["freqs"], tables["keys"], tables["ids"],
                      tables["pairs"], tables["bonus"], tables["chars"])
        _loaded["lex"] = lex
        return lex
