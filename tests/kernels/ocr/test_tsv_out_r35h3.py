"""``--out FILE.tsv`` (round 35): Tesseract's TSV, what pytesseract's ``image_to_data``
gives and its users load with pandas. The oracles: Tesseract 5 itself (its header and the
structure of its rows, where ``tesseract`` is installed), and the page as drawn (each
word's box over the ink Pillow drew it with, the words in reading order)."""

from __future__ import annotations

import csv
import shutil
import subprocess

import pytest

from skiff.kernels.ocr.entry import run
from skiff.kernels.ocr.hocr import TSV_HEADER

from .test_entry import ListReporter

ROWS = [["Date", "Description", "Amount"], ["04 Nov", "Rent", "(1,250.00)"],
        ["19 Nov", "Insurance", "(118.40)"]]


def _render(path):
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 24)
    im = Image.new("RGB", (700, 220), "white")
    draw = ImageDraw.Draw(im)
    inks = []
    for r, row in enumerate(ROWS):
        for c, cell in enumerate(row):
            x = (30, 200, 640)[c] - (draw.textlength(cell, font=font) if c == 2 else 0)
            for word in cell.split():
                at = (x, 30 + 60 * r)
                draw.text(at, word, font=font, fill="black")
                inks.append((word, draw.textbbox(at, word, font=font)))
                x += draw.textlength(word + " ", font=font)
    im.save(path)
    return inks


def _table(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_tsv_levels_and_word_boxes(tmp_path, fonts):
    inks = _render(tmp_path / "bank.png")
    (tmp_path / "empty.png").write_bytes(b"")
    out = tmp_path / "bank.tsv"
    run({"inputs": [str(tmp_path / "bank.png"), str(tmp_path / "empty.png")],
         "device": "cpu", "out": str(out), "threads": 1, "overlays": 0}, ListReporter())
    rows = _table(out)
    assert tuple(rows[0]) == TSV_HEADER
    body = [dict(zip(TSV_HEADER, r, strict=True)) for r in rows[1:]]
    pages = [r for r in body if r["level"] == "1"]
    assert [(p["page_num"], p["width"], p["height"]) for p in pages] == \
        [("1", "700", "220"), ("2", "0", "0")]
    words = [r for r in body if r["level"] == "5"]
    assert [w["text"] for w in words] == [w for w, _ in inks]
    lines = [r for r in body if r["level"] == "4"]
    assert len(lines) == len(ROWS)
    assert all(float(r["conf"]) == -1 and r["text"] == "" for r in body if r["level"] != "5")
    for w, (_, (x0, y0, x1, y1)) in zip(words, inks, strict=True):
        left, top = int(w["left"]), int(w["top"])
        right, bottom = left + int(w["width"]), top + int(w["height"])
        assert 0 < float(w["conf"]) <= 100
        assert min(x1, right) - max(x0, left) >= 0.6 * (x1 - x0), (w, (x0, x1))
        assert top <= y0 + 4 and bottom >= y1 - 4
        # its line's box holds it
        line = next(r for r in lines if r["line_num"] == w["line_num"])
        assert int(line["left"]) <= left and right <= int(line["left"]) + int(line["width"])


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract not installed")
def test_tsv_reads_as_tesseracts_does(tmp_path, fonts):
    """The same header and the same kinds of rows as ``tesseract img out tsv``: a script
    written for Tesseract's table (pytesseract's ``image_to_data``) reads skiff's."""
    _render(tmp_path / "bank.png")
    subprocess.run(["tesseract", str(tmp_path / "bank.png"), str(tmp_path / "t"), "tsv"],
                   check=True, capture_output=True, timeout=120)
    theirs = _table(tmp_path / "t.tsv")
    run({"inputs": [str(tmp_path / "bank.png")], "device": "cpu",
         "out": str(tmp_path / "s.tsv"), "threads": 1, "overlays": 0}, ListReporter())
    ours = _table(tmp_path / "s.tsv")
    assert ours[0] == theirs[0]
    for table in (ours, theirs):
        assert {r[0] for r in table[1:]} == {"1", "2", "3", "4", "5"}
        assert all(len(r) == len(theirs[0]) for r in table)
    assert ours[1][:10] == theirs[1][:10]  # the page's row: its size
    def text(table):
        return [r[-1] for r in table[1:] if r[0] == "5"]
    assert " ".join(text(ours)) == " ".join(w for row in ROWS for c in row for w in c.split())
    assert len(text(theirs)) >= 6


def test_python_api_writes_tsv_and_hocr(tmp_path, fonts):
    """``skiff.ocr(array).write_tsv(path)`` as a pytesseract user would call
    ``image_to_data``: the page is the array's size (no file to measure), words as drawn."""
    import numpy as np
    from PIL import Image

    from skiff.kernels.ocr import ocr

    inks = _render(tmp_path / "bank.png")
    rgb = np.asarray(Image.open(tmp_path / "bank.png").convert("RGB"))
    result = ocr(rgb, threads=1)
    rows = _table(result.write_tsv(tmp_path / "a.tsv"))
    assert rows[1][:10] == ["1", "1", "0", "0", "0", "0", "0", "0", "700", "220"]
    assert [r[-1] for r in rows[1:] if r[0] == "5"] == [w for w, _ in inks]
    text = open(ocr([rgb, rgb], threads=1).write_hocr(tmp_path / "a.hocr"),
                encoding="utf-8").read()
    assert text.count('class="ocr_page"') == 2 and "bbox 0 0 700 220" in text
