"""A line of kanji without kana may still be Japanese, which sets a space between a word and
a number ("2026年12月7日 14:32" on a receipt); the recognizer reads it "2026年12月7日14:32"
(RapidOCR too). No gap alone tells it from a Chinese line set tight: AR PL UKai's "1" stands
in a digit's cell, half an ink height from its neighbours ("11月11日"). In a line without
kana the pair must stand out of the line's other such pairs (`spacing.cjk_spaces`,
``HAN_GAP``, ``HAN_OF_LINE``). The oracle is the renderer: each line is drawn with the spaces
it must read with, and the greedy reading's frames are put at each character's centre."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.spacing import cjk_spaces

NOTO = "/usr/share/fonts/opentype/noto"
FACES = {"sans JP": (f"{NOTO}/NotoSansCJK-Regular.ttc", 0),
         "serif SC": (f"{NOTO}/NotoSerifCJK-Regular.ttc", 2),
         "UKai": ("/usr/share/fonts/truetype/arphic/ukai.ttc", 0)}
HEIGHT, FRAME = 48, 4.0  # the recognizer's input height, input columns a frame


def _read(line: str, face: str, px: int, blur: bool):
    """The crop of ``line`` drawn in ``face`` at ``px`` and a greedy reading of it without
    its spaces: one frame at each character's centre."""
    path, index = FACES[face]
    if not os.path.exists(path):
        pytest.skip(f"{face} is not installed")
    font = ImageFont.truetype(path, px, index=index)
    w, h = int(font.getlength(line)) + px, int(px * 1.5)
    im = Image.new("L", (w, h), 255)
    ImageDraw.Draw(im).text((px // 2, h / 2), line, font=font, fill=0, anchor="lm")
    if blur:
        im = im.filter(ImageFilter.GaussianBlur(0.6 + px / 40))
    crop = np.asarray(im.convert("RGB"))
    scale = w / int(np.ceil(HEIGHT * w / h))  # crop columns an input column
    alphabet = [""] + sorted(set(line) - {" "})
    best = np.zeros(int(w / (FRAME * scale)) + 2, int)
    for i, c in enumerate(line):
        if c != " ":
            x = px // 2 + font.getlength(line[:i]) + font.getlength(c) / 2
            best[int(x / (FRAME * scale))] = alphabet.index(c)
    return "".join(line.split()), best, alphabet, crop


CASES = [(f, px, b) for f in ("sans JP", "serif SC") for px in (16, 22, 30) for b in (0, 1)]


@pytest.mark.parametrize("face,px,blur", CASES)
def test_a_receipts_date_keeps_the_space_before_its_time(face, px, blur):
    line = "2026年12月7日 14:32"
    text, best, alphabet, crop = _read(line, face, px, blur)
    assert cjk_spaces(text, best, alphabet, crop, FRAME, HEIGHT) == line


TIGHT = ["2026年12月7日14:32", "11月11日", "第11届", "价格128元", "1号楼1单元", "出生1990年"]


@pytest.mark.parametrize("face", FACES)
def test_lines_set_tight_stay_tight(face):
    for px in (16, 22, 30):
        for blur in (0, 1):
            for line in TIGHT:
                text, best, alphabet, crop = _read(line, face, px, blur)
                got = cjk_spaces(text, best, alphabet, crop, FRAME, HEIGHT)
                assert got is None, (line, px, blur, got)
