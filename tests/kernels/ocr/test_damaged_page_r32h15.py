"""A PDF with one damaged page (round 32, h15): pdfium's ``PdfiumError`` on loading page 2
killed the loader thread; the job said "done, 1 image read" and page 2 and every page after
it were missing with no error. Now the page gives an error record and the other pages are
read. The PDF is made by Pillow, then page 2's object header garbled (same length, so the
cross-reference table still points at the other pages)."""

from __future__ import annotations

import io

import pytest

from skiff.kernels.ocr.images import ImageError, iter_pages

WORDS = ["Invoice 4821", "Second page", "Total due 17"]


def _pdf(tmp_path, fonts, n: int):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(fonts["latin"], 28)
    pages = []
    for text in WORDS[:n]:
        im = Image.new("RGB", (420, 90), "white")
        ImageDraw.Draw(im).text((20, 25), text, font=face, fill="black")
        pages.append(im)
    buf = io.BytesIO()
    pages[0].save(buf, "PDF", save_all=True, append_images=pages[1:], resolution=150)
    data = buf.getvalue()
    at = data.index(b"\n3 0 obj<<") + 1  # page 2's page object (Pillow: 1, 3, 5 are pages)
    assert b"/Type /Page\n" in data[at:data.index(b"endobj", at)]
    garbled = bytes((b * 37 + 11) % 256 for b in range(12))
    path = tmp_path / f"damaged{n}.pdf"
    path.write_bytes(data[:at] + garbled + data[at + 12:])
    return str(path)


def test_iter_pages_gives_the_damaged_page_as_an_error(tmp_path, fonts):
    path = _pdf(tmp_path, fonts, 3)
    got = list(iter_pages(path, page_errors=True))
    assert [label for _, label in got] == [f"{path}#page={k}" for k in (1, 2, 3)]
    assert isinstance(got[1][0], ImageError)
    assert str(got[1][0]).startswith("page 2 of 'damaged3.pdf' cannot be read (")
    assert got[0][0].shape[2] == got[2][0].shape[2] == 3
    with pytest.raises(ImageError, match="page 2 of 'damaged3.pdf' cannot be read"):
        list(iter_pages(path))  # PdfiumError is no longer what a caller sees


@pytest.mark.parametrize("n", [2, 3])
def test_the_pages_around_a_damaged_one_are_read(tmp_path, fonts, pipe, n):
    path = _pdf(tmp_path, fonts, n)
    results = list(pipe.run([path]))
    assert [r.image for r in results] == [f"{path}#page={k}" for k in range(1, n + 1)]
    assert results[0].error is None and "4821" in results[0].text
    assert results[1].error.startswith(f"page 2 of 'damaged{n}.pdf' cannot be read (")
    assert results[1].error.endswith("; the other pages are read")
    if n == 3:
        assert results[2].error is None and "17" in results[2].text


def test_another_exception_in_the_loader_is_an_error_item(pipe, monkeypatch):
    import numpy as np

    from skiff.kernels.ocr import pipeline

    real = pipeline.iter_pages

    def broken(item, **kw):
        if isinstance(item, str):
            raise KeyError("no such codec")
        return real(item, **kw)

    monkeypatch.setattr(pipeline, "iter_pages", broken)
    page = np.full((60, 200, 3), 255, np.uint8)
    results = list(pipe.run(["x.png", page]))
    assert len(results) == 2 and "KeyError" in results[0].error and results[1].error is None
