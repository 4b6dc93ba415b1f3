"""Round 30: a reading's confident share (``reading._confident_chars``, which chooses among
an unsure image's denoised copies) counts print width, not characters.

Small Chinese print under noise and JPEG reads as digits or Latin garble on some copies and
as CJK on others; one CJK character prints about as wide as two digits, so counting
characters chose the garble ("地下停车场" -> "9961.9"). The oracle is the rendered text:
each reading's advance width in a CJK face (PIL), against the half-width cells
``print_width`` counts."""

from __future__ import annotations

import pytest

NOTO = ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2)
SIZE = 100
# real readings of h1's round-30 labels and their truths: CJK, digits, Latin, mixed, kana
TEXTS = ["地下停车场", "9961.9", "配送费", "493", "总计 ¥58.00", "231 v58.00", "00 120 03",
         "安全出口", "Total due 27.40", "カタカナ", "电话 021-6543", "Ｆｕｌｌ"]


def _font():
    from PIL import ImageFont

    try:
        return ImageFont.truetype(NOTO[0], SIZE, index=NOTO[1])
    except OSError:
        pytest.skip(f"font {NOTO[0]} missing (install fonts-noto-cjk)")


@pytest.mark.parametrize("text", TEXTS)
def test_print_width_follows_the_rendered_advance(text):
    from skiff.kernels.ocr.reading import print_width

    cells = _font().getlength(text) / (SIZE / 2)  # rendered width in half-em cells
    assert abs(print_width(text) - cells) <= 0.25 * cells, (print_width(text), cells)


@pytest.mark.parametrize(("truth", "garble"), [("地下停车场", "9961.9"), ("配送费", "4930"),
                                               ("安全出口", "00 12"),
                                               ("生产日期", "17085")])
def test_the_cjk_reading_of_one_print_outweighs_its_garble(truth, garble):
    """Two readings of the same print at the same score: the one whose rendered width is
    the larger (the CJK, here) is the more confident reading, whatever its character count."""
    from skiff.kernels.ocr.reading import _confident_chars

    font = _font()
    assert len(garble) > len(truth) and font.getlength(truth) > font.getlength(garble)
    assert _confident_chars([(truth, 0.6)]) > _confident_chars([(garble, 0.6)])
    # and the measure stays linear in the score and additive over lines
    one, other = _confident_chars([(truth, 0.6)]), _confident_chars([(garble, 0.3)])
    assert _confident_chars([(truth, 0.6), (garble, 0.3)]) == pytest.approx(one + other)
