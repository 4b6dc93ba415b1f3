"""Round 44 (h22): a tick under 10 px read "/" (issue 14: "✓ Paid" in DejaVu Sans at 9 and
10 px read "/ Paid" by the pipeline). The drawn "✓" is the oracle, the recognizer's "/"
the reading given; a slash drawn before a word stays."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.marks import tick_marks

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
DEJAVU_MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
LIB_SANS = "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf"


def crop(text: str, path: str, px: int) -> np.ndarray:
    f = ImageFont.truetype(path, px)
    im = Image.new("RGB", (int(f.getlength(text)) + 4 * px, 3 * px), "white")
    ImageDraw.Draw(im).text((2 * px, int(1.5 * px)), text, font=f, fill=0, anchor="lm")
    return np.asarray(im)


@pytest.mark.parametrize(("path", "px"), [
    (DEJAVU, 8), (DEJAVU, 9), (DEJAVU, 10), (DEJAVU, 12), (DEJAVU_MONO, 10)])
def test_a_small_tick_read_as_a_slash(path, px):
    assert tick_marks("/ Paid", crop("✓ Paid", path, px)) == "✓ Paid"


@pytest.mark.parametrize("path", [DEJAVU, DEJAVU_MONO, LIB_SANS])
@pytest.mark.parametrize("px", [8, 10, 16])
def test_a_slash_before_a_word_stays(path, px):
    for text in ("/ Paid", "/ home"):
        assert tick_marks(text, crop(text, path, px)) == text
