"""Fields set apart on one line of Chinese print: an ID card's "民族  汉", a form's label
and its value. The recognizer, which learned Chinese without spaces, read a gap of 0.5 to
1.5 em between two Chinese characters as nothing ("民族汉", "姓名张三") or as an
ideographic space ("民族\u3000汉"); the oracle is the card rendered, each field apart. And
ordinary lines, whose characters stand up to half their height apart in a brush face,
keep every character together."""

from __future__ import annotations

import os

import numpy as np
import pytest

from skiff.kernels.ocr.synth import CJK_INDEX_SC

CARD = [[(0, "姓名"), (3, "张三")], [(0, "性别"), (3, "男"), (7, "民族"), (10, "汉")],
        [(0, "住址"), (3, "北京市海淀区中关村大街1号")]]


def _card(path, size, index=0):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(path, size, index=index)
    img = Image.new("RGB", (size * 20, int(size * 2 * len(CARD)) + 40), "white")
    draw = ImageDraw.Draw(img)
    for i, row in enumerate(CARD):
        for em, text in row:
            draw.text((20 + em * size, 20 + i * 2 * size), text, font=face, fill=(20, 20, 20))
    return np.asarray(img)


@pytest.mark.parametrize("size", [16, 24])
def test_an_id_cards_fields_stand_apart(pipe, fonts, size):
    (r,) = list(pipe.run([_card(fonts["cjk"], size, CJK_INDEX_SC)]))
    got = [" ".join(line.split()) for line in r.text.splitlines() if line.strip()]
    assert got == [" ".join(text for _, text in row) for row in CARD], r.text


# the pairs that stood furthest apart in 2,089 of ordinary lines: AR PL UKai at 16 px
PROSE = ["销售广东快优秀深圳经", "可怕关闭自然思维恢复", "儿子而言改革坚持相当",
         "经济父亲日报团队其他在", "类小应当形势或是", "11月11日3月1日起"]


def test_ordinary_lines_keep_their_characters_together(pipe):
    from PIL import Image, ImageDraw, ImageFont

    path = "/usr/share/fonts/truetype/arphic/ukai.ttc"
    if not os.path.exists(path):
        pytest.skip("AR PL UKai is not installed (fonts-arphic-ukai)")
    face = ImageFont.truetype(path, 16)
    img = Image.new("RGB", (260, 30 * len(PROSE) + 30), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(PROSE):
        draw.text((15, 15 + i * 30), line, font=face, fill=(20, 20, 20))
    (r,) = list(pipe.run([np.asarray(img)]))
    got = [line.strip() for line in r.text.splitlines() if line.strip()]
    assert len(got) == len(PROSE) and not any(" " in line for line in got), r.text


def test_an_ideographic_space_inside_a_line_reads_as_a_space():
    from skiff.kernels.ocr.spacing import cjk_spaces

    alphabet = ["", "民", "族", "汉", "\u3000", " "]
    best = np.array([1, 0, 2, 0, 4, 0, 3])  # the greedy reading "民族\u3000汉"
    crop = np.full((20, 60, 3), 255, np.uint8)
    assert cjk_spaces("民族\u3000汉", best, alphabet, crop, 8.0) == "民族 汉"
    assert cjk_spaces("民族 汉", best, alphabet, crop, 8.0) is None
