"""A traditional or variant Chinese character read on a simplified page, where the
recognizer gave the simplified one a share too, written as the simplified one; and a
variant form read on a traditional page ("凈" for "淨") written as the standard one.

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

Round 43: the mirror on a traditional page (:func:`traditional_page`, the same gate with
the scripts swapped): a variant the recognizer reads there ("凈" in AR PL UKai 32 px for
"淨"), where the standard form has ``P_ALT`` in its columns, is the standard form
(:func:`standard_forms`: of two forms the table maps to one simplified character, the one
Big5 holds and the other not, "說" for "説", "綠" for "緑"; and "淨" for "凈", both in Big5;
not Hong Kong's own "啓", "綫", "裏", "衆"). And a Japanese page is neither: besides kana,
a kanji Chinese does not write in either script ("駅", "図", "証": in Shift JIS, in
neither GB 2312 nor Big5 nor the table) says Japanese, and a page's evidence must hold a
character outside Japanese's common kanji (JIS X 0208's first level): a kanji-only
"国立大学 会議室" holds "国", "学", "会", simplified-only by the table but Japanese too,
and was a simplified page.

On a Japanese page (kana), a simplified-only character Japanese does not write (not in
Shift JIS: "费") is its one Japanese form ("費", :func:`japanese_forms`) where the
recognizer gave that ``P_ALT``: a phone photo of a receipt read "消费税" for "消費税".

>>> simplified_page(["有机绿茶", "凈含量：500 mL", "配料：水、绿茶、维生素C", "产地：浙江杭州"])
True
>>> simplified_page(["有機綠茶", "淨含量：500 mL", "配料：水、綠茶、維生素C", "產地：浙江杭州"])
False
>>> simplified_page(["国内线のりば", "东京駅から徒歩5分", "学生证を见せてください"])
False
>>> simplified_page(["国立大学 会議室"]), traditional_page(["國立臺灣大學", "這裡是會議室"])
(False, True)
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
from pathlib import Path

import numpy as np

from .rec import rec_input

__all__ = ["simplified_page", "traditional_page", "japanese_page", "standard_forms",
           "japanese_forms", "variant_lines",
           "settle_variants", "simplified_variants", "P_ALT", "SIMPLE_MIN", "SIMPLE_RATIO"]

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


# forms Hong Kong writes as its standard, which Big5 leaves out: not changed on a page
HK_FORMS = "\u5553\u7dab\u88cf\u8846"  # "啓", "綫", "裏", "衆"
# a variant Big5 holds beside its standard form
BIG5_VARIANTS = {"\u51c8": "\u6de8"}  # "凈" -> "淨"


def _encodes(c: str, codec: str) -> bool:
    try:
        c.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def standard_forms() -> dict[str, str]:
    """Variant -> standard traditional form: of the forms the table maps to one simplified
    character, the only one Big5 holds stands for the others (not :data:`HK_FORMS`), and
    :data:`BIG5_VARIANTS`. Empty without the table."""
    table = _table()
    if table is None:
        return {}
    groups = _forms_of(table[0])
    out = {}
    for forms in groups.values():
        big5 = [c for c in forms if _encodes(c, "big5")]
        if len(forms) > 1 and len(big5) == 1:
            out.update({c: big5[0] for c in forms if c != big5[0] and c not in HK_FORMS})
    out.update({k: v for k, v in BIG5_VARIANTS.items() if k in table[0]})
    return out



def _forms_of(trad_to_simple: dict) -> dict[str, list[str]]:
    """{simplified character: its traditional forms, in the table's order}."""
    groups: dict[str, list[str]] = {}
    for trad, simple in trad_to_simple.items():
        groups.setdefault(simple, []).append(trad)
    return groups

@functools.lru_cache(maxsize=8192)
def _japanese_only(c: str) -> bool:
    """A kanji only Japanese writes ("駅", "図", "証"): in Shift JIS, in neither GB 2312 nor
    Big5 nor the table."""
    table = _table()
    return ("\u3400" <= c <= "\u9fff" and table is not None and c not in table[0]
            and c not in table[1] and _encodes(c, "shift_jis")
            and not _encodes(c, "gb2312") and not _encodes(c, "big5"))


@functools.lru_cache(maxsize=8192)
def _chinese_only(c: str) -> bool:
    """A character Japanese does not commonly write (not among JIS X 0208's first level,
    its 2,965 common kanji: "会", "国", "時", "東" are; "这", "國", "會", "這" are not): a
    page's evidence holds one."""
    try:
        code = c.encode("shift_jis")
    except UnicodeEncodeError:
        return True
    return not (len(code) == 2 and 0x889F <= int.from_bytes(code, "big") <= 0x9872)


def _cjk(text: str) -> bool:
    return any("\u3400" <= c <= "\u9fff" for c in text)


def _kana(text: str) -> bool:
    return any("\u3041" <= c <= "\u30ff" or "\uff66" <= c <= "\uff9f" for c in text)


def _counts(texts: list[str]) -> tuple[int, int, int, int] | None:
    """(simplified-only, traditional-only characters, and of each those outside Japanese's
    common kanji) of a Chinese page, or None for a page without CJK, with kana or a
    Japanese-only kanji, or without the table."""
    if not any(_cjk(t) for t in texts) or any(_kana(t) for t in texts):
        return None
    table = _table()
    if table is None:
        return None
    to_simple, simple = table
    chars = [c for t in texts for c in t if "\u3400" <= c <= "\u9fff"]
    if any(_japanese_only(c) for c in chars):
        return None
    s = [c for c in chars if c in simple]
    t = [c for c in chars if c in to_simple]
    return (len(s), len(t), sum(map(_chinese_only, s)), sum(map(_chinese_only, t)))


def simplified_page(texts) -> bool:
    """Whether the lines ``texts`` are a simplified Chinese page: at least ``SIMPLE_MIN``
    simplified-only characters, and ``SIMPLE_RATIO`` times as many as traditional-only
    ones, one of them at least outside Japanese's common kanji; no kana and no kanji only
    Japanese writes (a Japanese page's "国" and "学" are its own forms)."""
    n = _counts(list(texts))
    return n is not None and n[0] >= SIMPLE_MIN and n[0] >= SIMPLE_RATIO * n[1] and n[2] > 0


def traditional_page(texts) -> bool:
    """Whether the lines ``texts`` are a traditional Chinese page: :func:`simplified_page`
    with the scripts swapped."""
    n = _counts(list(texts))
    return n is not None and n[1] >= SIMPLE_MIN and n[1] >= SIMPLE_RATIO * n[0] and n[3] > 0


@functools.lru_cache(maxsize=1)
def japanese_forms() -> dict[str, str]:
    """Simplified-only character Japanese does not write (not in Shift JIS) -> the one form
    of it that Japanese writes ("费" -> "費", "门" -> "門"); empty without the table."""
    table = _table()
    if table is None:
        return {}
    groups = _forms_of(table[0])
    out = {}
    for simple, forms in groups.items():
        if _encodes(simple, "shift_jis"):
            continue
        own = [c for c in forms if _encodes(c, "shift_jis")]
        if len(own) == 1:
            out[simple] = own[0]
    return out


def japanese_page(texts) -> bool:
    """Whether the lines ``texts`` are a Japanese page: CJK characters and kana."""
    texts = list(texts)
    return any(_cjk(t) for t in texts) and any(_kana(t) for t in texts)


def _page_map(texts: list[str]) -> dict[str, str]:
    """The forms to settle on this page: traditional -> simplified on a simplified page,
    variant -> standard on a traditional one, a simplified form Japanese does not write ->
    its Japanese one on a Japanese page, none elsewhere."""
    if simplified_page(texts):
        return _table()[0]
    if traditional_page(texts):
        return standard_forms()
    if japanese_page(texts):
        return japanese_forms()
    return {}


def variant_lines(texts) -> list[int]:
    """The indices of ``texts`` holding a traditional-only character on a simplified page
    (:func:`simplified_page`), or a variant form on a traditional one; none elsewhere."""
    texts = list(texts)
    forms = _page_map(texts)
    return [i for i, t in enumerate(texts) if any(c in forms for c in t)]


def settle_variants(text: str, probs, alphabet: list[str], forms=None) -> str:
    """``text`` with each traditional-only character written as its simplified one (or
    each character of ``forms`` as its value there) where that has at least ``P_ALT`` in
    the character's columns of ``probs`` (T, C), the line's recognizer output over
    ``alphabet``. ``text`` as it is where its characters and the greedy path's runs do
    not pair up (a line changed after reading)."""
    table = _table()
    if table is None or not text:
        return text
    to_simple = table[0] if forms is None else forms
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
    (read again by ``pipe``'s recognizer), or on a traditional page whose variant forms it
    writes standard; empty on a page that is neither or holds no such character (nothing
    read again)."""
    forms = _page_map(list(texts))
    idx = [i for i, t in enumerate(texts) if any(c in forms for c in t)]
    if not idx:
        return {}
    probs = rec_probs(pipe, [crops[i] for i in idx])
    alphabet = pipe.alphabet
    out = {}
    for i, p in zip(idx, probs, strict=True):
        t = settle_variants(texts[i], p, alphabet, forms)
        if t != texts[i]:
            out[i] = t
    return out
