"""A page stored sideways (a landscape PDF page shown at /Rotate 90): its short lines ("Q1",
boxed taller than wide but under ``rec.TALL``) are read turned like the rest of the page,
against the rendered truth; a vertical CJK column page keeps its square one-character
columns read as they stand (round 33, h14)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr.rec import TALL, reading_angle, reads_turned, sideways_page


def _box(x, y, w, h):
    return np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float64)


def test_a_page_of_standing_boxes_is_sideways_and_its_short_boxes_read_turned():
    tall = [(_box(0, 100 * i, 36, 90), 0.9) for i in range(12)]
    short = [(_box(200, 60 * i, 36, 46), 0.9) for i in range(4)]
    assert sideways_page(tall + short)  # 12 of 16 stand: the sideways table
    assert not sideways_page(tall[:2])  # too few boxes to tell
    wide = [(_box(0, 50 * i, 300, 40), 0.9) for i in range(10)]
    assert not sideways_page(wide + short)  # a page of lines: "Q1" stays as it stands
    q1 = short[0][0]
    assert q1[2, 1] - q1[0, 1] < TALL * 36
    assert not reads_turned(q1) and reads_turned(q1, sideways=True)
    # read turned, its text runs down its left edge (+90 degrees, y down), like its page's
    assert reading_angle(q1, False, sideways=True) == pytest.approx(np.pi / 2)
    assert reading_angle(q1, False) == pytest.approx(0.0)


def _table_page(fonts):
    from PIL import Image, ImageDraw, ImageFont

    im = Image.new("RGB", (1100, 700), "white")
    d = ImageDraw.Draw(im)
    d.text((60, 40), "Quarterly shipments by region",
           font=ImageFont.truetype(fonts["latin"], 34), fill=0)
    f = ImageFont.truetype(fonts["latin"], 24)
    rows = [("Region", "Q1", "Q2", "Q3", "Q4"), ("North", "1,210", "1,340", "1,190", "1,505"),
            ("South", "880", "915", "1,002", "1,120")]
    for r, row in enumerate(rows):
        for x, cell in zip((60, 400, 600, 800, 1000), row, strict=True):
            d.text((x, 140 + 60 * r), cell, font=f, fill=0)
    truth = ["Quarterly shipments by region"] + [" ".join(row) for row in rows]
    return np.array(im.rotate(90, expand=True))[..., ::-1].copy(), truth


def test_a_sideways_table_reads_its_short_header_cells(pipe, fonts):
    page, truth = _table_page(fonts)
    text = pipe(page).text
    assert text.splitlines() == truth  # before: "Region 2 03 04"


def test_square_cjk_columns_of_a_vertical_page_read_as_they_stand(pipe, fonts):
    from PIL import Image, ImageDraw, ImageFont

    cjk = fonts.get("cjk")
    if cjk is None:
        pytest.skip("no CJK font")
    f = ImageFont.truetype(cjk, 40)
    im = Image.new("RGB", (420, 460), "white")
    d = ImageDraw.Draw(im)
    cols = ["营业时间", "周一至周五", "上午九点", "下午五点", "安"]
    for c, col in enumerate(cols):  # right to left, top to bottom; the last column one glyph
        for i, ch in enumerate(col):
            d.text((340 - 80 * c, 20 + 48 * i), ch, font=f, fill=0)
    lines = [line.text for line in pipe(np.array(im)[..., ::-1].copy()).lines]
    assert sorted(lines) == sorted(cols)
