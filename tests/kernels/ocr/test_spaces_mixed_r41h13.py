"""Round 41 (h13): in a line that holds Chinese, the gaps of a run of Latin letters and
digits are measured against that run's own ink height (`spacing._latin_heights`, called by
`missed_spaces`).

A tea label's "净含量：500 mL" (Noto Sans CJK) read "500mL" as a phone photo: its blank was
0.29 of the line's ink height, which the taller Chinese characters set, under `SPACE_GAP`
(0.3 of a Latin line's). The oracle is the renderer: pages drawn with PIL hold the lines
to read, with their spaces and without."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

FONTS = "/usr/share/fonts/opentype/noto/"
# a label's lines (the spaced ones are those the code before read without their space)
LINES = [["净含量：500 mL", "容量 250 ml", "型号A3纸张", "尺寸：30 cm × 20 cm", "重量：1.5kg",
          "USB 接口", "支持Wi-Fi 6", "iPhone 15 Pro 手机壳"],
         ["温度 25°C", "电压220V", "价格：128 元", "规格：12 x 8 mm", "保质期 18 个月",
          "货号 AB-2031", "含 Vitamin C", "版本 v2.1"]]
PAGES = [("NotoSansCJK-Regular.ttc", 18, 1), ("NotoSerifCJK-Regular.ttc", 24, 0)]
SPACED = ["净含量：500 mL", "规格：12 x 8 mm"]
TIGHT = ["型号A3纸张", "重量：1.5kg", "电压220V"]


@pytest.fixture(scope="module")
def readings(pipe):
    """Each page, read in one batch."""
    pages = []
    for path, px, part in PAGES:
        try:
            f = ImageFont.truetype(FONTS + path, px)
        except OSError:
            pytest.skip(f"{path} not installed")
        lines = LINES[part]
        step = int(px * 1.8)
        im = Image.new("RGB", (40 + 14 * px, 40 + step * len(lines)), "white")
        d = ImageDraw.Draw(im)
        for i, t in enumerate(lines):
            d.text((20, 20 + step * i), t, font=f, fill=(20, 20, 20))
        pages.append(np.asarray(im))
    # "凈" for "净": the recognizer's variant (left, round 41), not a space's matter
    return [[" ".join(t.split()).replace("凈", "净") for t in r.text.splitlines()]
            for r in pipe.run(pages)]


@pytest.mark.parametrize("k", range(len(PAGES)))
def test_latin_word_gaps_in_a_chinese_line(readings, k):
    for t in SPACED:
        if t in LINES[PAGES[k][2]]:
            assert t in readings[k], (PAGES[k], readings[k])


@pytest.mark.parametrize("k", range(len(PAGES)))
def test_tight_latin_runs_stay_tight(readings, k):
    for t in TIGHT:
        if t in LINES[PAGES[k][2]]:
            assert t in readings[k], (PAGES[k], readings[k])
