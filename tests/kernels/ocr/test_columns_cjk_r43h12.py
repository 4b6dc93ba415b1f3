"""Two columns of Japanese sentences are read column by column: a line of CJK characters
holds a word a character, so its prose width counts ``layout.CJK_WIDE`` times its width in
heights (round 43: "今日は晴れです。", 8 characters in 5.9 heights, fell under the prose
floor of 6 and a weather page was read across its gutter, row by row). The oracle is the
renderer: the page is drawn column by column."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.layout import reading_rows

CJK = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
LEFT = ["東京の天気", "今日は晴れです。", "気温は18度です。", "明日は雨の予報。"]
RIGHT = ["大阪の天気", "今日は曇りです。", "気温は20度です。", "週末は晴れます。"]


def test_two_columns_of_japanese_read_column_by_column(pipe):
    try:
        face = ImageFont.truetype(CJK, 30)
    except OSError:
        pytest.skip("Noto Sans CJK missing")
    im = Image.new("RGB", (820, 330), "white")
    d = ImageDraw.Draw(im)
    for i, (a, b) in enumerate(zip(LEFT, RIGHT, strict=True)):
        d.text((40, 40 + 60 * i), a, font=face, fill="black")
        d.text((480, 40 + 60 * i), b, font=face, fill="black")
    assert pipe(np.asarray(im)).text.splitlines() == LEFT + RIGHT


def _box(x, y, w, h=44.0):
    return np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float64)


def test_only_lines_dense_as_cjk_count_wider():
    # four rows of two boxes 5.9 heights wide: 8 characters each (CJK) are two columns;
    # 14 each (Latin, as dense as a Latin line is) or unknown stay rows, as before
    boxes = [_box(x, 60 + 62 * i, 5.9 * 44) for i in range(4) for x in (120, 900)]
    by_columns = [[0], [2], [4], [6], [1], [3], [5], [7]]
    by_rows = [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert reading_rows(boxes, chars=[8] * 8) == by_columns
    assert reading_rows(boxes, chars=[14] * 8) == by_rows
    assert reading_rows(boxes) == by_rows
