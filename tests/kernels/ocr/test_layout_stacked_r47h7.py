"""Round 47 (h7): lines one over the other are no row (`layout._rows`, `STACKED_ROW`). A
bilingual road sign as a thumbnail read "市中心 City Centre 5 km": the distance's box, level
with both the Chinese name and the English one under it, began a row that took both. The
oracle is the renderer: each text's ink box as Pillow draws it at half the sign's size, grown
as the detector grows its regions (`det._unclip`, ratio 1.6), and the rows as drawn."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import ImageFont

from skiff.kernels.ocr.det import DetParams, _unclip, order_points
from skiff.kernels.ocr.layout import reading_rows

NOTO_BOLD = "/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc"
LIB_BOLD = "/usr/share/fonts/truetype/liberation2/LiberationSans-Bold.ttf"


def _face(path, px):
    try:
        return ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"font {path} missing")


def _box(text, path, px, x, y, right=False):
    face = _face(path, px)
    x0, y0, x1, y1 = face.getbbox(text)
    if right:  # flush right at x
        x -= face.getlength(text)
    ink = np.array([[x + x0, y + y0], [x + x1, y + y0], [x + x1, y + y1], [x + x0, y + y1]],
                   np.float32)
    grown = _unclip(ink, DetParams().unclip_ratio)
    return order_points(cv2.boxPoints(cv2.minAreaRect(grown))).astype(np.float32)


def _sign(scale):
    """The road sign of `bench_ocr_user47.road_sign` at ``scale``: boxes and texts."""
    boxes, texts = [], []
    rows = [("机场", "Airport", "12 km"), ("市中心", "City Centre", "5 km"),
            ("火车南站", "South Railway Station", "8 km")]
    for i, (zh, en, km) in enumerate(rows):
        y = 30 + i * 120
        for text, path, px, x, yy, right in [(zh, NOTO_BOLD, 40, 40, y, False),
                                             (en, LIB_BOLD, 24, 40, y + 54, False),
                                             (km, LIB_BOLD, 36, 720, y + 24, True)]:
            boxes.append(_box(text, path, round(px * scale), x * scale, yy * scale, right))
            texts.append(text)
    return boxes, texts


@pytest.mark.parametrize("scale", [0.5, 1.0])
def test_a_name_over_its_translation_is_two_rows(scale):
    boxes, texts = _sign(scale)
    got = [[texts[i] for i in row] for row in reading_rows(boxes)]
    assert got == [["机场", "12 km"], ["Airport"], ["市中心", "5 km"], ["City Centre"],
                   ["火车南站", "8 km"], ["South Railway Station"]], got


def test_a_row_of_cells_and_a_line_cut_in_two_stay_rows():
    # side by side boxes of unequal heights (a name and a large price, a line the detector
    # cut in two) are one row whatever their centres within half a line
    boxes = [_box("Espresso", LIB_BOLD, 18, 40, 100),
             _box("2.80", LIB_BOLD, 30, 400, 94, True),
             _box("Cappuccino with", LIB_BOLD, 18, 40, 150),
             _box("oat milk", LIB_BOLD, 18, 222, 152),
             _box("3.90", LIB_BOLD, 30, 400, 144, True)]
    texts = ["Espresso", "2.80", "Cappuccino with", "oat milk", "3.90"]
    got = [[texts[i] for i in row] for row in reading_rows(boxes)]
    assert got == [["Espresso", "2.80"], ["Cappuccino with", "oat milk", "3.90"]], got
