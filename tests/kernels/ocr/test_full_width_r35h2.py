"""Full-width digits and Latin letters in CJK lines (round 35; round 34 left "１２月８日"
read "1 2月8日" and "ＡＢＣ科技有限公司" "A B C科技有限公司"): no space inside a run of them,
the spaces of half-width print kept. The oracle: the rendered text."""
import re
import unicodedata
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

import skiff
from skiff.kernels.ocr.spacing import one_width

NOTO = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
WQY = Path("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc")


def _render(text, font, size):
    if not font.exists():
        pytest.skip(f"{font} not installed")
    f = ImageFont.truetype(str(font), size, index=2 if font == NOTO else 0)
    im = Image.new("L", (int(f.getlength(text)) + 2 * size, int(size * 2.2)), 255)
    ImageDraw.Draw(im).text((size, size * 0.5), text, font=f, fill=0)
    return im.convert("RGB")


def _nfkc(s):
    return unicodedata.normalize("NFKC", s)


@pytest.mark.parametrize("text, font, size", [
    ("１２月８日（火）", NOTO, 28), ("ＡＢＣ科技有限公司", NOTO, 28),
    ("ＡＢＣ科技有限公司", NOTO, 40), ("ＷｉＦｉ密码：ＡＢ１２", NOTO, 28),
    ("ＷｉＦｉ密码：ＡＢ１２", WQY, 28), ("２０２４年１２月３日", WQY, 18)])
def test_no_space_inside_a_full_width_run(text, font, size):
    read = skiff.ocr(_render(text, font, size)).text
    assert _nfkc(read).replace(" ", "") == _nfkc(text).replace(" ", ""), read
    assert not re.search(r"[0-9A-Za-z０-９Ａ-Ｚａ-ｚ] [0-9A-Za-z０-９Ａ-Ｚａ-ｚ]", read), read


@pytest.mark.parametrize("text, font, size", [
    ("iPhone 15 发布会", NOTO, 28), ("Room 12 会议室", NOTO, 28), ("出生 1990年", WQY, 28),
    ("12月8日", NOTO, 28), ("ABC科技有限公司", NOTO, 28)])
def test_half_width_print_keeps_its_spaces(text, font, size):
    assert skiff.ocr(_render(text, font, size)).text == text


def test_one_width_settles_a_run_read_in_both_widths():
    # only full-width print was read mixed
    assert one_width("２０24年１2月３日") == "２０２４年１２月３日"
    assert one_width("2024年12月3日") == "2024年12月3日"
    assert one_width("ＡＢ 12 会员") == "ＡＢ 12 会员"  # two runs, each one width
    assert one_width("ＡＢ12 会员") == "ＡＢ１２ 会员"
    assert one_width("Ａb1") == "Ａb1"  # no CJK in the line: rec.half_width's business
    assert one_width("会员号：１2３") == "会员号：１２３"  # "：" stays (not NFKC)
