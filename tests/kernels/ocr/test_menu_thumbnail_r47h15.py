"""Round 47 (h15): a menu's two columns as a thumbnail read a column at a time
(`panels.leader_columns`, `_leader_inside`). Shrunk to half, each dish, its dotted leader
and its price are boxed whole, and the two columns' boxes stand 17 px apart (under a box's
height), so the menu was read across ("Minestrone. 6.50 Spagheti arona 13.50"). The oracle
is the renderer: the menu drawn with Pillow, shrunk to half and saved as JPEG at quality 40
(`bench_ocr_probes.degrade`'s thumbnail), each entry boxed by its ink from the name to the
price grown as the detector grows its regions (`det._unclip`), the reading order as drawn."""

from __future__ import annotations

import io

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.det import DetParams, _unclip, order_points
from skiff.kernels.ocr.panels import leader_columns

SERIF = "/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf"
LEFT = [("Minestrone", "6.50"), ("Bruschetta al pomodoro", "7.20"),
        ("Carpaccio di manzo", "12.90"), ("Insalata caprese", "9.80")]
RIGHT = [("Spaghetti carbonara", "13.50"), ("Risotto ai funghi", "14.80"),
         ("Saltimbocca alla romana", "19.90"), ("Branzino al forno", "22.40")]


def _box(x0, y0, x1, y1, s):
    ink = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32) * s
    grown = _unclip(ink, DetParams().unclip_ratio)
    return order_points(cv2.boxPoints(cv2.minAreaRect(grown))).astype(np.float32)


def _menu(leaders: bool):
    """The menu of `bench_ocr_user47.restaurant_menu` as a thumbnail: the image, the boxes
    of its headings and entries, and its rows as read across (left entry, right entry)."""
    try:
        f = ImageFont.truetype(SERIF, 19)
    except OSError:
        pytest.skip("Liberation Serif missing")
    im = Image.new("RGB", (900, 360), (252, 248, 238))
    d = ImageDraw.Draw(im)
    boxes, rows = [], []
    heads = []
    for x, t in [(40, "Starters"), (480, "Mains")]:
        d.text((x, 84), t, font=f, fill=0)
        heads.append(len(boxes))
        boxes.append(_box(*d.textbbox((x, 84), t, font=f), 0.5))
    rows.append(heads)
    for i, pair in enumerate(zip(LEFT, RIGHT, strict=True)):
        y, row = 130 + i * 50, []
        for (key, price), x0, x1 in zip(pair, (40, 480), (420, 860), strict=True):
            d.text((x0, y), key, font=f, fill=0)
            px = x1 - d.textlength(price, font=f)
            d.text((px, y), price, font=f, fill=0)
            a, b = x0 + d.textlength(key, font=f) + 8, px - 8
            step = d.textlength(".", font=f) * 1.6
            for k in range(int((b - a) // step) if leaders else 0):
                d.text((a + k * step, y), ".", font=f, fill=0)
            l0, t0, _, b0 = d.textbbox((x0, y), key, font=f)
            _, t1, r1, b1 = d.textbbox((px, y), price, font=f)
            row.append(len(boxes))
            boxes.append(_box(l0, min(t0, t1), r1, max(b0, b1), 0.5))
        rows.append(row)
    im = im.resize((450, 180), Image.LANCZOS)
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=40)
    return np.asarray(Image.open(buf).convert("RGB")), boxes, rows


def test_a_thumbnail_menu_reads_a_column_at_a_time():
    image, boxes, rows = _menu(leaders=True)
    got = leader_columns(rows, boxes, image)
    # the drawn order: "Starters", the left column's dishes, "Mains", the right column's
    assert got == [[0], [2], [4], [6], [8], [1], [3], [5], [7], [9]], got


def test_two_columns_without_leaders_stay_rows():
    """A table's two columns of names and amounts (no dotted leaders): row by row."""
    image, boxes, rows = _menu(leaders=False)
    assert leader_columns(rows, boxes, image) == rows
