"""A worksheet of sums in two columns, shot by a phone a few degrees askew, is read row by
row, not down its columns (round 37: "1) 3) 5)" then "2) 4) 6)", the sums 2.9-3.0 box
heights apart and 6 times as wide as high, a heading over the left column: prose by
``layout._columns``' old rule of three heights). Truth by construction: the boxes drawn
turned, and a rendered sheet turned, blurred and noised."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr.layout import reading_rows

SUMS = ["1) 12 × 4 = 48", "2) 96 ÷ 8 = 12", "3) 15 − 7 = 8", "4) 3/4 + 1/8 = 7/8",
        "5) 2.5 × 6 = 15", "6) 100 ÷ 4 = 25"]


def _turned(x, y, w, h, deg, centre=(450.0, 210.0)):
    """The box (x, y, w, h) turned by ``deg`` (counter-clockwise on the page) about centre."""
    pts = np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float64) - centre
    a = np.radians(deg)
    rot = np.array([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])
    return (pts @ rot.T + centre).astype(np.float32)


@pytest.mark.parametrize("deg", [0.0, 1.0, 2.5, -3.0])
@pytest.mark.parametrize("height", [30.0, 31.5])
def test_sums_two_columns_read_across(deg, height):
    # the detector's boxes on round 37's sheet: a heading over the left column (ends 45 px
    # short of the right one), sums 90 px apart, 5.4-7.5 heights wide
    boxes = [_turned(38, 26, 372, 33, deg)]
    widths = [6.0, 6.5, 5.4, 7.5, 6.2, 6.7]
    for k, ratio in enumerate(widths):
        boxes.append(_turned(56 + 420 * (k % 2), 100 + 90 * (k // 2), ratio * height, height,
                             deg))
    angles = [np.radians(-deg)] * len(boxes)
    rows = reading_rows(boxes, shape=(420, 900), angles=angles)
    assert rows == [[0], [1, 2], [3, 4], [5, 6]]


def test_prose_columns_double_spaced_still_columns():
    """Two columns of prose, double-spaced (lines 1.8 box heights apart), stay columns."""
    boxes = [_turned(10, 0, 700, 24, 0.0)]
    for k in range(4):
        boxes += [_turned(10, 50 + 43 * k, 300, 24, 2.0), _turned(400, 50 + 43 * k, 300, 24, 2.0)]
    rows = reading_rows(boxes, shape=(260, 720), angles=[np.radians(-2.0)] * len(boxes))
    assert rows == [[0], [1], [3], [5], [7], [2], [4], [6], [8]]


def test_rendered_phone_photo_of_the_sheet(pipe, fonts):
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    face = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 24)
    im = Image.new("RGB", (900, 420), (255, 255, 255))
    d = ImageDraw.Draw(im)
    d.text((40, 24), "Worksheet 7 - Mixed practice", font=face, fill=0)
    for i, s in enumerate(SUMS):
        d.text((60 + (i % 2) * 420, 100 + (i // 2) * 90), s, font=face, fill=0)
    rng = np.random.default_rng(38)
    im = im.rotate(2.6, Image.BICUBIC, expand=True, fillcolor=(255, 255, 255))
    im = im.filter(ImageFilter.GaussianBlur(0.8))
    a = np.asarray(im).astype(np.float32) + rng.normal(0, 8, (im.height, im.width, 1))
    img = np.clip(a, 0, 255).astype(np.uint8)[:, :, ::-1].copy()
    (r,) = list(pipe.run([img]))
    rows = [[line.text for line in row] for row in r.rows]
    # each row holds one sum of each column, left first (what they read is not the point)
    starts = [[t.split(")")[0] for t in row] for row in rows[1:]]
    assert starts == [["1", "2"], ["3", "4"], ["5", "6"]], rows
