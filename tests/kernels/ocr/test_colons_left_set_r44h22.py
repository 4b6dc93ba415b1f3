"""Round 44 (h22): a simplified-Chinese label's "：" read ":" (issue 14: Noto Serif CJK SC's
"净含量：100g" as a phone photo read "净含量: 100g" in 3 of 7 lines). SC faces set the
full-width colon at the left of its cell; AR PL UKai's and Zen Hei's half-width colon and a
space are the look-alikes that must stay. The drawn text is the oracle; the readings given
are the recognizer's misreadings of such lines."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.marks import full_width_colons

NOTO = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
NOTO_SERIF = "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc"
ZENHEI = "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"
UKAI = "/usr/share/fonts/truetype/arphic/ukai.ttc"
SC = 2  # the simplified-Chinese face in Noto's collections


def crop(text: str, path: str, index: int, px: int, blur: bool) -> np.ndarray:
    f = ImageFont.truetype(path, px, index=index)
    im = Image.new("L", (int(f.getlength(text)) + px, int(px * 1.5)), 255)
    ImageDraw.Draw(im).text((px // 2, px * 0.75), text, font=f, fill=0, anchor="lm")
    if blur:
        im = im.filter(ImageFilter.GaussianBlur(0.6 + px / 40))
    return np.asarray(im.convert("RGB"))


@pytest.mark.parametrize(("path", "px", "blur"), [
    (NOTO_SERIF, 16, False), (NOTO_SERIF, 22, False), (NOTO_SERIF, 30, True),
    (NOTO, 22, False), (NOTO, 30, True)])
@pytest.mark.parametrize(("drawn", "read"), [
    ("净含量：100g", "净含量: 100g"), ("电话：021-5555", "电话:021-5555"),
    ("执行标准：GB/T 14456.2", "执行标准: GB/T 14456.2")])
def test_a_left_set_full_width_colon_after_han(path, px, blur, drawn, read):
    image = crop(drawn, path, SC, px, blur)
    assert full_width_colons(read, image, cjk_page=True) == drawn
    assert full_width_colons(read, image, cjk_page=False) == read


@pytest.mark.parametrize(("path", "index"), [
    (UKAI, 0), (ZENHEI, 0), (NOTO, SC), (NOTO_SERIF, SC)])
@pytest.mark.parametrize("px", [16, 22, 30])
@pytest.mark.parametrize("blur", [False, True])
def test_a_half_width_colon_and_space_after_han_stays(path, index, px, blur):
    """UKai's ": " leaves 0.25-0.45 of the digit height before the dots and 0.85-1.14
    after, as SC's "：" nearly does; its dots stand closer (0.30-0.40 against 0.41-0.66)."""
    for text in ("净含量: 100g", "电话: 021-5555", "型号:A3", "时间 10:30"):
        assert full_width_colons(text, crop(text, path, index, px, blur), True) == text
