"""A train ticket: each station large, its pinyin, the date and the seat under it, the two
stations side by side with paper between. Set in Liberation Mono and WenQuanYi Zen Hei its
columns' lines differed 1.6 times in height, and `blocks.block_rows` read it as two blocks
of price tags, column by column ("北京南站 G1 / Beijingnan / ... / 上海虹桥站 /
Shanghaihongqiao / ..."), where the rows are its reading ("北京南站 G1 上海虹桥站"; RapidOCR
reads it so). A tag is a name over a price that much taller; a column only growing smaller
downwards is a heading over its details and no block. The boxes are the detector's on the
rendered ticket (`benchmarks/bench_ocr_user44.py` in those faces)."""

from __future__ import annotations

import numpy as np

from skiff.kernels.ocr.blocks import block_rows


def _box(x0, y0, x1, y1):
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float64)


# (text, x0, y0, x1, y1): skiff's detector's boxes of the ticket (Liberation Mono, Zen Hei;
# the one tilted box squared to its extent)
TICKET = [("E12345678", 36, 23, 151, 45), ("北京南站", 54, 80, 224, 130),
          ("G1", 313, 90, 362, 124), ("上海虹桥站", 538, 78, 744, 131),
          ("Beijingnan", 55, 134, 195, 164), ("Shanghaihongqiao", 537, 133, 753, 164),
          ("2026年12月08日 09:00开", 57, 202, 370, 232), ("05车 12F号", 475, 198, 618, 233),
          ("¥553.0元", 54, 252, 176, 286), ("二等座", 475, 251, 563, 286),
          ("仅供报销使用 Reimbursement only", 57, 321, 367, 346)]


def test_a_tickets_rows_stay_rows():
    boxes = [_box(*b[1:]) for b in TICKET]
    rows = [[0], [1, 2, 3], [4, 5], [6, 7], [8, 9], [10]]
    assert block_rows(rows, boxes) == rows


def test_price_tags_beside_it_still_read_tag_by_tag():
    # a name over a price 2.5 times as tall, twice side by side, a unit price under each
    boxes = [_box(10, 10, 120, 30), _box(300, 10, 420, 30), _box(10, 40, 150, 90),
             _box(300, 40, 440, 90), _box(10, 100, 100, 118), _box(300, 100, 390, 118)]
    rows = [[0, 1], [2, 3], [4, 5]]
    assert block_rows(rows, boxes) == [[0], [2], [4], [1], [3], [5]]
    # the same tags under a large heading over the left one: still tag by tag
    boxes.append(_box(10, -60, 200, 0))
    assert block_rows([[6], *rows], boxes)[1:] == [[0], [2], [4], [1], [3], [5]]
