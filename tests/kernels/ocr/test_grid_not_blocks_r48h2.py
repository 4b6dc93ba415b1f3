"""A boarding pass (``benchmarks/bench_ocr_user48.py``, DejaVu Sans Condensed): small grey
labels over their values in a grid, the last row's values in large bold (GATE over "B42"),
a line of small print under them running across. `blocks.block_rows` took its left two
columns, bridged by that line, for one column of price tags (a label over a value 1.6 times
as tall) and read the pass block by block: "NORDAIR / PASSENGER FLIGHT / NOVAK/JANA MS NR
2817 / ... / BOARDING PASS / DATE / 14 JAN 2027 / ...", the airline's band and the grid's
rows torn apart, where its rows are the reading (as drawn; RapidOCR reads them so). A
column whose rows hold boxes a gutter apart, two rows or more, is a grid's and no block.
The boxes are skiff's detector's on the rendered pass; the rows are as the pass was drawn."""

from __future__ import annotations

import numpy as np

from skiff.kernels.ocr.blocks import block_rows


def _box(x0, y0, x1, y1):
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float64)


# (text, x0, y0, x1, y1) a row at a time, as drawn
PASS = [[("NORDAIR", 21, 12, 159, 42), ("BOARDING PASS", 613, 18, 798, 41)],
        [("PASSENGER", 20, 74, 98, 94), ("FLIGHT", 316, 75, 366, 93),
         ("DATE", 556, 74, 594, 93)],
        [("NOVAK/JANA MS", 19, 95, 191, 121), ("NR 2817", 317, 97, 408, 118),
         ("14 JAN 2027", 556, 95, 686, 122)],
        [("FROM", 19, 147, 63, 168), ("TO", 315, 148, 340, 168), ("CLASS", 556, 147, 602, 169)],
        [("Oslo OSL", 21, 169, 117, 193), ("Lisbon LIS", 316, 169, 426, 193),
         ("Economy", 554, 169, 654, 198)],
        [("GATE", 21, 234, 58, 253), ("BOARDING", 216, 234, 287, 254),
         ("SEAT", 435, 233, 474, 255), ("GROUP", 637, 235, 686, 253)],
        [("B42", 20, 257, 94, 294), ("07:35", 215, 257, 321, 295), ("23A", 434, 256, 512, 296),
         ("3", 636, 258, 664, 294)],
        [("Gate closes 20 minutes before departure. SEQ 088", 21, 334, 327, 351)]]


def test_a_grid_of_labels_over_values_keeps_its_rows():
    boxes, rows, texts = [], [], []
    for row in PASS:
        rows.append([])
        for text, *ext in row:
            rows[-1].append(len(boxes))
            boxes.append(_box(*ext))
            texts.append(text)
    out = block_rows(rows, boxes)
    # the band and the grid's rows of one print size read as drawn (before: "NORDAIR",
    # then the two left columns down to "Oslo OSL Lisbon LIS", then "BOARDING PASS")
    assert [" ".join(texts[i] for i in row) for row in out[:5]] == \
        [" ".join(t for t, *_ in row) for row in PASS[:5]]
    assert sorted(i for row in out for i in row) == list(range(len(boxes)))


def test_tags_of_one_box_a_row_still_read_tag_by_tag():
    # a name over a price 2.5 times as tall, twice side by side, a unit price under each
    boxes = [_box(10, 10, 120, 30), _box(300, 10, 420, 30), _box(10, 40, 150, 90),
             _box(300, 40, 440, 90), _box(10, 100, 100, 118), _box(300, 100, 390, 118)]
    assert block_rows([[0, 1], [2, 3], [4, 5]], boxes) == [[0], [2], [4], [1], [3], [5]]
