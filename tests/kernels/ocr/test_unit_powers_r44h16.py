"""A unit's power read as a digit ("+7 m2" for "+7 m²") is written raised where its ink
stands raised (round 44, h16: a scanned table's cell of 13-px serif print, the row read
"Area 35 m² 42 m² +7 m2"). Truth: the rendered text; no model is read."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.marks import footnote_marks

FONTS = "/usr/share/fonts/truetype/"
SERIF = FONTS + "liberation2/LiberationSerif-Regular.ttf"
SANS = FONTS + "liberation2/LiberationSans-Regular.ttf"
DEJAVU = FONTS + "dejavu/DejaVuSans.ttf"


def _crop(text: str, path: str, px: int) -> np.ndarray:
    try:
        f = ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")
    im = Image.new("RGB", (int(f.getlength(text)) + 20, int(px * 1.8)), "white")
    ImageDraw.Draw(im).text((10, int(px * 0.4)), text, font=f, fill=0)
    return np.asarray(im)[:, :, ::-1].copy()


@pytest.mark.parametrize("path,px", [(SERIF, 13), (SERIF, 22), (SANS, 16), (DEJAVU, 22)])
@pytest.mark.parametrize("truth,read", [
    ("Area 35 m\u00b2 42 m\u00b2 +7 m\u00b2", "Area 35 m\u00b2 42 m\u00b2 +7 m2"),
    ("Area 35 m\u00b2 42 m\u00b2 +7 m\u00b2", "Area 35 m2 42 m2 +7 m2"),
    ("Volume 3 cm\u00b3", "Volume 3 cm3"),
])
def test_a_raised_power_is_written_raised(path, px, truth, read):
    assert footnote_marks(read, _crop(truth, path, px)) == truth


@pytest.mark.parametrize("path,px", [(SERIF, 13), (SANS, 22)])
@pytest.mark.parametrize("text", ["Room 12 m2", "Zone m2 and m3", "Height 2 m", "Plan B2 5 m"])
def test_a_digit_on_the_line_stays(path, px, text):
    assert footnote_marks(text, _crop(text, path, px)) == text


def _blurred(text: str, px: int, blur: float, up: float) -> np.ndarray:
    """``text`` in Liberation Serif as a scan gives it: blurred, then enlarged as a PDF page
    of 90 dpi is drawn at 200 (the "²" joins its "m": one component)."""
    from PIL import ImageFilter

    try:
        f = ImageFont.truetype(SERIF, px)
    except OSError:
        pytest.skip(f"{SERIF} not installed")
    im = Image.new("L", (int(f.getlength(text)) + 16, int(px * 2)), 255)
    ImageDraw.Draw(im).text((8, int(px * 0.5)), text, font=f, fill=0)
    im = im.filter(ImageFilter.GaussianBlur(blur))
    im = im.resize((int(im.width * up), int(im.height * up)), Image.BICUBIC)
    return np.asarray(im.convert("RGB"))[:, :, ::-1].copy()


@pytest.mark.parametrize("px,blur,up", [(12, 0.6, 1.0), (13, 0.6, 2.2), (13, 0.8, 1.0),
                                        (14, 0.8, 2.2)])
def test_a_power_joined_to_its_unit_at_the_cells_end(px, blur, up):
    crop = _blurred("+7 m\u00b2", px, blur, up)
    assert footnote_marks("+7 m2", crop) == "+7 m\u00b2"


@pytest.mark.parametrize("text", ["+7 m2", "Room 12 m2", "Plan B2", "35 m"])
def test_a_blurred_digit_on_the_line_stays(text):
    assert footnote_marks(text, _blurred(text, 13, 0.8, 2.2)) == text
