"""A receipt photographed small: "name ..... price" rows with drawn dot leaders, Liberation
Sans at 24 px on a 150-dpi page, scanned (turned, blurred, noisy) and shown at 0.5 and 0.6 of
its size. Detection reads only the page's ink box there (195 x 409 at 0.6), and on a crop that
is nearly all text the detector (which weighs its channels by means over its whole input) ran
each row's name, leader and price into one region scoring 0.36-0.47, under ``box_thresh``:
3 and 4 of the 5 lines were lost ("Bakery Nord" alone at 0.6). Read whole the page is 5/5.
Such a small ink box is now read again grown by 48 detector pixels of its page
(``DetectionPasses._ink_grown``). The truth is what was drawn."""

from __future__ import annotations

import os

import numpy as np
import pytest

FONT = "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf"
ITEMS = [("Cappuccino", "3.20"), ("2 x Bagel", "5.80"), ("Discount", "-0.50"),
         ("TOTAL EUR", "8.50")]
TRUTH = ["Bakery Nord"] + [f"{a} {b}" for a, b in ITEMS]


def _receipt(scale: float) -> np.ndarray:
    """The receipt page (1240 x 1754 at 150 dpi) drawn, scanned and resized to ``scale``."""
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    im = Image.new("L", (1240, 1754), 255)
    d = ImageDraw.Draw(im)
    d.text((420, 100), "Bakery Nord", font=ImageFont.truetype(FONT, 32), fill=0)
    f = ImageFont.truetype(FONT, 24)
    for k, (a, b) in enumerate(ITEMS):
        y = 180 + k * 44
        d.text((300, y), a, font=f, fill=0)
        d.text((900 - d.textlength(b, font=f), y), b, font=f, fill=0)
        xx, x1 = 300 + d.textlength(a, font=f) + 10, 900 - d.textlength(b, font=f) - 10
        while xx < x1:  # the leader: dots every 8 px
            d.ellipse((xx, y + 20, xx + 2, y + 22), fill=0)
            xx += 8
    rng = np.random.default_rng(3)
    im = im.rotate(float(rng.uniform(-0.8, 0.8)), Image.BICUBIC, expand=False, fillcolor=255)
    im = im.filter(ImageFilter.GaussianBlur(0.6))
    a = np.asarray(im).astype(np.float32) + rng.normal(0, 6, (im.height, im.width))
    im = Image.fromarray(np.clip(a * 0.9 + 20, 0, 255).astype(np.uint8))
    im = im.resize((int(im.width * scale), int(im.height * scale)), Image.LANCZOS)
    return np.asarray(im.convert("RGB"))


@pytest.mark.skipif(not os.path.exists(FONT), reason="Liberation Sans not installed")
@pytest.mark.parametrize("scale", [0.5, 0.6])
def test_a_small_receipt_reads_its_leader_rows(pipe, scale):
    got = [line for line in pipe(_receipt(scale)).text.splitlines() if line.strip()]
    assert got == TRUTH
