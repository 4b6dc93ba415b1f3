"""Round 30 (speed): crops on pages no turned reading could turn are read once
(:mod:`skiff.kernels.ocr.turn_bound`). Oracles: :func:`rec.choose_turns` itself, given the
turned readings most in favour of a turn, and the pipeline's plain path (every unsettled
crop read both ways)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr.reading import (
    BY_MODEL,
    BY_PAGE,
    SEGMENT_LEAN,
    SURE_REC,
    UNSETTLED,
    UPRIGHT_PRIOR,
)
from skiff.kernels.ocr.rec import choose_turns
from skiff.kernels.ocr.turn_bound import settle_unturnable

# turned readings a crop might get: numbers (lean), digits like a display upside down,
# words, nothing; at the top score a reading can have and at a random one
_TURNED = ["8", "42.5", "h9589E", "word", "中文", ""]
_FIRST = ["Results are stored", "3685.64", "h9589E", "订单号A1024", "", "12", "x"]


def _case(rng):
    n = int(rng.integers(1, 9))
    texts = []
    for _ in range(n):
        text = _FIRST[int(rng.integers(len(_FIRST)))]
        # scores mostly near the top, where the bound settles pages
        score = float(1 - rng.choice([rng.uniform(0, 0.06), rng.uniform(0, 0.6)]))
        texts.append((text, score if text else 0.0))
    flags = rng.random(n) < 0.2
    settled = rng.choice([UNSETTLED, BY_MODEL, BY_PAGE], size=n, p=[0.6, 0.3, 0.1]).astype(np.int8)
    widths = rng.integers(20, 900, size=n)
    pages = rng.integers(0, 3, size=n)
    return texts, flags, settled, widths, pages


def _would_read(texts, settled):
    poor = np.array([not t or s < SURE_REC for t, s in texts], bool)
    return np.flatnonzero((settled == UNSETTLED) | (poor & (settled != BY_PAGE)))


def test_no_turned_reading_turns_a_settled_page():
    rng = np.random.default_rng(30)
    settled_pages = 0
    for _ in range(400):
        texts, flags, settled, widths, pages = _case(rng)
        after = settle_unturnable(texts, flags, settled, widths, pages)
        # only crops that would be read twice change, and only to BY_PAGE
        changed = np.flatnonzero(after != settled)
        assert set(changed) <= set(_would_read(texts, settled).tolist())
        assert (after[changed] == BY_PAGE).all()
        if not len(changed):
            continue
        settled_pages += len(set(pages[changed].tolist()))
        # the oracle: read_both_ways' own decision over the crops it would have read, with
        # turned readings drawn to favour a turn; a settled crop never turns
        idx = _would_read(texts, settled)
        for _ in range(40):
            other = []
            for _k in idx:
                text = _TURNED[int(rng.integers(len(_TURNED)))]
                other.append((text, 1.0 if rng.random() < 0.7 else float(rng.random())))
            turn = choose_turns([texts[k] for k in idx], other, widths[idx], pages[idx],
                                flipped=flags[idx], prior=UPRIGHT_PRIOR,
                                segments=SEGMENT_LEAN)
            assert not np.any(turn & np.isin(idx, changed)), (texts, other, turn)
    assert settled_pages > 20  # the bound settles pages, it is not vacuous


def test_a_page_that_could_turn_is_read_both_ways():
    # first readings at 0.9: a turned reading at 1.0 wins 0.1 > the margin, so choose_turns
    # would turn it; the bound must leave it to be read
    texts = [("Results are stored", 0.90), ("in the run folder", 0.99)]
    settled = np.array([UNSETTLED, UNSETTLED], np.int8)
    args = (texts, np.zeros(2, bool), settled, [300, 300], [0, 0])
    assert (settle_unturnable(*args) == settled).all()
    assert choose_turns(texts, [("x", 1.0), ("x", 1.0)], [300, 300], [0, 0]).any()
    # a sure page of its own is settled, the unsure one beside it is not
    texts2 = texts + [("Open daily", 0.995), ("9am to 6pm", 0.99)]
    after = settle_unturnable(texts2, np.zeros(4, bool), np.zeros(4, np.int8),
                              [300, 300, 200, 200], [0, 0, 1, 1])
    assert after.tolist() == [UNSETTLED, UNSETTLED, BY_PAGE, BY_PAGE]
    # turned now, it leans back to the image's way up: the same page is not settled
    after = settle_unturnable(texts2, np.array([0, 0, 1, 0], bool), np.zeros(4, np.int8),
                              [300, 300, 200, 200], [0, 0, 1, 1])
    assert after[2:].tolist() == [UNSETTLED, UNSETTLED]


@pytest.mark.usefixtures("fonts")
def test_pipeline_reads_the_same_with_fewer_columns(pipe, monkeypatch):
    from skiff.kernels.ocr import pipeline as P
    from skiff.kernels.ocr.synth import render_sample

    # pages with clean lines the direction model is unsure of (read twice before), and
    # pages turned upside down (read both ways, and turned)
    images = [render_sample(cat, i, seed=seed).image
              for cat, i, seed in (("noisy", 3, 1), ("clean", 2, 3), ("rotated", 1, 5))]
    read = []
    original = P.OcrPipeline.read_both_ways

    def counting(self, crops, owners, items, flags, settled, texts):
        read.append(len(_would_read(texts, np.asarray(settled))))
        return original(self, crops, owners, items, flags, settled, texts)

    monkeypatch.setattr(P.OcrPipeline, "read_both_ways", counting)
    runs = {}
    for bound in (False, True):
        monkeypatch.setattr(pipe, "bound_turns", bound)
        read.clear()
        results = list(pipe.run(images))
        runs[bound] = ([(r.text, [(ln.text, ln.box) for ln in r.lines]) for r in results],
                       sum(read))
    assert runs[True][0] == runs[False][0]
    assert runs[True][1] < runs[False][1]
