"""One PDF probe for the page count (``entry.count_pages``), the pages a ``--pages`` spec
picks (``entry.select_pages``) and hOCR's page size (``hocr.page_size``): the oracle is
what Pillow wrote (page count, each page's size in points at the resolution given)."""

from __future__ import annotations

import pytest
from PIL import Image

from skiff.kernels.ocr import entry, hocr, images


@pytest.fixture
def pdf(tmp_path):
    # three pages of different sizes; Pillow writes a page of w x h pixels at `resolution`
    # dpi as w * 72 / resolution points
    pages = [Image.new("RGB", size, "white") for size in ((300, 400), (500, 200), (100, 100))]
    path = tmp_path / "three pages.pdf"
    pages[0].save(path, save_all=True, append_images=pages[1:], resolution=100.0)
    return str(path)


def test_count_and_sizes_from_one_probe(pdf, tmp_path):
    assert images.is_pdf(pdf)
    assert entry.count_pages(pdf) == 3
    # at 200 dpi a page written at 100 dpi is twice its pixels
    assert hocr.page_size(pdf + "#page=1", pdf_dpi=200) == (600, 800)
    assert hocr.page_size(pdf + "#page=2", pdf_dpi=200) == (1000, 400)
    assert hocr.page_size(pdf + "#page=3", pdf_dpi=72) == (72, 72)
    assert hocr.page_size(pdf, pdf_dpi=100) == (300, 400)  # no page: the first
    with images.pdf_document(pdf) as doc:
        assert len(doc) == 3
    assert not images.PDFIUM_LOCK.locked()
    assert entry.select_pages([pdf], "2-") == [pdf + "#page=2", pdf + "#page=3"]


def test_not_a_pdf_and_damaged(tmp_path):
    png = tmp_path / "a.png"
    Image.new("RGB", (40, 30), "white").save(png)
    assert not images.is_pdf(str(png))
    assert entry.count_pages(str(png)) == 1
    assert hocr.page_size(str(png)) == (40, 30)
    missing = str(tmp_path / "gone.pdf")
    assert not images.is_pdf(missing)
    assert entry.count_pages(missing) == 1
    assert hocr.page_size(missing) is None
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(b"%PDF-1.4\n1 0 obj\n")
    assert images.is_pdf(str(cut))
    assert entry.count_pages(str(cut)) == 1  # unreadable: 1, its own error says why
    assert hocr.page_size(str(cut) + "#page=1") is None
    assert not images.PDFIUM_LOCK.locked()  # the lock is let go after a failure


@pytest.mark.parametrize("max_pixels", [None, 1.0e5])
def test_hocr_page_size_is_the_rendered_size(tmp_path, monkeypatch, max_pixels):
    """hOCR's page box is the size the pipeline read the page at (pdfium's own rendering),
    a page over MAX_PIXELS too (rendered smaller: its boxes are in those pixels)."""
    if max_pixels:
        monkeypatch.setattr(images, "MAX_PIXELS", max_pixels)
    path = tmp_path / "odd.pdf"
    Image.new("RGB", (457, 613), "white").save(path, resolution=96.0)  # 342.75 x 459.75 pt
    for dpi in (72, 150, 200):
        bgr, label = next(images.iter_pages(str(path), pdf_dpi=dpi))
        assert hocr.page_size(label, pdf_dpi=dpi) == (bgr.shape[1], bgr.shape[0])
        if max_pixels:
            assert bgr.shape[0] * bgr.shape[1] <= max_pixels * 1.01
