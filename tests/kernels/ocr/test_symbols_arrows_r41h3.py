"""Round 41 (h3): an arrow the detector leaves unboxed between two boxes of a row
(`arrows.row_arrows`): a boarding pass's "HAM → LHR" read "HAM LHR".

The oracle is the renderer: each row is drawn with PIL, and the two boxes are the ink
extents PIL gives for the words on either side (as the detector boxes them)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.arrows import row_arrows

FONTS = "/usr/share/fonts/"
SANS_BOLD = FONTS + "truetype/dejavu/DejaVuSans-Bold.ttf"
SANS = FONTS + "truetype/dejavu/DejaVuSans.ttf"
SERIF = FONTS + "truetype/dejavu/DejaVuSerif.ttf"
MONO = FONTS + "truetype/dejavu/DejaVuSansMono.ttf"
CJK = FONTS + "opentype/noto/NotoSansCJK-Regular.ttc"


def face(path: str, px: int):
    try:
        return ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")


def row(left: str, mid: str, right: str, path: str, px: int, blur: float = 0.0,
        ground=(255, 255, 255), ink=(0, 0, 0), rule: bool = False):
    """``left mid right`` drawn with a wide blank on both sides of ``mid``; the boxes of
    ``left`` and ``right`` (their ink extents, 2 px out) and the image (BGR)."""
    f = face(path, px)
    im = Image.new("RGB", (int(f.getlength(left + right)) + 6 * px, 3 * px), ground)
    d = ImageDraw.Draw(im)
    x0, y = 20, px
    d.text((x0, y), left, font=f, fill=ink)
    xm = x0 + d.textlength(left, font=f) + 0.6 * px
    d.text((xm, y), mid, font=f, fill=ink)
    xr = xm + d.textlength(mid, font=f) + 0.8 * px
    d.text((xr, y), right, font=f, fill=ink)
    if rule:
        d.line((10, y + px // 2, im.width - 10, y + px // 2), fill=ink, width=1)
    if blur:
        im = im.filter(ImageFilter.GaussianBlur(blur))
    boxes = []
    for x, t in ((x0, left), (xr, right)):
        l_, t_, r_, b_ = d.textbbox((x, y), t, font=f)
        boxes.append(np.array([[l_ - 2, t_ - 2], [r_ + 2, t_ - 2], [r_ + 2, b_ + 2],
                               [l_ - 2, b_ + 2]], np.float32))
    return boxes, np.asarray(im)[:, :, ::-1].copy()


@pytest.mark.parametrize("blur", [0.0, 0.8])
@pytest.mark.parametrize(("path", "px"), [(SANS_BOLD, 52), (SANS, 30), (SERIF, 26),
                                          (MONO, 24), (CJK, 32)])
@pytest.mark.parametrize("arrow", ["\u2192", "\u2190"])
def test_arrow_between_boxes_is_read(path, px, blur, arrow):
    boxes, bgr = row("HAM", arrow, "LHR", path, px, blur)
    assert row_arrows([[0, 1]], boxes, ["HAM", "LHR"], bgr) == ["HAM", f"{arrow} LHR"]


def test_light_arrow_on_dark_ground():
    boxes, bgr = row("Berlin", "\u2192", "Paris", SANS, 30, 0.8, ground=(20, 40, 90),
                     ink=(240, 240, 240))
    assert row_arrows([[0, 1]], boxes, ["Berlin", "Paris"], bgr) == ["Berlin", "\u2192 Paris"]


@pytest.mark.parametrize("mid", ["\u2014", "-", "=", "+", ">", "\u00bb", "~", "\u2022", "x",
                                 "\u21c4", "|", ""])
@pytest.mark.parametrize(("path", "px"), [(SANS_BOLD, 40), (SERIF, 26)])
def test_no_arrow_no_change(mid, path, px):
    """A dash, an equals sign, a chevron, a bullet, a letter or nothing between: as read."""
    boxes, bgr = row("Total", mid, "42.00", path, px)
    assert row_arrows([[0, 1]], boxes, ["Total", "42.00"], bgr) == ["Total", "42.00"]


def test_a_rule_through_the_gap_and_a_read_arrow_stay():
    boxes, bgr = row("Total", "", "42.00", SANS, 30, rule=True)
    assert row_arrows([[0, 1]], boxes, ["Total", "42.00"], bgr) == ["Total", "42.00"]
    boxes, bgr = row("HAM", "\u2192", "LHR", SANS, 30)
    assert row_arrows([[0, 1]], boxes, ["HAM \u2192", "LHR"], bgr) == ["HAM \u2192", "LHR"]
    assert row_arrows([[0], [1]], boxes, ["HAM", "LHR"], bgr) == ["HAM", "LHR"]
