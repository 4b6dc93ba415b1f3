"""Round 44 (h22): a unit's micro prefix read as the Greek mu (issue 14: h16's scanned PDF
"−25 µs" read "−25 μs"; the user36 label's "100 µg"). The printed text is the oracle: the
micro sign U+00B5 drawn, the recognizer's U+03BC given as its reading (it gives either for
the same ink by face and size); Greek words keep their mu."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.marks import footnote_marks, micro_signs

SANS = "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf"
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def crop(text: str, path: str, px: int) -> np.ndarray:
    f = ImageFont.truetype(path, px)
    im = Image.new("RGB", (int(f.getlength(text)) + 2 * px, 2 * px), "white")
    ImageDraw.Draw(im).text((px, px), text, font=f, fill=0, anchor="lm")
    return np.asarray(im)


@pytest.mark.parametrize("path", [SANS, DEJAVU])
@pytest.mark.parametrize("drawn", [
    "Latency −25 µs", "Salbutamol 100 µg", "Dose 5 µg/mL", "C1 10µF", "Width 5 µm"])
def test_a_units_micro_prefix_reads_as_the_micro_sign(path, drawn):
    read = drawn.replace("\u00b5", "\u03bc")
    assert footnote_marks(read, crop(drawn, path, 18)) == drawn
    assert footnote_marks(drawn, crop(drawn, path, 18)) == drawn


@pytest.mark.parametrize("text", [
    "Καλημέρα μας", "5 μέτρα", "μs", "σ = 3 μ", "x2 μ-law", "12 μg"[::-1]])
def test_greek_mu_outside_a_unit_stays(text):
    assert micro_signs(text) == text
