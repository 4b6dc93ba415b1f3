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
* ``Lexicon.lean(word)``: how much more often a word is written in English than in the
  most likely of ``OTHER_LANGUAGES`` (Latin letters; their words from Zipf frequency
  ``OTHER_ZIPF``, with and without accents), in Zipf units: "the" +1.7 (English is
  common in every language's web text), "bitte" -3.6, "der" -3.3. The other words of a
  line say whether it is English at all (a German line's "bitte" is no misread "bite").

The tables are built once per machine from ``wordfreq`` (~11 s) and cached
(``cache_dir()/ocr``, a 29 MB file; ~38 MB of memory, loaded in ~0.1 s, only once a line is
unsure). Without ``wordfreq`` installed, :func:`lexicon` returns None and lines read as the
recognizer gave them.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import threading
import unicodedata
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
# languages in Latin letters whose common words are not corrected towards English ones
OTHER_LANGUAGES = ("ca", "cs", "da", "de", "es", "fi", "fr", "hu", "id", "is", "it", "lt", "lv",
                   "ms", "nb", "nl", "pl", "pt", "ro", "sk", "sl", "sv", "tr")
OTHER_ZIPF = 3.0  # once per 10^6 words, or more often
VERSION = 5  # of the cached tables' layout

_TABLES = {"words", "freqs", "keys", "ids", "pairs", "bonus", "chars", "lean_keys", "lean"}
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


def unaccented(word: str) -> str:
    """``word`` without its accents ("Brötchen" -> "Brotchen")."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


class Lexicon:
    """English word frequencies with a near-word index, each word's lean to English or to
    another language, and Chinese character-pair bonuses."""

    def __init__(self, words: list[str], freqs: np.ndarray, keys: np.ndarray, ids: np.ndarray,
                 pairs: np.ndarray, bonus: np.ndarray, chars: np.ndarray,
                 leans: tuple[np.ndarray, np.ndarray] | None = None):
        self.words = words
        # CRC-32s of the English and other languages' words, sorted, and each one's lean in
        # tenths of a Zipf unit (a misread word matches one by chance ~1 in 3,600)
        self._lean_keys, self._lean = (np.zeros(0, np.uint32), np.zeros(0, np.int8)) \
            if leans is None else leans
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

    def lean(self, word: str) -> float:
        """Zipf frequency of lowercase ``word`` in English less its highest in
        ``OTHER_LANGUAGES`` (0 for a word in neither, clipped to +-12.7)."""
        key = _crc(word)
        i = int(np.searchsorted(self._lean_keys, np.uint32(key)))
        if i < len(self._lean_keys) and int(self._lean_keys[i]) == key:
            return float(self._lean[i]) / 10
        return 0.0

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
    """The tables, from wordfreq's English and Chinese lists (and the other languages')."""
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
    zipf_en: dict[int, float] = {}
    for cb, bin_ in enumerate(get_frequency_list("en", wordlist="large")):
        for w in bin_:  # Zipf: log10 of a word's frequency per 10^9 words
            zipf_en.setdefault(_crc(w), 9 - cb / 100)
    zipf_other: dict[int, float] = {}
    for lang in OTHER_LANGUAGES:
        for cb, bin_ in enumerate(get_frequency_list(lang, wordlist="best")):
            z = 9 - cb / 100
            if z < OTHER_ZIPF:
                break
            for w in bin_:
                if w.isalpha():
                    for form in {w, unaccented(w)}:
                        k = _crc(form)
                        if z > zipf_other.get(k, 0.0):
                            zipf_other[k] = z
    lean_keys = np.fromiter(zipf_en.keys() | zipf_other.keys(), np.uint32)
    lean_keys.sort()
    lean = np.array([zipf_en.get(k, 0.0) - zipf_other.get(k, 0.0) for k in lean_keys.tolist()])
    lean = np.clip(np.round(lean * 10), -127, 127).astype(np.int8)
    return {"words": np.asarray(words), "freqs": np.asarray(freqs, np.float64),
            "keys": keys[order], "ids": np.asarray(ids, np.int32)[order],
            "pairs": codes[by_code], "bonus": np.asarray(bonus, np.float32)[by_code],
            "chars": np.sort(np.array([ord(c) for c in uni], np.int64)),
            "lean_keys": lean_keys, "lean": lean}


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
            if tables is not None and not _TABLES <= tables.keys():
                tables = None
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
                for old in path.parent.glob("lexicon-v*.npz"):  # earlier layouts' files
                    if old != path and ".tmp" not in old.name:
                        with contextlib.suppress(OSError):
                            old.unlink()
            except OSError:
                with contextlib.suppress(OSError):
                    tmp.unlink()
        lex = Lexicon(tables["words"].tolist(), tables["freqs"], tables["keys"], tables["ids"],
                      tables["pairs"], tables["bonus"], tables["chars"],
                      (tables["lean_keys"], tables["lean"]))
        _loaded["lex"] = lex
        return lex
