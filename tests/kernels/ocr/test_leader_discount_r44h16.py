"""A receipt's discount line, its price negative: the leader's first dot read onto the name
("Discount. -0.50") goes as it does before a price (round 44, h16: a scanned receipt,
"Discount ........ -0.50" in Liberation Sans at 14 px, read "Discount. -0.50"). Truth: the
rendered name and price; no model is read."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.panels import leader_stubs

FONTS = "/usr/share/fonts/truetype/"
LIB_SANS = FONTS + "liberation2/LiberationSans-Regular.ttf"
LIB_MONO = FONTS + "liberation2/LiberationMono-Regular.ttf"
DEJAVU = FONTS + "dejavu/DejaVuSans.ttf"


def _face(path: str, px: int):
    try:
        return ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")


def _row(name: str, price: str, path: str, px: int):
    """The name, its price flush right and a dotted leader between, the name's box taking
    the leader's first dot (as the recognizer read it) and the price's box apart."""
    f = _face(path, px)
    im = Image.new("RGB", (560, 3 * px), (252, 250, 245))
    d = ImageDraw.Draw(im)
    x0, x1, y = 20, 540, px
    d.text((x0, y), name, font=f, fill=(40, 30, 20))
    w = d.textlength(price, font=f)
    d.text((x1 - w, y), price, font=f, fill=(40, 30, 20))
    dot = d.textlength(". ", font=f)
    x, first = x0 + d.textlength(name, font=f) + dot, None
    while x < x1 - w - dot:
        d.text((x, y), ".", font=f, fill=(90, 80, 70))
        first = first or d.textbbox((x, y), ".", font=f)
        x += dot
    a = d.textbbox((x0, y), name, font=f)
    b = d.textbbox((x1 - w, y), price, font=f)

    def box(left, top, right, bottom):
        return np.array([[left - 2, top - 3], [right + 2, top - 3], [right + 2, bottom + 3],
                         [left - 2, bottom + 3]], np.float32)
    return np.asarray(im)[:, :, ::-1].copy(), [box(a[0], a[1], first[2] + 1, a[3]), box(*b)]


@pytest.mark.parametrize("price", ["-0.50", "\u22122.00", "-\u20ac1.20"])
@pytest.mark.parametrize("path", [LIB_SANS, DEJAVU])
def test_a_discounts_leader_dot_goes(path, price):
    image, boxes = _row("Discount", price, path, 20)
    assert leader_stubs([[0, 1]], boxes, ["Discount.", price], image) == ["Discount", price]


def test_one_box_reading_of_a_discount():
    text = "Voucher " + "." * 12 + " -2.00"
    f = _face(LIB_MONO, 18)
    im = Image.new("RGB", (420, 60), (252, 250, 245))
    d = ImageDraw.Draw(im)
    d.text((20, 20), text, font=f, fill=(30, 30, 30))
    x0, y0, x1, y1 = d.textbbox((20, 20), text, font=f)
    box = np.array([[x0 - 3, y0 - 4], [x1 + 3, y0 - 4], [x1 + 3, y1 + 4], [x0 - 3, y1 + 4]],
                   np.float32)
    image = np.asarray(im)[:, :, ::-1].copy()
    assert leader_stubs([[0]], [box], ["Voucher. -2.00"], image) == ["Voucher -2.00"]


def test_a_word_before_a_minus_that_is_no_price_keeps_its_point():
    # "Fig. -3" is no name before its leader: no dotted run follows the point
    f = _face(LIB_SANS, 20)
    im = Image.new("RGB", (300, 60), (252, 250, 245))
    d = ImageDraw.Draw(im)
    d.text((20, 20), "Fig. -3", font=f, fill=(30, 30, 30))
    x0, y0, x1, y1 = d.textbbox((20, 20), "Fig. -3", font=f)
    box = np.array([[x0 - 3, y0 - 4], [x1 + 3, y0 - 4], [x1 + 3, y1 + 4], [x0 - 3, y1 + 4]],
                   np.float32)
    image = np.asarray(im)[:, :, ::-1].copy()
    assert leader_stubs([[0]], [box], ["Fig. -3"], image) == ["Fig. -3"]


@pytest.mark.parametrize("read,truth", [
    ("Discount\u2026\u2026\u2026\u2026\u2026\u2026\u2026\u2026-0.50", "Discount -0.50"),
    ("Tea........3.20", "Tea 3.20"),
    ("Tea\u00b7\u00b7\u00b7\u00b7\u00b7\u20ac3.20", "Tea \u20ac3.20"),
])
def test_a_leader_stuck_both_sides_goes(read, truth):
    # "Discount………-0.50": the recognizer's reading of a 14-px scanned receipt's line
    from skiff.kernels.ocr.rec import strip_leader

    assert strip_leader(read) == truth


@pytest.mark.parametrize("text", ["Loading\u2026\u202650%", "Wait...5", "Total\u202612.50",
                                  "Chapter 3\u2026\u202612", "see p.12"])
def test_an_ellipsis_or_a_point_stays(text):
    from skiff.kernels.ocr.rec import strip_leader

    assert strip_leader(text) == text
