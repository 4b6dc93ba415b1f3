"""hOCR of pages read turned: words laid along the line, and Tesseract's ``textangle``.

Round 34 (h3): a 3-page PDF with a Helvetica text layer, page 2 stored with ``/Rotate 90``
and page 3 drawn upside down, read right ("Appendix A: Shipments" ...), but
``--out x.hocr`` cut each standing line's box across its width for its words ("Appendix"
1915-1954 x 187-1022 of a line 103 px wide and 835 tall) and laid an upside-down line's
words left to right. The oracle is the PDF's own text layer, as pdfium places its
characters on the rendered page."""

from __future__ import annotations

import re

import numpy as np
import pytest

from skiff.kernels.ocr.hocr import _words, write_hocr


def _pdf(path, pages):
    """A PDF of ``pages`` ``(rotate, flip, lines)``: Helvetica text at 72 dpi on US letter,
    ``flip`` drawing it turned 180 degrees."""
    objs = []

    def add(b):
        objs.append(b)
        return len(objs)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    pages_id = 1 + 2 * len(pages) + 1
    kids = []
    for rot, flip, lines in pages:
        ops = []
        for i, t in enumerate(lines):
            x, y, size = 72, 700 - 40 * i, 20
            m = f"-1 0 0 -1 {612 - x} {792 - y}" if flip else f"1 0 0 1 {x} {y}"
            ops.append(f"BT /F1 {size} Tf {m} Tm ({t}) Tj ET")
        body = "\n".join(ops).encode()
        c = add(b"<< /Length %d >>\nstream\n" % len(body) + body + b"\nendstream")
        kids.append(add(f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 612 792] "
                        f"/Rotate {rot} /Resources << /Font << /F1 {font} 0 R >> >> "
                        f"/Contents {c} 0 R >>".encode()))
    assert add(b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids) +
               b"] /Count %d >>" % len(kids)) == pages_id
    root = add(f"<< /Type /Catalog /Pages {pages_id} 0 R >>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offs = []
    for i, o in enumerate(objs, 1):
        offs.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offs)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objs) + 1, root, xref)
    path.write_bytes(bytes(out))


def _word_places(path, page, scale):
    """Each word of the PDF page's text layer with the middle of its characters' boxes in
    the rendered page's pixels (pdfium applies the page's /Rotate)."""
    pdfium = pytest.importorskip("pypdfium2")
    doc = pdfium.PdfDocument(str(path))
    pg = doc[page]
    tp = pg.get_textpage()
    text = tp.get_text_range()
    W, H = pg.get_size()
    rot = pg.get_rotation()
    out = []
    for m in re.finditer(r"\S+", text):
        xs, ys = [], []
        for k in range(m.start(), m.end()):
            l, b, r, t = tp.get_charbox(k)
            for x, y in ((l, b), (r, t)):
                # page space (origin bottom left) -> the rendered image, turned by /Rotate
                px, py = x, H - y
                if rot == 90:  # turned clockwise: the page's top to the right
                    px, py = y, x
                xs.append(px * scale)
                ys.append(py * scale)
        out.append((m.group(), (np.mean(xs), np.mean(ys))))
    return out


def _hocr_words(text):
    return [(w, tuple(int(v) for v in b.split()))
            for b, w in re.findall(r'class="ocrx_word"[^>]*title="bbox ([0-9 ]+);[^"]*">([^<]*)<',
                                   text)]


def test_words_follow_the_reading_direction():
    words = _words("ab cd", [0, 0, 50, 10], 0)
    assert words == [("ab", [0, 0, 20, 10]), ("cd", [30, 0, 50, 10])]
    assert _words("ab cd", [0, 0, 50, 10], 180) == [("ab", [30, 0, 50, 10]),
                                                     ("cd", [0, 0, 20, 10])]
    assert _words("ab cd", [0, 0, 10, 50], 270) == [("ab", [0, 0, 10, 20]),
                                                     ("cd", [0, 30, 10, 50])]
    assert _words("ab cd", [0, 0, 10, 50], 90) == [("ab", [0, 30, 10, 50]),
                                                    ("cd", [0, 0, 10, 20])]


def test_turned_pdf_pages_place_their_words(tmp_path):
    from skiff.kernels.ocr import OcrPipeline

    lines = ["Appendix A: Shipments", "Region North South", "Totals for the year"]
    pdf = tmp_path / "turned.pdf"
    _pdf(pdf, [(0, False, lines), (90, False, lines), (0, True, lines)])
    dpi = 110  # 20 pt print at 30 px: small pages, read fast
    results = list(OcrPipeline("ch", device="cpu", threads=2, pdf_dpi=dpi).run([str(pdf)]))
    out = write_hocr([r.to_json() for r in results], str(tmp_path / "x.hocr"), pdf_dpi=dpi)
    text = open(out, encoding="utf-8").read()
    pages = text.split('class="ocr_page"')[1:]
    assert len(pages) == 3
    assert "textangle" not in pages[0]
    assert "textangle 270" in pages[1] and "textangle 180" in pages[2]
    scale = dpi / 72
    for k, page in enumerate(pages):
        got = _hocr_words(page)
        assert [w for w, _ in got] == " ".join(lines).split()
        if k == 2:
            continue  # pdfium's char boxes of a text matrix turned 180: not used as truth
        truth = dict(_word_places(pdf, k, scale))  # the words are unique; pdfium lists a
        assert sorted(truth) == sorted(w for w, _ in got)  # turned page's lines bottom up
        for w, (x0, y0, x1, y1) in got:
            cx, cy = truth[w]
            # each word's box holds the middle of the word the text layer places there
            assert x0 - 4 <= cx <= x1 + 4 and y0 - 4 <= cy <= y1 + 4, (k, w)
    # the upside-down page: its first word at the right of its line, the last at the left
    got = _hocr_words(pages[2])
    assert got[0][1][0] > got[2][1][0]
