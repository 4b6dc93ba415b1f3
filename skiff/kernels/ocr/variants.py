"""A traditional or variant Chinese character read on a simplified page, where the
recognizer gave the simplified one a share too, written as the simplified one.

The default recognizer holds simplified and traditional characters and their variants. On a
tea label in Noto Sans CJK 24 px it reads "净含量" as "凈含量" ("凈" 0.967, "净" 0.033 in
that column): sure enough that no line is read again (:mod:`.beam`), and no line of its own
can say which script it is in ("含量" is both). The page can: one that holds several
characters only simplified Chinese writes ("绿", "维", "产") and hardly any only
traditional Chinese writes is a simplified page, and there a traditional-only character
whose simplified counterpart the recognizer gave at least ``P_ALT`` in its column is
that counterpart. A traditional page, or a lone traditional name on a simplified page that
the recognizer is sure of (its counterpart under ``P_ALT``), keeps what was read.

The character table is wordfreq's (``_chinese_mapping.msgpack.gz``, 3,275 traditional and
variant characters to their simplified ones, the lexicon's package, :mod:`.lexicon`);
without it nothing changes.

>>> simplified_page(["有机绿茶", "凈含量：500 mL", "配料：水、绿茶、维生素C", "产地：浙江杭州"])
True
>>> simplified_page(["有機綠茶", "淨含量：500 mL", "配料：水、綠茶、維生素C", "產地：浙江杭州"])
False
>>> simplified_page(["国内线のりば", "东京駅から徒歩5分", "学生证を见せてください"])
False
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
from pathlib import Path

import numpy as np

from .rec import rec_input

__all__ = ["simplified_page", "variant_lines", "settle_variants", "simplified_variants",
           "P_ALT", "SIMPLE_MIN", "SIMPLE_RATIO"]

P_ALT = 0.01  # the simplified counterpart's probability in the variant's column, at least
SIMPLE_MIN = 3  # simplified-only characters a simplified page holds, at least
SIMPLE_RATIO = 2  # ... and twice as many as its traditional-only ones


@functools.lru_cache(maxsize=1)
def _table() -> tuple[dict[str, str], frozenset[str]] | None:
    """(traditional -> simplified, the simplified-only characters), or None without
    wordfreq's table (or msgpack)."""
    try:
        spec = importlib.util.find_spec("wordfreq")
        import msgpack  # noqa: PLC0415 (wordfreq's own dependency; only for a CJK page)
    except ImportError:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / \
        "_chinese_mapping.msgpack.gz"
    try:
        with gzip.open(path) as fh:
            raw = msgpack.load(fh, raw=False, strict_map_key=False)
    except (OSError, ValueError, TypeError):
        return None
    to_simple = {chr(k): v for k, v in raw.items() if isinstance(v, str) and len(v) == 1
                 and chr(k) != v}
    return to_simple, frozenset(set(to_simple.values()) - set(to_simple))


def _cjk(text: str) -> bool:
    return any("\u3400" <= c <= "\u9fff" for c in text)


def _kana(text: str) -> bool:
    return any("\u3041" <= c <= "\u30ff" or "\uff66" <= c <= "\uff9f" for c in text)


def simplified_page(texts) -> bool:
    """Whether the lines ``texts`` are a simplified Chinese page: at least ``SIMPLE_MIN``
    simplified-only characters, and ``SIMPLE_RATIO`` times as many as traditional-only
    ones; no kana (a Japanese page's kanji: "国" and "歩" are its own forms)."""
    texts = list(texts)
    if not any(_cjk(t) for t in texts) or any(_kana(t) for t in texts):
        return False
    table = _table()
    if table is None:
        return False
    to_simple, simple = table
    n_simple = sum(c in simple for t in texts for c in t)
    n_trad = sum(c in to_simple for t in texts for c in t)
    return n_simple >= SIMPLE_MIN and n_simple >= SIMPLE_RATIO * n_trad


def variant_lines(texts) -> list[int]:
    """The indices of ``texts`` holding a traditional-only character on a simplified page
    (:func:`simplified_page`); none elsewhere."""
    texts = list(texts)
    if not simplified_page(texts):
        return []
    to_simple = _table()[0]
    return [i for i, t in enumerate(texts) if any(c in to_simple for c in t)]


def settle_variants(text: str, probs, alphabet: list[str]) -> str:
    """``text`` with each traditional-only character written as its simplified one where
    that has at least ``P_ALT`` in the character's columns of ``probs`` (T, C), the line's
    recognizer output over ``alphabet``. ``text`` as it is where its characters and the
    greedy path's runs do not pair up (a line changed after reading)."""
    table = _table()
    if table is None or not text:
        return text
    to_simple = table[0]
    probs = np.asarray(probs.get() if hasattr(probs, "get") else probs)
    index = {c: i for i, c in enumerate(alphabet)}
    best = probs.argmax(1)
    out = list(text)
    for ch in {c for c in text if c in to_simple}:
        k, alt = index.get(ch), index.get(to_simple[ch])
        if k is None or alt is None:
            continue
        cols = np.flatnonzero(best == k)
        runs = np.split(cols, np.flatnonzero(np.diff(cols) > 1) + 1) if cols.size else []
        where = [i for i, c in enumerate(text) if c == ch]
        if len(runs) != len(where):
            continue
        for i, run in zip(where, runs, strict=True):
            if float(probs[run, alt].max()) >= P_ALT:
                out[i] = to_simple[ch]
    return "".join(out)


def rec_probs(pipe, crops: list[np.ndarray]) -> list[np.ndarray]:
    """The float32 recognizer's column probabilities (T, C) of each of ``crops``, read
    by ``pipe`` (an :class:`.OcrPipeline`), one crop at a time (no padding)."""
    rec = pipe.engine("rec")
    out = []
    for crop in crops:
        p = rec(rec_input([crop], pipe.models.rec_height, getattr(pipe, "xp", np), bucket="step"))
        out.append(np.asarray(p.get() if hasattr(p, "get") else p)[0])
    return out


def simplified_variants(pipe, texts: list[str], crops: list[np.ndarray]) -> dict[int, str]:
    """For one page's kept lines ``texts`` and their ``crops``: ``{index: text}`` of the
    lines whose traditional-only characters :func:`settle_variants` writes simplified
    (read again by ``pipe``'s recognizer); empty on a page that is not simplified Chinese
    or holds no such character (nothing read again)."""
    idx = variant_lines(texts)
    if not idx:
        return {}
    probs = rec_probs(pipe, [crops[i] for i in idx])
    alphabet = pipe.alphabet
    out = {}
    for i, p in zip(idx, probs, strict=True):
        t = settle_variants(texts[i], p, alphabet)
        if t != texts[i]:
            out[i] = t
    return out
