"""Tiles' column rule (round 32, h15): an invoice's Qty column of single digits, each box a
little taller than wide and ~13 px from the next in a tiles' overlap band, was chained into
one standing box read "6 2 4". A cut column joins only when one of its pieces is long (a
vertical line of several glyphs); the pieces of a real cut column still join."""

from __future__ import annotations

import numpy as np

from skiff.kernels.ocr.det import merge_tiled


def b(x0, y0, x1, y1):
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32)


def test_a_column_of_single_digits_stays_three_boxes():
    digits = [(b(911, 533 + 70 * i, 958, 590 + 70 * i), 0.9, True) for i in range(3)]
    assert len(merge_tiled(digits)) == 3


def test_a_vertical_line_cut_by_a_tile_edge_still_joins():
    pieces = [(b(400, 100, 440, 300), 0.9, True), (b(401, 305, 439, 380), 0.9, True)]
    (box, _), = merge_tiled(pieces)
    assert box[:, 1].min() == 100 and box[:, 1].max() == 380
