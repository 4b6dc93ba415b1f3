"""``skiff.ocr`` on a long PDF or folder keeps the pixels of its first images only; the
others are read again from their files when drawn, at the resolution the run used (the
oracle: pypdfium2's own rendering of the page at that resolution, and the arrays given)."""

from __future__ import annotations

import numpy as np
import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageDraw

from skiff.kernels.ocr import ocr
from skiff.kernels.ocr.pipeline import KEEP_FILE_PIXELS


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    pages = []
    for k in range(KEEP_FILE_PIXELS + 3):
        im = Image.new("RGB", (240, 160), "white")
        ImageDraw.Draw(im).rectangle((10 + 8 * k, 20, 40 + 8 * k, 60), fill=(200, 30, 30))
        pages.append(im)
    path = tmp_path_factory.mktemp("pdf") / "long.pdf"
    pages[0].save(path, save_all=True, append_images=pages[1:], resolution=72.0)
    return str(path)


def _rendered(path, page, dpi):
    doc = pdfium.PdfDocument(path)
    try:
        bitmap = doc[page - 1].render(scale=dpi / 72, fill_color=(255, 255, 255, 255))
        return np.asarray(bitmap.to_pil().convert("RGB"))
    finally:
        doc.close()


def test_a_long_pdf_keeps_few_pages_and_draws_the_others_at_its_dpi(pdf):
    results = ocr(pdf, pdf_dpi=100, threads=1)
    n = KEEP_FILE_PIXELS + 3
    assert len(results) == n
    kept = [r.pixels is not None for r in results]
    assert kept == [True] * KEEP_FILE_PIXELS + [False] * 3
    for k in (1, n):  # a kept page and one read again: both as pypdfium2 renders them
        r = results[k - 1]
        want = _rendered(pdf, k, 100)
        assert tuple(r.size) == want.shape[:2]
        got = r._rgb()
        assert got.shape == want.shape
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 2
    assert results[-1].draw().size == (want.shape[1], want.shape[0])


def test_arrays_keep_their_pixels(pdf):
    arrays = [_rendered(pdf, k, 72) for k in range(1, KEEP_FILE_PIXELS + 3)]
    results = ocr(arrays, threads=1)
    assert all(r.pixels is not None for r in results)
    assert np.array_equal(np.asarray(results[-1].pixels), arrays[-1])


def test_a_changed_file_is_not_drawn_with_old_boxes(tmp_path):
    path = tmp_path / "page.png"
    Image.new("RGB", (200, 100), "white").save(path)
    r = ocr(str(path), threads=1)
    r.pixels = None
    assert r.draw().size == (200, 100)
    Image.new("RGB", (300, 100), "white").save(path)  # overwritten by another image
    with pytest.raises(ValueError, match="no longer the image it read"):
        r.draw()
