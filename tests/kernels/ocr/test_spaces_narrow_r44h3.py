"""A Japanese price "価格 1,280円" set in Noto Sans CJK has a narrow space, 0.29-0.37 of the
ink's height, under `spacing.HAN_GAP` (0.4): the recognizer reads "価格1,280円" and so did
skiff. Its other pair ("0円") stands at most 0.12 apart, so the space stands out of its
line more than twice over (`HAN_GAP_NARROW`, `HAN_OF_LINE_NARROW`); a train ticket's
"2026年12月08日 09:00开" blurred at 16 px alike. The oracle is the renderer: each line is
drawn with the spaces it must read with (the same reading as round 43's
`test_spaces_cjk_digits_r43h17.py`: frames at each character's centre); the lines set
tight stay tight (that file's `test_lines_set_tight_stay_tight`, all three faces)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.spacing import cjk_spaces

NOTO = "/usr/share/fonts/opentype/noto"
FACES = {"sans JP": (f"{NOTO}/NotoSansCJK-Regular.ttc", 0),
         "sans SC": (f"{NOTO}/NotoSansCJK-Regular.ttc", 2),
         "serif SC": (f"{NOTO}/NotoSerifCJK-Regular.ttc", 2)}
HEIGHT, FRAME = 48, 4.0  # the recognizer's input height, input columns a frame


def _read(line: str, face: str, px: int, blur: bool, faces=FACES):
    """The crop of ``line`` drawn in ``face`` (of ``faces``) at ``px`` and a greedy reading
    of it without its spaces: one frame at each character's centre."""
    path, index = faces[face]
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


PRICE = [("sans JP", 16, 0), ("sans JP", 30, 0), ("sans SC", 16, 0), ("sans SC", 30, 0),
         ("serif SC", 16, 1), ("serif SC", 30, 0), ("serif SC", 30, 1)]


@pytest.mark.parametrize("face,px,blur", PRICE)
def test_a_price_keeps_its_narrow_space(face, px, blur):
    line = "価格 1,280円"
    text, best, alphabet, crop = _read(line, face, px, blur)
    assert cjk_spaces(text, best, alphabet, crop, FRAME, HEIGHT) == line


@pytest.mark.parametrize("face", ["sans JP", "sans SC"])
def test_a_tickets_date_keeps_the_space_before_its_time(face):
    line = "2026年12月08日 09:00开"
    text, best, alphabet, crop = _read(line, face, 16, 1)
    assert cjk_spaces(text, best, alphabet, crop, FRAME, HEIGHT) == line


TIGHT = ["价格128元", "共3件", "第11届", "11月11日", "1号楼1单元", "2026年12月08日09:00开"]


def test_lines_set_tight_stay_tight():
    for face in FACES:
        for px in (16, 22, 30):
            for blur in (0, 1):
                for line in TIGHT:
                    text, best, alphabet, crop = _read(line, face, px, blur)
                    got = cjk_spaces(text, best, alphabet, crop, FRAME, HEIGHT)
                    assert got is None, (line, face, px, blur, got)


# a label's Chinese name and its English name a layout gap apart, read without the space
# as a phone photo ("有机绿茶Organic Green Tea", 0.63 of the ink's height; `HAN_WORD_GAP`):
# drawn here with two or three spaces (0.5-0.7)
LABELS = ["有机绿茶   Organic Green Tea", "出口  Exit", "Menu  菜单"]


@pytest.mark.parametrize("face", FACES)
def test_a_labels_english_name_stands_apart(face):
    for px in (16, 22, 30):
        for blur in (0, 1):
            for line in LABELS:
                text, best, alphabet, crop = _read(line, face, px, blur)
                got = cjk_spaces(text, best, alphabet, crop, FRAME, HEIGHT)
                want = " ".join(line.split()).replace("Organic Green Tea", "OrganicGreenTea")
                assert got == want, (line, px, blur, got)


WORDS = ["iPhone手机", "Wi-Fi密码", "HDMI线", "AI芯片", "编号A1024", "A座", "用Python写"]


def test_letters_set_tight_stay_tight():
    faces = dict(FACES, UKai=("/usr/share/fonts/truetype/arphic/ukai.ttc", 0))
    for face in faces:
        for px in (16, 22, 30):
            for blur in (0, 1):
                for line in WORDS:
                    text, best, alphabet, crop = _read(line, face, px, blur, faces)
                    got = cjk_spaces(text, best, alphabet, crop, FRAME, HEIGHT)
                    assert got is None, (line, face, px, blur, got)
