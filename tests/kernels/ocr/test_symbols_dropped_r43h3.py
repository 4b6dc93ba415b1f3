"""A telephone, an envelope, a heavy check the recognizer drops from its line ("☎ 010-6234
5678" read "010-6234 5678": it gives "☎", "✉", "✔" 0.000 in every column, round 42), put
back where the ink's glyph correlates with the symbol rendered in the installed fonts
(`symbol_shapes.dropped_symbols`). The oracle is the renderer: each line is drawn with the
text it must read as, and given as the recognizer reads it (the symbol left out)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.symbol_shapes import dropped_symbols, shape_symbol

DEJAVU = "/usr/share/fonts/truetype/dejavu/"
SANS, BOLD, MONO = DEJAVU + "DejaVuSans.ttf", DEJAVU + "DejaVuSans-Bold.ttf", \
    DEJAVU + "DejaVuSansMono.ttf"
SERIF = "/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf"


def _crop(text, path, px, blur=0.0):
    try:
        face = ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"font {path} missing")
    im = Image.new("L", (int(face.getlength(text)) + px, int(px * 1.6)), 255)
    ImageDraw.Draw(im).text((px // 2, px // 4), text, font=face, fill=0)
    if blur:
        im = im.filter(ImageFilter.GaussianBlur(blur))
    return np.asarray(im.convert("RGB"))


LINES = ["☎ 010-6234 5678", "✉ info@example.com", "Tests passed ✔", "Call ☎ now", "✔ Milk"]


@pytest.mark.parametrize("path,px,blur", [(SANS, 22, 0.0), (BOLD, 30, 0.8), (MONO, 30, 0.0)])
def test_a_dropped_symbol_is_put_back(path, px, blur):
    for line in LINES:
        read = " ".join(w for w in line.split() if w not in "☎✉✔")
        assert dropped_symbols(read, _crop(line, path, px, blur)) == line, (path, px, line)


@pytest.mark.parametrize("path", [SANS, BOLD, SERIF])
def test_no_symbol_where_none_was_drawn(path):
    for line in ["Zone 8 nominal", "Call us now", "Mail: info@example.com", "Mon 8:00-18:00",
                 "010-6234 5678", "n = 4 nodes", "ZIP 90210", "W x H: 30 x 20 cm"]:
        for px in (18, 30):
            crop = _crop(line, path, px)
            assert dropped_symbols(line, crop) == line, (path, px, line)
            # a word the reading left out is no symbol either
            short = line.split(" ", 1)[1]
            assert dropped_symbols(short, crop) == short, (path, px, line)


def test_marks_that_are_no_such_symbol():
    # a check box, a crossed box, a light tick read as such, a star: not an envelope, a
    # telephone or a heavy check (a light tick read "✓" stays as read)
    for line, read in [("☐ Milk", "☐ Milk"), ("☒ Milk", "☒ Milk"), ("✓ done", "✓ done"),
                       ("★ 4.5", "★ 4.5")]:
        assert dropped_symbols(read, _crop(line, SANS, 26)) == read, line
    # a light tick the reading left out is put back light (bench_ocr_everyday's to-do list
    # as a phone photo: "Renew passport" of "✓ Renew passport")
    assert dropped_symbols("done", _crop("✓ done", SANS, 26)) == "✓ done"
    for ch in "☐☒★♥8ZnmwM@":
        crop = _crop(ch, SANS, 40)
        assert shape_symbol(crop[..., 0] < 128) is None, ch
