"""Reading an unsure line again with what text usually says (:mod:`.lexicon`).

Greedy CTC decoding (:func:`.rec.ctc_decode`) takes the best class of each column. Where a
column is torn between characters, two steps read the line again from the recognizer's
column probabilities:

1. :func:`beam_search`: a prefix beam search over the columns' likely classes (those of at
   least ``MIN_P``), each Chinese character scored by the recognizer plus ``PAIR_ALPHA``
   times its pair bonus after the character before it, capped at ``PAIR_CAP`` nats
   ("热顺欢迎" -> "热烈欢迎", "安业出口" -> "安全出口"). A class under ``MIN_P`` is never
   tried, so a column the recognizer gives 0.97 keeps its character.
2. :func:`fix_words`: each Latin word of 3+ letters that is no listed English word, and
   has an unsure column, is compared with the listed words within two edits (one for a
   3-letter word): each candidate is scored on the word's own columns by its exact CTC
   likelihood (:func:`ctc_log_likelihood`, every alignment summed) plus ``WORD_BETA``
   times the log of its frequency, against the word as read with an unlisted word's
   frequency ``UNLISTED`` ("Pakng" -> "Parking", "Oudy" -> "Only"). A code or name the
   recognizer is sure of keeps its letters.

Only a line with a kept column whose best class is under ``UNSURE`` is read again
(:func:`reread`), and the pipeline reads again only lines it keeps (at least its
``min_score``); digits, punctuation and spaces get no bonus either way.

Measured (2026-12-03, docs/ocr.md): the rendered degraded tier (small, blurred, noisy,
turned images) over seven seeds of 50-60 0.843 -> 0.860 (each seed +1.1 to +2.6 points);
85 everyday scenes the same (0.984), as thumbnails 0.940 -> 0.944, as phone shots 0.969 ->
0.970; 60 text-free images the same 52 false lines; the clean folders' CPU time +2-4%.
``PAIR_ALPHA`` 0.7 / 1.0 / 1.5 and ``WORD_BETA`` 0.25 / 0.5 / 1.0 / 2.0 were tried on three
seeds; these read best.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np

from .lexicon import CJK, Lexicon, lexicon

__all__ = ["ctc_log_likelihood", "beam_search", "fix_words", "reread", "is_unsure", "UNSURE"]

UNSURE = 0.9  # a line with a kept column whose best class is under this is read again
SURE = 0.98  # a column this sure of its class is left as it is
BEAM = 10  # prefixes kept per column
TOP = 6  # classes tried per column, those of at least MIN_P
MIN_P = 0.02
PAIR_ALPHA = 1.0
PAIR_CAP = 2.0
WORD_BETA = 1.0
UNLISTED = 1e-6  # the frequency a word not in the list is given
OTHER_LINE = -1.5  # a line's other words leaning to another language this much: not English
_NEG = -1e30
_WORD = re.compile(r"[A-Za-z]+")
# Latin letters with accents: a line holding one is no English to correct (and its words
# would be cut at them)
_ACCENTED = re.compile(r"[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")
# kana: a Japanese line, whose kanji do not pair as Chinese characters do (the pair tables
# are Chinese): read again without pair bonuses
_KANA = re.compile(r"[\u3041-\u30ff\u31f0-\u31ff\uff66-\uff9f]")


def _lse(a: float, b: float) -> float:
    if a < b:
        a, b = b, a
    return a if b <= _NEG else a + math.log1p(math.exp(b - a))


def ctc_log_likelihood(logp: np.ndarray, ids: list[int]) -> float:
    """log P(``ids`` | column log-probabilities ``logp`` (T, C)), summed over every CTC
    alignment (class 0 the blank): the forward algorithm."""
    T = logp.shape[0]
    if T == 0:
        return 0.0 if not ids else _NEG
    ext = np.zeros(2 * len(ids) + 1, np.int64)
    ext[1::2] = ids
    S = len(ext)
    if len(ids) > T:
        return _NEG
    skip = np.zeros(S, bool)
    skip[2:] = (ext[2:] != 0) & (ext[2:] != ext[:-2])
    a = np.full(S, _NEG)
    a[0] = logp[0, 0]
    if S > 1:
        a[1] = logp[0, ext[1]]
    one = np.full(S, _NEG)
    two = np.full(S, _NEG)
    for t in range(1, T):
        one[1:] = a[:-1]
        two[2:] = np.where(skip[2:], a[:-2], _NEG)
        m = np.maximum(np.maximum(a, one), two)
        a = m + np.log(np.exp(a - m) + np.exp(one - m) + np.exp(two - m)) + logp[t, ext]
    return float(np.logaddexp(a[-1], a[-2])) if S > 1 else float(a[-1])


_TABLES: dict[tuple[int, int], tuple] = {}  # (id of an alphabet, classes) -> its tables


def _tables(alphabet: list[str], n: int) -> tuple[list[str], dict[str, int]]:
    """For ``n`` classes of ``alphabet``: each class's character ("" past its end) and the
    class of each character (kept for the last few alphabets: building them costs ~5 ms
    for 18,000 classes)."""
    got = _TABLES.get((id(alphabet), n))
    if got is None or got[0] is not alphabet:
        names = [alphabet[i] if i < len(alphabet) else "" for i in range(n)]
        index = {c: i for i, c in enumerate(names) if c}
        got = (alphabet, (names, index))
        while len(_TABLES) >= 4:
            _TABLES.pop(next(iter(_TABLES)), None)
        _TABLES[(id(alphabet), n)] = got
    return got[1]


def _bonus(lex: Lexicon, prev: str, ch: str) -> float:
    """A Chinese character's bonus after the character before it (after anything else:
    as a word's first character)."""
    if not CJK.match(ch):
        return 0.0
    return min(PAIR_CAP, lex.pair_bonus(prev if CJK.match(prev) else "^", ch))


def fluency(text: str, lex: Lexicon | None) -> float:
    """The mean capped pair bonus (:func:`_bonus`) of ``text``'s Chinese characters, each
    after the character before it (spaces ignored); 0.0 for a text with none, or no
    ``lex``. Garble that small noisy CJK print reads as draws characters seldom seen
    together ("综客登记" against "访客登记")."""
    if lex is None:
        return 0.0
    chars = [c for c in text if not c.isspace()]
    bonuses = [_bonus(lex, chars[i - 1] if i else "^", c)
               for i, c in enumerate(chars) if CJK.match(c)]
    return sum(bonuses) / len(bonuses) if bonuses else 0.0


def beam_search(probs: np.ndarray, alphabet: list[str], lex: Lexicon | None = None, *,
                beam: int = BEAM, alpha: float = PAIR_ALPHA, top: np.ndarray | None = None,
                best: np.ndarray | None = None) -> str:
    """The line read from ``probs`` (T, C) by a prefix beam search, Chinese characters
    scored with ``alpha`` times their pair bonus (none without ``lex``). A column at least
    ``SURE`` of its class tries that class alone (the others are under ``MIN_P``); ``top``
    and ``best``: each column's best probability and class, when known."""
    names, _ = _tables(alphabet, probs.shape[1])
    if best is None:
        best = probs.argmax(1)
    if top is None:
        top = probs[np.arange(len(best)), best]
    # a prefix (tuple of classes) -> [log p ending in a blank, log p ending in its last
    # class, its pair bonus so far]
    beams: dict[tuple, list] = {(): [0.0, _NEG, 0.0]}
    for t in range(len(best)):
        if top[t] >= SURE:
            cands = [(int(best[t]), math.log(top[t]))]
        else:
            row = probs[t]
            # the classes of at least MIN_P (at most 1 / MIN_P of them), the TOP likeliest
            idx = np.flatnonzero(row >= MIN_P)
            if len(idx) > TOP:
                idx = idx[np.argpartition(-row[idx], TOP)[:TOP]]
            cands = [(int(c), math.log(row[c])) for c in idx] or \
                [(int(best[t]), math.log(top[t]))]
        nxt: dict[tuple, list] = {}
        for pre, (pb, pnb, bonus) in beams.items():
            total = _lse(pb, pnb)
            for c, p in cands:
                if c == 0:
                    e = nxt.setdefault(pre, [_NEG, _NEG, bonus])
                    e[0] = _lse(e[0], total + p)
                    continue
                last = pre[-1] if pre else None
                longer = pre + (c,)
                if longer not in nxt:
                    prev = names[last] if last is not None else ""
                    add = alpha * _bonus(lex, prev, names[c]) if lex else 0.0
                    nxt[longer] = [_NEG, _NEG, bonus + add]
                e = nxt[longer]
                if c == last:  # the same class again: a new character only after a blank
                    e[1] = _lse(e[1], pb + p)
                    same = nxt.setdefault(pre, [_NEG, _NEG, bonus])
                    same[1] = _lse(same[1], pnb + p)
                else:
                    e[1] = _lse(e[1], total + p)
        if len(nxt) > beam:
            nxt = dict(sorted(nxt.items(),
                              key=lambda kv: -(_lse(kv[1][0], kv[1][1]) + kv[1][2]))[:beam])
        beams = nxt
    chosen = max(beams.items(), key=lambda kv: _lse(kv[1][0], kv[1][1]) + kv[1][2])[0]
    return "".join(names[i] for i in chosen).strip()


def _case_like(seen: str, word: str) -> str:
    if len(seen) > 1 and seen.isupper():
        return word.upper()
    if seen[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _runs(best: np.ndarray) -> list[tuple[int, int, int]]:
    """(class, first column, last column) of each character greedy decoding keeps."""
    out: list[tuple[int, int, int]] = []
    for t, c in enumerate(best.tolist()):
        if c != 0 and t > 0 and c == best[t - 1]:
            out[-1] = (c, out[-1][1], t)
        elif c != 0:
            out.append((c, t, t))
    return out


def fix_words(text: str, probs: np.ndarray, alphabet: list[str], lex: Lexicon, *,
              beta: float = WORD_BETA) -> str:
    """``text`` with each unlisted English word of 3+ letters with an unsure column
    replaced by the listed word within two edits that the recognizer's columns ``probs``
    (T, C) and the word's frequency favour most, when they favour it over the word as
    read. A word is scored on its own columns (those between the characters around it),
    and ``text``'s words must be those greedy decoding reads. A line is corrected only
    where it may be English: one whose other words (read surely, or listed) lean to another
    language (:meth:`.Lexicon.lean`, each within +-3, summed under ``OTHER_LINE``) is left
    as read, and so is a line with an accented Latin letter (French, German, Spanish...)."""
    if _ACCENTED.search(text):
        return text
    names, index = _tables(alphabet, probs.shape[1])
    best = probs.argmax(1)
    runs = _runs(best)
    greedy = "".join(names[c] for c, _, _ in runs)
    if len(greedy) != len(runs):  # a class with no character: leave the line be
        return text
    words = list(_WORD.finditer(greedy))
    if [m.group() for m in words] != _WORD.findall(text):
        return text
    top = probs[np.arange(len(best)), best]
    spans, lean = [], 0.0  # the words to correct (with their columns); the line's lean
    for k, m in enumerate(words):
        low = m.group().lower()
        lo = runs[m.start() - 1][2] + 1 if m.start() > 0 else 0
        hi = runs[m.end()][1] if m.end() < len(runs) else len(best)
        if len(low) >= 3 and lex.frequency(low) == 0 and top[lo:hi].min() < UNSURE:
            spans.append((k, m, lo, hi))  # unlisted, and the recognizer is unsure of it
        elif len(low) > 1:
            lean += min(3.0, max(-3.0, lex.lean(low)))
    if lean < OTHER_LINE:  # the words read surely or listed say: another language
        return text
    fixed: dict[int, str] = {}
    for k, m, lo, hi in spans:
        seen = m.group()
        own = runs[m.start():m.end()]
        window = np.log(np.maximum(probs[lo:hi], 1e-30))
        read_as = ctc_log_likelihood(window, [c for c, _, _ in own]) + beta * math.log(UNLISTED)
        choice, choice_score = None, read_as
        for w in lex.near(seen.lower()):
            word = _case_like(seen, w)
            if any(c not in index for c in word):
                continue
            score = ctc_log_likelihood(window, [index[c] for c in word]) + \
                beta * math.log(lex.frequency(w))
            if score > choice_score:
                choice, choice_score = word, score
        if choice is not None:
            fixed[k] = choice
    if not fixed:
        return text
    out, at = [], 0
    for k, m in enumerate(_WORD.finditer(text)):
        out.append(text[at:m.start()] + fixed.get(k, m.group()))
        at = m.end()
    return "".join(out) + text[at:]


def is_unsure(best: np.ndarray, top: np.ndarray) -> bool:
    """Whether a column that is no blank has its best class under ``UNSURE``, for a line's
    columns' best classes ``best`` (T,) and their probabilities ``top`` (T,)
    (:func:`.rec.ctc_columns`)."""
    kept = best != 0
    return bool(kept.any()) and float(top[kept].min()) < UNSURE


def reread(text: str, probs: np.ndarray, alphabet: list[str],
           lex: Lexicon | None | Callable[[], Lexicon | None] = lexicon,
           columns: tuple[np.ndarray, np.ndarray] | None = None) -> str:
    """``text`` (greedy CTC's reading of ``probs`` (T, C)) read again when it is unsure
    (:func:`is_unsure`): :func:`beam_search` with pair bonuses (none on a line with kana:
    Japanese), then :func:`fix_words`.
    ``lex`` is a :class:`Lexicon`, or a callable giving one (loaded only for an unsure
    line), or None: the text as read. ``columns``: the line's best classes and their
    probabilities, when the caller has them (greedy decoding took them)."""
    if lex is None or not text:
        return text
    probs = probs.get() if hasattr(probs, "get") else np.asarray(probs)
    if columns is None:
        best = probs.argmax(1)
        columns = best, probs[np.arange(len(best)), best]
    top = columns[1]
    if not is_unsure(*columns):
        return text
    if callable(lex):
        lex = lex()
        if lex is None:
            return text
    again = beam_search(probs, alphabet, None if _KANA.search(text) else lex, top=top,
                        best=columns[0]) or text
    return fix_words(again, probs, alphabet, lex)
