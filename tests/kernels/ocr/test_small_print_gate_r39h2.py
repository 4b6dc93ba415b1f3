"""Round 39 (h2): the small-print recognizer (round 38's second opinion for unsure small CJK
lines) reads lines of labels (images no larger than half the detector's limit), of noisy
images and of denoised copies, not of large clean pages: on the speed folder
(``bench_ocr.py --per-category 8``) it was made for one turned line of the clean 1017-px page
``rotated-002-mixed`` and changed no text, for ~0.2-0.5 CPU s and +37-48 MiB RSS. Every
hard-tier and unseen-face image is at most 401 px, so neither set can read otherwise.
Oracles: the rendered page read with ``reading.SMALL_PRINT`` off (the same text, and no
adapted engine made), and ``denoise.noise_sigma`` of numpy noise of a known sigma."""

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from skiff.kernels.ocr import OcrPipeline, reading  # noqa: E402
from skiff.kernels.ocr.denoise import NOISY, noise_sigma  # noqa: E402
from skiff.kernels.ocr.item import Item  # noqa: E402


def test_which_pages_the_small_print_opinion_reads():
    pipe = OcrPipeline("ch", device="cpu", threads=1)
    half = pipe.params.limit / 2
    page = np.full((223, 1017, 3), 255, np.uint8)
    noisy = np.clip(page + np.random.default_rng(0).normal(0, 20, page.shape), 0, 255)
    noisy = noisy.astype(np.uint8)
    assert noise_sigma(page) < NOISY <= noise_sigma(noisy)
    label = np.full((200, int(half)), 255, np.uint8)[..., None].repeat(3, 2)
    wide = np.full((200, int(half) + 1, 3), 255, np.uint8)
    assert not pipe._small_print_page(Item(0, "page", page))  # large, clean
    assert pipe._small_print_page(Item(0, "noisy", noisy))
    assert pipe._small_print_page(Item(-1, "page, denoised", page))
    assert pipe._small_print_page(Item(0, "label", label))
    assert not pipe._small_print_page(Item(0, "wider", wide))


def test_a_large_clean_page_reads_as_without_it_and_makes_no_engine(fonts, monkeypatch):
    from skiff.kernels.ocr.synth import render_sample

    image = render_sample("rotated", 2, seed=1).image  # the speed folder's rotated-002-mixed
    assert max(image.shape[:2]) > 480
    pipe = OcrPipeline("ch", device="cpu", threads=1)
    # the unsure line is a turned reading (read_both_ways): since round 43 one this far under
    # its upright reading gets no second looks at all (reading.TURNED_LOOK); every turned
    # reading looked at, as before, for this page's gate to be asked
    monkeypatch.setattr(reading, "TURNED_LOOK", 10.0)
    made = []
    real = type(pipe)._small_print_engine
    monkeypatch.setattr(type(pipe), "_small_print_engine",
                        lambda self: made.append(1) or real(self))
    asked = []
    real_page = type(pipe)._small_print_page
    monkeypatch.setattr(type(pipe), "_small_print_page",
                        lambda self, it: asked.append(it.index) or real_page(self, it))
    assert pipe(image).text.strip()
    assert made == []
    # it was asked (an unsure small CJK line) and said no: the page read as without it (the
    # engine is the one way reading.SMALL_PRINT changes a text; round 42 dropped the second
    # whole read with it off, 1017 px, to pay for test_twins_r42h1.py)
    assert asked and reading.SMALL_PRINT
