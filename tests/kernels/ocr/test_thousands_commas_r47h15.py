"""Round 47 (h15): an amount's commas a photo's blur read as points put back
(`rec.thousands_commas`, called by the recognizer's last step). A spreadsheet as a phone
photo read "(3.250.00)" for "(3,250.00)" (RapidOCR the same): two points, so one is wrong;
where the recognizer gave "," a share at the first points and next to none at the last, the
first are commas ("1.120,00" the other way round). The oracle is the renderer: amounts drawn
with Pillow (Liberation Sans 14 px), turned, blurred, noised and saved as JPEG 50 as a phone
photo, read by the shipped recognizer; the truth is the text drawn."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

SANS = "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf"
AMOUNTS = ["1.120,00", "12.480,50", "(3,250.00)", "(4,100.00)", "(1,042.00)", "1,120.00",
           "(21,760.10)", "48,200.00", "(22,980.75)"]


def _photo(text, seed, blur=1.2):
    try:
        f = ImageFont.truetype(SANS, 14)
    except OSError:
        pytest.skip("Liberation Sans missing")
    im = Image.new("RGB", (120, 28), (255, 255, 255))
    ImageDraw.Draw(im).text((8, 6), text, font=f, fill=(0, 0, 0))
    im = im.rotate(1.5 * ((seed % 3) - 1), resample=Image.BICUBIC, fillcolor=(255, 255, 255))
    im = im.filter(ImageFilter.GaussianBlur(blur))
    a = np.asarray(im).astype(np.float32) + \
        np.random.default_rng(seed).normal(0, 8, (28, 120, 1))
    buf = io.BytesIO()
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=50)
    return np.asarray(Image.open(buf).convert("RGB"))[..., ::-1].copy()  # BGR, as read


def test_photographed_amounts_keep_their_commas(pipe):
    # two photos whose blur made the recognizer's best path read points for commas
    # ("(3.250.00)", "(4.100.00)", "(22.980.75)"; "12.480.50", "48.200.00")
    crops = [_photo(t, 6) for t in AMOUNTS] + [_photo(t, 8) for t in AMOUNTS[:2] + AMOUNTS[7:8]]
    got = [t for t, _ in pipe._recognize_once(crops, True)]
    assert got[:9] == AMOUNTS, got[:9]
    assert got[9:] == [AMOUNTS[0], AMOUNTS[1], AMOUNTS[7]], got[9:]
