"""Round 40 (h3): a number's sign is written "-" whatever its glyph (the brief's "(−9%)").

Decided: a minus sign before a number ("(−9%)" on round 39's slide, "−9.81" on round 40's
invoice, a DSEG display's "-80.4" whose segment is as wide) is written as the ASCII
hyphen-minus, as round 37 decided for "−12.5" and "x = −3": that is what a user types to
search for it and what ``float()`` parses (``float("−9.81")`` raises), RapidOCR writes the
same, and the ink of "−" cannot be told from an en dash used as a minus. A minus between
two numbers of a line of arithmetic ("12 − 5 = 7") stays an operator "−", and an en dash
of a range ("9–17") an en dash. The benchmarks fold a sign's "−" to "-" in the truth
(`bench_ocr_user40.py`). The oracle is the renderer: each line is drawn with U+2212."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.marks import en_dashes

FONTS = "/usr/share/fonts/truetype/"
FACES = [FONTS + "liberation2/LiberationSans-Regular.ttf",
         FONTS + "liberation2/LiberationSerif-Regular.ttf",
         FONTS + "liberation2/LiberationMono-Regular.ttf",
         FONTS + "dejavu/DejaVuSans.ttf", FONTS + "dejavu/DejaVuSerif.ttf"]


def line_crop(text: str, path: str, px: int) -> np.ndarray:
    try:
        f = ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")
    x0, y0, x1, y1 = ImageDraw.Draw(Image.new("RGB", (1, 1))).textbbox((0, 0), text, font=f)
    pad = px // 3
    im = Image.new("RGB", (x1 - x0 + 2 * pad, y1 - y0 + 2 * pad), "white")
    ImageDraw.Draw(im).text((pad - x0, pad - y0), text, font=f, fill=0)
    return np.asarray(im)[:, :, ::-1].copy()


@pytest.mark.parametrize("path", FACES)
@pytest.mark.parametrize("drawn", ["Support tickets: 412 (\u22129%)", "Discount 5% \u22129.81",
                                   "\u221212.5 \u00b0C"])
def test_a_sign_is_written_as_a_hyphen_minus(path, drawn):
    read = drawn.replace("\u2212", "-")
    for px in (18, 30):
        assert en_dashes(read, line_crop(drawn, path, px)) == read


def test_an_operator_stays_a_minus_and_a_range_an_en_dash():
    path = FACES[0]
    assert en_dashes("12 - 5 = 7", line_crop("12 \u2212 5 = 7", path, 26)) == "12 \u2212 5 = 7"
    assert en_dashes("Open 9-17", line_crop("Open 9\u201317", path, 26)) == "Open 9\u201317"
