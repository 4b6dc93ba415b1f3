"""A product label's name in Chinese with its English after it, "有机绿茶 Organic Green
Tea", set as one line in Liberation Mono (and WenQuanYi Zen Hei), was read "有机绿茶 organic
Green Tea": the capital "O" and the small "o" of a monospaced face share one shape, and the
line's CJK characters (several components each) kept `letter_case` from pairing the
crop's glyphs with the reading's letters at all. The Latin words that end such a line are
now looked at on their own (`letter_case._latin_tail`). The oracle is the renderer: the
line is drawn with the case it must read with."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.letter_case import letter_case

T = "/usr/share/fonts/truetype"
FACES = {"mono": (f"{T}/liberation2/LiberationMono-Regular.ttf", f"{T}/wqy/wqy-zenhei.ttc"),
         "dejavu": (f"{T}/dejavu/DejaVuSansMono.ttf",
                    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")}


def _crop(cjk: str, latin: str, faces, px: int, big: int):
    """A label's line: ``cjk`` at ``big`` px, then ``latin`` at ``px``, cropped to its ink
    with a margin (as the detector boxes it)."""
    mono, han = faces
    if not (os.path.exists(mono) and os.path.exists(han)):
        pytest.skip("a face is not installed")
    fm, fh = ImageFont.truetype(mono, px), ImageFont.truetype(han, big)
    im = Image.new("L", (80 + int(fh.getlength(cjk) + fm.getlength(latin)) + 40, 2 * big), 250)
    d = ImageDraw.Draw(im)
    d.text((10, big), cjk, font=fh, fill=20, anchor="ls")
    d.text((10 + fh.getlength(cjk) + px, big), latin, font=fm, fill=20, anchor="ls")
    a = np.asarray(im)
    rows, cols = np.flatnonzero((a < 128).any(1)), np.flatnonzero((a < 128).any(0))
    a = a[max(0, rows[0] - 4):rows[-1] + 5, max(0, cols[0] - 4):cols[-1] + 5]
    return np.repeat(a[..., None], 3, 2)


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("px,big", [(24, 44), (30, 36)])
def test_the_english_name_keeps_its_capital(face, px, big):
    crop = _crop("有机绿茶", "Organic Green Tea", FACES[face], px, big)
    assert letter_case("有机绿茶 organic Green Tea", crop) == "有机绿茶 Organic Green Tea"
    assert letter_case("有机绿茶 Organic Green Tea", crop) == "有机绿茶 Organic Green Tea"


@pytest.mark.parametrize("face", FACES)
def test_small_letters_stay_small(face):
    crop = _crop("绿茶", "organic tea, loose", FACES[face], 24, 44)
    assert letter_case("绿茶 organic tea, loose", crop) == "绿茶 organic tea, loose"
    crop = _crop("绿茶", "Organic tea, loose", FACES[face], 24, 44)
    assert letter_case("绿茶 Organic tea, loose", crop) == "绿茶 Organic tea, loose"
