"""A heavy check "✔" the recognizer reads as a light "✓" (or "√"), and a light one it drops
and the ink puts back: the weight is the ink's (`symbol_shapes.check_weight`, called by
`marks.tick_marks` for a "✓" first or last in its line, and by `dropped_symbols`). The
oracle is the renderer: each line is drawn with the check it must read as and given as
the recognizer read it (round 43: DejaVu Sans Bold, Sans and Mono read "✔" as "✓" at 22
and 30 px, sharp and as phone photos)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.marks import tick_marks
from skiff.kernels.ocr.symbol_shapes import dropped_symbols

DEJAVU = "/usr/share/fonts/truetype/dejavu/"
SANS, BOLD, MONO = DEJAVU + "DejaVuSans.ttf", DEJAVU + "DejaVuSans-Bold.ttf", \
    DEJAVU + "DejaVuSansMono.ttf"


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


CASES = [(path, px, blur) for path in (SANS, BOLD, MONO) for px in (22, 30)
         for blur in (0.0, 0.8)]


def test_a_heavy_check_read_light_is_written_heavy():
    for path, px, blur in CASES:
        for line, read in [("✔ Book the venue", "✓ Book the venue"),
                           ("✔ Pay the deposit", "√ Pay the deposit"),
                           ("Tests passed ✔", "Tests passed ✓")]:
            assert tick_marks(read, _crop(line, path, px, blur)) == line, (path, px, blur, line)


def test_a_light_check_stays_light():
    for path, px, blur in CASES:
        for line in ("✓ Book the venue", "Tests passed ✓"):
            assert tick_marks(line, _crop(line, path, px, blur)) == line, (path, px, blur)
            assert tick_marks(line.replace("✓", "√"), _crop(line, path, px, blur)) == line
        # dropped by the recognizer: put back light
        crop = _crop("✓ Book the venue", path, px, blur)
        assert dropped_symbols("Book the venue", crop) == "✓ Book the venue", (path, px, blur)


def test_only_a_tick_at_the_lines_edge_and_no_other_glyph():
    # a tick inside the line, a "V" that is no tick, a letter: as read
    crop = _crop("Call ✔ now", BOLD, 30)
    assert tick_marks("Call ✓ now", crop) == "Call ✓ now"
    crop = _crop("V Book the venue", BOLD, 30)
    assert tick_marks("✓ Book the venue", crop) == "✓ Book the venue"
