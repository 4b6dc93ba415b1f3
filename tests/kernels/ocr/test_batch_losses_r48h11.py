"""A folder batch loses no file for one bad one (round 48 h11).

- A multi-page TIFF with one damaged page: that page is its own error line and the pages after
  it are read (they were lost: the whole file's rest ended at the damaged page).
- A broken link named .png in a folder: an error line that says so (it was left out, unsaid);
  a pipe named .png is named among the skipped files (it was left out, unsaid).
- A PDF whose page list is empty: an error that says so (it said 'Failed to load document
  (PDFium: Success)').

The truth: the pages as drawn (lossless LZW, so decoded pixels equal the drawn ones) and
their text; Pillow and pypdfium2 themselves confirm each file is damaged as meant."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.entry import expand_inputs
from skiff.kernels.ocr.images import ImageError, iter_pages

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
TEXTS = ["Frame text 301", "Frame text 302", "Frame text 303"]


def _page(text: str) -> Image.Image:
    im = Image.new("RGB", (420, 80), "white")
    font = ImageFont.truetype(FONT, 30) if os.path.exists(FONT) else ImageFont.load_default(30)
    ImageDraw.Draw(im).text((20, 22), text, font=font, fill="black")
    return im


@pytest.fixture(scope="module")
def damaged_tiff(tmp_path_factory):
    """Three LZW pages, the second's strip overwritten with noise (a bad copy's damage)."""
    path = tmp_path_factory.mktemp("tiff") / "scan.tif"
    pages = [_page(t) for t in TEXTS]
    pages[0].save(path, save_all=True, append_images=pages[1:], compression="tiff_lzw")
    with Image.open(path) as im:
        im.seek(1)
        offset, count = im.tag_v2[273][0], im.tag_v2[279][0]
    data = bytearray(path.read_bytes())
    data[offset:offset + count] = np.random.default_rng(0).bytes(count)
    path.write_bytes(bytes(data))
    with Image.open(path) as im:  # Pillow: pages 1 and 3 decode, page 2 does not
        assert im.n_frames == 3
        for k in (0, 2):
            im.seek(k)
            im.convert("RGB").load()
        im.seek(1)
        with pytest.raises(OSError):
            im.convert("RGB").load()
    return path, pages


def test_a_damaged_tiff_page_is_one_error_and_the_pages_after_it_are_read(damaged_tiff):
    path, pages = damaged_tiff
    got = list(iter_pages(str(path), page_errors=True))
    assert [label for _, label in got] == [f"{path}#page={k}" for k in (1, 2, 3)]
    for k in (0, 2):  # lossless: the drawn page's pixels exactly (BGR)
        np.testing.assert_array_equal(got[k][0], np.asarray(pages[k])[:, :, ::-1])
    error = got[1][0]
    assert isinstance(error, ImageError)
    assert "page 2 of 'scan.tif' cannot be read" in str(error)
    assert "the other pages are read" in str(error)
    # without page_errors (a page asked alone, a caller of its own) the error is raised
    with pytest.raises(ImageError, match="scan.tif"):
        list(iter_pages(f"{path}#page=2"))


def test_the_batch_reads_the_pages_after_a_damaged_one(damaged_tiff, pipe):
    path, _ = damaged_tiff
    results = list(pipe.run([str(path)]))
    assert [r.image for r in results] == [f"{path}#page={k}" for k in (1, 2, 3)]
    assert [r.error is None for r in results] == [True, False, True]
    assert [results[k].text for k in (0, 2)] == [TEXTS[0], TEXTS[2]]


def test_a_broken_link_is_an_error_line_and_a_pipe_is_named(tmp_path):
    scans = tmp_path / "scans"
    scans.mkdir()
    _page("Sheet 1").save(scans / "a.png")
    os.symlink(tmp_path / "moved.png", scans / "b link.png")
    if hasattr(os, "mkfifo"):
        os.mkfifo(scans / "c pipe.png")
    skipped: list[str] = []
    found = expand_inputs([str(scans)], skipped)
    assert found == [str(scans / "a.png"), str(scans / "b link.png")]
    assert skipped == ([str(scans / "c pipe.png")] if hasattr(os, "mkfifo") else [])
    assert expand_inputs([str(scans / "*.png")]) == found  # a pattern: the link as well
    with pytest.raises(ImageError, match=r"'b link.png' is a link to .*moved.png.*, which "
                                         r"does not exist"):
        list(iter_pages(str(scans / "b link.png"), page_errors=True))


def test_a_pdf_without_pages_says_so(tmp_path):
    import pypdfium2 as pdfium

    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for num, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{num} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 3\n0000000000 65535 f \n" + b"".join(
        f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size 3 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path = tmp_path / "empty.pdf"
    path.write_bytes(bytes(out))
    with pytest.raises(pdfium.PdfiumError):  # pdfium itself refuses it
        pdfium.PdfDocument(str(path))
    # pdfium's last error is global: a damaged file read before leaves "Data format error"
    # (a fresh-clone CI met that order); the page tree itself says there is no page
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4\ngarbage")
    with pytest.raises(pdfium.PdfiumError):
        pdfium.PdfDocument(str(tmp_path / "bad.pdf"))
    with pytest.raises(ImageError) as caught:
        list(iter_pages(str(path), page_errors=True))
    assert "'empty.pdf'" in str(caught.value) and "no page" in str(caught.value)
    assert "Success" not in str(caught.value)


def test_a_file_named_twice_is_read_once(tmp_path, monkeypatch):
    from skiff.kernels.ocr.entry import skipped_line

    scans = tmp_path / "scans"
    scans.mkdir()
    for name in ("p1.png", "p2.png"):
        _page(name).save(scans / name)
    monkeypatch.chdir(tmp_path)
    skipped: list[str] = []
    # a folder, a file in it, a pattern over it, the same file spelt './'
    found = expand_inputs(["scans", "scans/p1.png", "scans/*.png", "./scans/p2.png"], skipped)
    assert found == [os.path.join("scans", "p1.png"), os.path.join("scans", "p2.png")]
    line = skipped_line(skipped)
    assert line == "2 files named more than once, read once: p1.png, p2.png"
    # relative to a job's folder as to the process's: one file still
    assert expand_inputs([str(scans / "p1.png"), "p1.png"], cwd=str(scans)) == \
        [str(scans / "p1.png")]
    # a page of a document named whole before it: in the document's pages already
    _page("one").save(scans / "doc.tif", save_all=True, append_images=[_page("two")])
    again: list[str] = []
    assert expand_inputs(["scans/doc.tif", "scans/doc.tif#page=2"], again) == ["scans/doc.tif"]
    assert skipped_line(again) == "1 file named more than once, read once: doc.tif#page=2"


def test_an_archive_or_office_file_named_as_an_image_says_what_it_is(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "scans.tiff", "w") as z:  # a zipped folder, misnamed
        z.writestr("page1.png", b"not read")
    with zipfile.ZipFile(tmp_path / "letter.png", "w") as z:  # a Word file, misnamed
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", "<w:document/>")
    assert zipfile.is_zipfile(tmp_path / "scans.tiff") and zipfile.is_zipfile(
        tmp_path / "letter.png")
    with pytest.raises(ImageError, match=r"'scans.tiff' as an image: it is a ZIP archive, not "
                                         r"an image or PDF: unpack it"):
        list(iter_pages(str(tmp_path / "scans.tiff")))
    with pytest.raises(ImageError, match=r"it is an Office document \(.docx, .xlsx, .pptx\)"):
        list(iter_pages(str(tmp_path / "letter.png")))
