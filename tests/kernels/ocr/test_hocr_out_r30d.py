"""``--out FILE.hocr`` (round 30, a user's folders): hOCR as Tesseract writes it, for tools
that make scans searchable. Read back with the standard library's XML parser: a page per
image with the size of the image as shown (an EXIF-turned photo's turned size, as Pillow's
``exif_transpose`` gives it), a line per row, and each word rendered there with a box over
the ink Pillow drew it with."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from skiff.kernels.ocr.entry import run

from .test_entry import ListReporter

ROWS = [["Invoice 4821", "Total 96.50"], ["Street address 17"]]
NS = "{http://www.w3.org/1999/xhtml}"


def _render(path, turn: bool):
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 26)
    im = Image.new("RGB", (640, 150), "white")
    draw = ImageDraw.Draw(im)
    inks = {}
    for r, row in enumerate(ROWS):
        x = 30
        for cell in row:
            for word in cell.split():
                draw.text((x, 30 + 60 * r), word, font=font, fill="black")
                inks[word] = draw.textbbox((x, 30 + 60 * r), word, font=font)
                x += draw.textlength(word + " ", font=font)
            x += 160
    if turn:  # stored a quarter turn back, shown upright by its EXIF orientation 6
        exif = Image.Exif()
        exif[0x0112] = 6
        im.rotate(90, expand=True).save(path, quality=95, exif=exif)
    else:
        im.save(path)
    return inks


def _title(node) -> dict:
    parts = [p.strip().split(" ", 1) for p in node.get("title", "").split(";")]
    return {k: v for k, v in parts}


def test_hocr_pages_lines_and_words_with_their_boxes(tmp_path, fonts):
    from PIL import Image, ImageOps

    inks = _render(tmp_path / "a.png", turn=False)
    _render(tmp_path / "b photo.jpg", turn=True)
    (tmp_path / "c.png").write_bytes(b"")
    out = tmp_path / "scans.hocr"
    run({"inputs": [str(tmp_path)], "device": "cpu", "out": str(out), "threads": 1,
         "overlays": 0}, ListReporter())
    root = ET.parse(out).getroot()  # well-formed XHTML
    pages = [d for d in root.iter(f"{NS}div") if d.get("class") == "ocr_page"]
    assert len(pages) == 3
    for page, name in zip(pages, ("a.png", "b photo.jpg", "c.png"), strict=True):
        title = _title(page)
        assert title["image"] == f'"{tmp_path / name}"'
        if name != "c.png":
            with Image.open(tmp_path / name) as im:
                shown = ImageOps.exif_transpose(im).size
            assert title["bbox"] == f"0 0 {shown[0]} {shown[1]}"
        lines = [s for s in page.iter(f"{NS}span") if s.get("class") == "ocr_line"]
        words = [[w.text for w in line if w.get("class") == "ocrx_word"] for line in lines]
        if name == "c.png":
            assert words == []
            continue
        assert words == [" ".join(row).split() for row in ROWS]
        if name != "a.png":
            continue
        for line in lines:
            lx0, ly0, lx1, ly1 = map(int, _title(line)["bbox"].split())
            for word in line:
                x0, y0, x1, y1 = map(int, _title(word)["bbox"].split())
                assert lx0 <= x0 < x1 <= lx1 and ly0 <= y0 < y1 <= ly1
                assert 0 < int(_title(word)["x_wconf"]) <= 100
                ix0, iy0, ix1, iy1 = inks[word.text]
                cover = max(0, min(x1, ix1) - max(x0, ix0)) / (ix1 - ix0)
                assert cover > 0.6 and y0 <= iy1 and iy0 <= y1, (word.text, cover)
