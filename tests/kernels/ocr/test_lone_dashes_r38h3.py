"""Round 38 (h3): a timetable's cell holding one dash, read "一" (CJK one) on a Latin page,
written as its drawn ink's width says (the drawn dash is the oracle): `marks.lone_dashes`."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.marks import lone_dashes

FONTS = "/usr/share/fonts/truetype/"
LIB_SANS = FONTS + "liberation2/LiberationSans-Regular.ttf"
DEJAVU = FONTS + "dejavu/DejaVuSans.ttf"
LIB_MONO = FONTS + "liberation2/LiberationMono-Regular.ttf"


def row_page(cells: list[str], path: str, px: int):
    """One timetable row drawn across a page, and each cell's box as a detector gives it
    (its ink's rectangle with a margin of px // 3)."""
    try:
        f = ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")
    im = Image.new("RGB", (200 * len(cells), 3 * px), "white")
    d = ImageDraw.Draw(im)
    boxes = []
    for k, cell in enumerate(cells):
        d.text((20 + 200 * k, px), cell, font=f, fill=0)
        x0, y0, x1, y1 = d.textbbox((20 + 200 * k, px), cell, font=f)
        m = px // 3
        boxes.append(np.array([[x0 - m, y0 - m], [x1 + m, y0 - m], [x1 + m, y1 + m],
                               [x0 - m, y1 + m]], float))
    return np.asarray(im)[:, :, ::-1].copy(), boxes


@pytest.mark.parametrize(("path", "px", "dash"), [
    (LIB_SANS, 22, "\u2013"), (LIB_SANS, 30, "\u2014"), (DEJAVU, 30, "\u2014"),
    (LIB_MONO, 22, "\u2013"), (LIB_SANS, 22, "-")])
def test_a_lone_dash_read_cjk_one(path, px, dash):
    page, boxes = row_page(["Preetz", "06:19", dash, "06:57"], path, px)
    read = ["Preetz", "06:19", "\u4e00", "06:57"]
    assert lone_dashes([[0, 1, 2, 3]], boxes, read, page) == ["Preetz", "06:19", dash, "06:57"]


def test_a_cjk_page_keeps_its_one():
    """On a page with CJK print "一" is the numeral, whatever its ink."""
    page, boxes = row_page(["Preetz", "\u2013", "06:57"], LIB_SANS, 22)
    read = ["数量", "\u4e00", "06:57"]
    assert lone_dashes([[0, 1, 2]], boxes, read, page) == read


def test_no_neighbours_no_change():
    page, boxes = row_page(["\u2013"], LIB_SANS, 22)
    assert lone_dashes([[0]], boxes, ["\u4e00"], page) == ["\u4e00"]
