"""Round 31 (h14): one image, one error, one line are said in the singular ("1 images, 1
errors" before). The oracle is the count itself: each figure printed is followed by the
singular noun exactly when it is 1."""

from __future__ import annotations

import re

import numpy as np
import pytest

from skiff.kernels.aero.sweep import Samples
from skiff.kernels.ocr.entry import OcrRun
from skiff.kernels.ocr.result import OcrResult, OcrResults


def _nouns(text: str) -> dict:
    return {m.group(2): int(m.group(1))
            for m in re.finditer(r"(\d+) (images?|errors?|lines?|shapes?|process(?:es)?)\b",
                                 text)}


def _agree(found: dict) -> None:
    for noun, n in found.items():
        singular = not noun.endswith("s") or noun == "process"
        assert singular == (n == 1), (noun, n)


@pytest.mark.parametrize("n", [1, 2])
def test_ocr_counts_agree_with_their_nouns(n):
    results = OcrResults([OcrResult(image=f"x{i}.png", error="unreadable") for i in range(n)])
    run = OcrRun(results, images=n, errors=n, lines=n, seconds=0.5, out=None, device="cpu",
                 model="mobile")
    for text in (repr(run), run._repr_html_(), results._repr_html_()):
        found = _nouns(re.sub(r"<[^>]+>", "", text))
        assert {"image", "images"} & set(found)
        _agree(found)


@pytest.mark.parametrize("workers", [1, 3])
def test_a_sweep_on_one_process_says_process(workers):
    k = 1 if workers == 1 else 2
    s = Samples(params=np.ones((k, 3)), cd=np.ones(k), cl=np.ones(k), cells=np.ones(k),
                seconds=np.ones(k), domain={}, re=1000.0, workers=workers)
    found = _nouns(repr(s))
    assert set(found) >= {"process" if workers == 1 else "processes"}
    _agree(found)
