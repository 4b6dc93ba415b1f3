"""Round 45 (h15): Noto Serif CJK SC's "：" at 16-22 px whose dots stand 0.33-0.41 of the
digit height apart ("产地:浙江杭州" as a phone photo), under round 44's LEFT_COLON_SPAN; its
dots are small (0.013-0.023 of the digit height squared), AR PL UKai's half-width ones, the
look-alike at such spans, 0.020-0.065. The drawn text is the oracle; the readings given are
the recognizer's misreadings of such lines."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.marks import full_width_colons

from .test_stacked_lines_r45h15 import phone_shot  # the same phone shot

NOTO_SERIF = "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc"
UKAI = "/usr/share/fonts/truetype/arphic/ukai.ttc"


def crop(text: str, path: str, index: int, px: int, kind: str) -> np.ndarray:
    try:
        f = ImageFont.truetype(path, px, index=index)
    except OSError:
        pytest.skip(f"{path} missing")
    im = Image.new("RGB", (int(f.getlength(text)) + px, int(px * 1.5)), "white")
    ImageDraw.Draw(im).text((px // 2, px * 0.75), text, font=f, fill=0, anchor="lm")
    if kind == "blur":
        im = im.filter(ImageFilter.GaussianBlur(0.6 + px / 40))
    elif kind.startswith("phone"):  # blur, sensor noise and JPEG, seeded
        im = phone_shot(im, int(kind[-1]))
    return np.asarray(im)


@pytest.mark.parametrize(("px", "kind", "drawn"), [
    (18, "clean", "产地：浙江杭州"), (18, "phone2", "产地：浙江杭州"),
    (18, "phone2", "净含量：100g"), (20, "phone1", "产地：浙江杭州"),
    (20, "blur", "净含量：100g"), (20, "phone1", "净含量：100g"),
    (22, "phone1", "产地：浙江杭州"), (22, "blur", "净含量：100g"),
    (28, "phone2", "产地：浙江杭州")])
def test_a_serif_full_width_colon_with_close_dots(px, kind, drawn):
    image = crop(drawn, NOTO_SERIF, 2, px, kind)
    read = drawn.replace("：", ":")
    assert full_width_colons(read, image, cjk_page=True) == drawn


@pytest.mark.parametrize("px", [16, 18, 20, 24, 28, 32])
@pytest.mark.parametrize("kind", ["clean", "blur", "phone0", "phone1", "phone2"])
def test_ukai_half_width_colon_and_space_stays(px, kind):
    for text in ("产地: 浙江杭州", "净含量: 100g", "电话: 021-5555"):
        assert full_width_colons(text, crop(text, UKAI, 0, px, kind), True) == text
