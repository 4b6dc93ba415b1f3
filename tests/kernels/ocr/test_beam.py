"""Unsure lines read again with what text usually says (skiff.kernels.ocr.beam, .lexicon):
the CTC likelihood against PyTorch's CTC loss, the beam search against every alignment
enumerated, and the lexicon's corrections on column probabilities built to be torn."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from skiff.kernels.ocr.beam import beam_search, ctc_log_likelihood, fix_words, reread


def _collapse(path):
    out, last = [], None
    for c in path:
        if c != last and c != 0:
            out.append(c)
        last = c
    return tuple(out)


def test_ctc_likelihood_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    T, C = 14, 6
    for target in ([1, 2, 3], [2, 2, 4, 4, 1], [5], [1, 3, 1, 3, 1, 3, 2]):
        logits = rng.normal(size=(T, C))
        logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
        ours = ctc_log_likelihood(logp, target)
        loss = torch.nn.functional.ctc_loss(
            torch.tensor(logp)[:, None, :], torch.tensor([target]), torch.tensor([T]),
            torch.tensor([len(target)]), blank=0, reduction="none")
        assert ours == pytest.approx(-float(loss[0]), rel=1e-9, abs=1e-9)


def test_beam_finds_the_most_probable_reading_not_the_best_path():
    """Without a lexicon the beam search returns the labelling with the most probability
    summed over its alignments, enumerated here over every path; on these columns greedy
    decoding (the best single path) reads otherwise."""
    alphabet = ["", "a", "b"]
    p = np.array([[0.40, 0.35, 0.25], [0.40, 0.35, 0.25], [0.40, 0.25, 0.35],
                  [0.45, 0.30, 0.25], [0.40, 0.35, 0.25]])
    totals: dict = {}
    for path in itertools.product(range(3), repeat=len(p)):
        prob = float(np.prod([p[t, c] for t, c in enumerate(path)]))
        key = _collapse(path)
        totals[key] = totals.get(key, 0.0) + prob
    best = max(totals, key=totals.get)
    assert beam_search(p, alphabet, None, beam=64) == "".join(alphabet[c] for c in best)
    assert "".join(alphabet[c] for c in _collapse(p.argmax(1))) != \
        "".join(alphabet[c] for c in best)


def _columns(chars, alphabet, sure=0.97, torn=None):
    """(T, C) probabilities of ``chars`` a column each with a blank column after each;
    ``torn``: {position: {char: p}} spreads that character's column."""
    index = {c: i for i, c in enumerate(alphabet)}
    rows = []
    for k, ch in enumerate(chars):
        row = np.full(len(alphabet), (1 - sure) / (len(alphabet) - 1))
        row[index[ch]] = sure
        if torn and k in torn:
            row[:] = 0.001
            for c, q in torn[k].items():
                row[index[c]] = q
            row[0] += 1 - row.sum()
        rows.append(row)
        blank = np.full(len(alphabet), (1 - sure) / (len(alphabet) - 1))
        blank[0] = sure
        rows.append(blank)
    return np.array(rows)


@pytest.fixture(scope="module")
def lex():
    pytest.importorskip("wordfreq")
    from skiff.kernels.ocr.lexicon import lexicon

    got = lexicon()
    assert got is not None
    return got


def test_a_torn_chinese_character_goes_to_the_known_pair(lex):
    alphabet = ["", "热", "烈", "顺", "欢", "迎", "出", "口", "业", "全", "安"]
    torn = {1: {"顺": 0.5, "烈": 0.4}}
    p = _columns("热顺欢迎", alphabet, torn=torn)
    assert beam_search(p, alphabet, None) == "热顺欢迎"
    assert beam_search(p, alphabet, lex) == "热烈欢迎"
    assert reread("热顺欢迎", p, alphabet, lex) == "热烈欢迎"
    # the columns greedy decoding took (rec.ctc_columns) give the same reading
    from skiff.kernels.ocr.rec import ctc_columns, ctc_decode

    best, top = ctc_columns(p[None])
    assert ctc_decode(p[None], alphabet, columns=(best, top)) == ctc_decode(p[None], alphabet)
    assert reread("热顺欢迎", p, alphabet, lex, (best[0], top[0])) == "热烈欢迎"
    # the recognizer's clear preference stands: the pair bonus is capped, and a class
    # under MIN_P is never tried
    clear = _columns("热顺欢迎", alphabet, torn={1: {"顺": 0.97, "烈": 0.015}})
    assert beam_search(clear, alphabet, lex) == "热顺欢迎"
    # a line the recognizer is sure of is not read again at all
    sure = _columns("安业出口", alphabet, sure=0.995)
    assert reread("安业出口", sure, alphabet, lex) == "安业出口"


def test_a_japanese_line_gets_no_chinese_pair_bonus(lex):
    """Kanji beside kana pair as Japanese does, not as the Chinese tables say: the torn
    column keeps the recognizer's choice."""
    alphabet = ["", "热", "烈", "顺", "欢", "迎", "の", "カ"]
    torn = {1: {"顺": 0.5, "烈": 0.4}}
    p = _columns("热顺欢迎の", alphabet, torn=torn)
    assert reread("热顺欢迎の", p, alphabet, lex) == "热顺欢迎の"
    p = _columns("热顺欢迎カ", alphabet, torn=torn)
    assert reread("热顺欢迎カ", p, alphabet, lex) == "热顺欢迎カ"
    p = _columns("热顺欢迎", alphabet, torn=torn)  # without kana: the Chinese pair
    assert reread("热顺欢迎", p, alphabet, lex) == "热烈欢迎"


def test_an_unlisted_word_goes_to_a_near_word_the_columns_allow(lex):
    alphabet = [""] + list("NoPakrngiX ")
    index = {c: i for i, c in enumerate(alphabet)}
    p = _columns("No Pakng", alphabet)
    # the blanks after "a" and after "k" hold some "r" and "i": "Parking" is possible
    p[9, index["r"]], p[9, 0] = 0.3, 0.67
    p[11, index["i"]], p[11, 0] = 0.3, 0.67
    assert fix_words("No Pakng", p, alphabet, lex) == "No Parking"
    # where the columns leave no room for the letters, the reading stands
    clean = _columns("No Pakng", alphabet, sure=0.995)
    assert fix_words("No Pakng", clean, alphabet, lex) == "No Pakng"
    # case follows the reading; listed words and short words are left alone
    upper = [""] + list("NOPAKRGI ")
    q = _columns("NO PAKNG", upper)
    ui = {c: i for i, c in enumerate(upper)}
    q[9, ui["R"]], q[9, 0] = 0.3, 0.67
    q[11, ui["I"]], q[11, 0] = 0.3, 0.67
    assert fix_words("NO PAKNG", q, upper, lex) == "NO PARKING"


def test_lines_in_other_languages_are_not_made_english(lex, monkeypatch):
    """A line whose surely read words lean to another language written in Latin letters
    ("warten": German) is left as read, and so is a line with an accented letter; the same
    columns are corrected where the line may be English, and a misread word that happens to
    be another language's ("Onder": Dutch) is no evidence on its own."""
    assert lex.lean("der") < -2 and lex.lean("bitte") < -2 and lex.lean("gebaude") < -2
    assert lex.lean("the") > 1 and lex.lean("pakng") == 0.0
    alphabet = [""] + list("Bitewarné ")
    index = {c: i for i, c in enumerate(alphabet)}
    p = _columns("Bitte warten", alphabet)
    p[6, index["t"]], p[6, 0] = 0.5, 0.47  # the second "t" torn towards the blank
    assert fix_words("Bitte warten", p, alphabet, lex) == "Bitte warten"
    monkeypatch.setattr(type(lex), "lean", lambda self, word: 0.0)
    assert fix_words("Bitte warten", p, alphabet, lex) == "Bite warten"  # ("bite": English)
    monkeypatch.undo()
    alphabet = [""] + list("Onder5 ")
    index = {c: i for i, c in enumerate(alphabet)}
    p = _columns("Onder 55", alphabet)
    p[2, index["r"]], p[2, index["n"]] = 0.45, 0.5
    assert fix_words("Onder 55", p, alphabet, lex) == "Order 55"
    alphabet = [""] + list("NoPakrngié ")
    index = {c: i for i, c in enumerate(alphabet)}
    for text in ("No Pakng", "Né Pakng"):
        p = _columns(text, alphabet)
        p[9, index["r"]], p[9, 0] = 0.3, 0.67
        p[11, index["i"]], p[11, 0] = 0.3, 0.67
        want = "No Parking" if text.isascii() else text
        assert fix_words(text, p, alphabet, lex) == want


def test_lexicon_near_words_and_pairs(lex):
    from skiff.kernels.ocr.lexicon import edit_distance

    near = lex.near("pakng")
    assert "parking" in near and "pakng" not in near
    assert all(edit_distance("pakng", w) <= 2 for w in near)
    assert lex.frequency("the") > lex.frequency("parking") > 0 and lex.frequency("pakng") == 0
    assert lex.pair_bonus("热", "烈") > 1 > 0 > lex.pair_bonus("热", "顺")
    assert lex.pair_bonus("热", "x") == 0.0  # no listed character: no bonus, no cost


def test_lexicon_cache_replaces_earlier_layouts(lex, tmp_path, monkeypatch):
    """A new layout's file is written beside the cache and the earlier layouts' files go
    (each is tens of MB); another process's file being written is left alone."""
    from skiff.kernels.ocr import lexicon as module

    with np.load(module._cache_path(), allow_pickle=False) as z:  # the fixture's tables
        tables = {k: z[k] for k in z.files}
    monkeypatch.setattr(module, "_build", lambda: tables)
    monkeypatch.setattr(module, "_cache_path", lambda: tmp_path / "lexicon-v9-1-2.npz")
    monkeypatch.setattr(module, "_loaded", {})
    (tmp_path / "lexicon-v3-60000-200000.npz").write_bytes(b"old")
    (tmp_path / "lexicon-v9-1-2.123.tmp.npz").write_bytes(b"being written")
    got = module.lexicon()
    assert got is not None and got.lean("bitte") < -2
    assert sorted(f.name for f in tmp_path.iterdir()) == ["lexicon-v9-1-2.123.tmp.npz",
                                                          "lexicon-v9-1-2.npz"]


def test_lexicon_without_a_writable_cache_or_when_turned_off(tmp_path, monkeypatch):
    """A cache that cannot be written still gives the tables (built in memory); the
    environment switch turns the mending off."""
    pytest.importorskip("wordfreq")
    from skiff.kernels.ocr import lexicon as module

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(module, "_cache_path", lambda: blocker / "ocr" / "lexicon.npz")
    monkeypatch.setattr(module, "_loaded", {})
    # a smaller build (round 46: 8.4 -> 4.5 CPU s; "parking" is among the first 5000 words):
    # the tables come from memory all the same
    monkeypatch.setattr(module, "WORDS", 5000)
    monkeypatch.setattr(module, "PAIR_WORDS", 2000)
    got = module.lexicon()
    assert got is not None and "parking" in got.near("pakng")
    assert not list(tmp_path.glob("**/*.npz"))
    monkeypatch.setattr(module, "_loaded", {})
    monkeypatch.setenv("SKIFF_OCR_LEXICON", "0")
    assert module.lexicon() is None
    assert reread("No Pakng", np.full((4, 3), 1 / 3), ["", "a", "b"], module.lexicon) == \
        "No Pakng"
