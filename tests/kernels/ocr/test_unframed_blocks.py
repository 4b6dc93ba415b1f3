"""Blocks side by side with only paper between them are read block by block.

Price tags printed on a white strip (a name over a big price over a unit price, no frame,
no fill) were read as rows across the tags ("Bananas Oat milk 1L Eggs 10 pcs / 1.29 2.49
3.19 / ..."; round 28, a user's probe of 12 such pages, 2 or 3 tags a row, one or two rows,
with and without a heading, clean and as phone shots: 0.428 of the characters in reading
order, 1.000 since): ``blocks.block_rows`` reads each block's rows together where every
column between the gutters holds lines of two sizes. A table of one print size stays row
by row."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr.blocks import block_rows

from .test_price_tags import BOLD, PLAIN, TAGS, _face, _lines, _table


def _tags(n, rows=1, heading=None):
    """``n`` unframed tags a row on white paper: (image, lines in reading order)."""
    from PIL import Image, ImageDraw, ImageFont

    top = 60 if heading else 20
    img = Image.new("RGB", (40 + 250 * n, top + 210 * rows), (250, 250, 250))
    d = ImageDraw.Draw(img)
    truth = [heading] if heading else []
    if heading:
        d.text((20, 16), heading, font=ImageFont.truetype(_face(BOLD), 24), fill=(0, 0, 0))
    for r in range(rows):
        for k in range(n):
            name, price, unit = TAGS[(r * n + k) % len(TAGS)]
            x, y = 20 + 250 * k, top + 210 * r
            d.text((x + 12, y + 10), name, font=ImageFont.truetype(_face(BOLD), 20), fill=0)
            d.text((x + 12, y + 48), price, font=ImageFont.truetype(_face(BOLD), 64),
                   fill=(190, 0, 0))
            d.text((x + 12, y + 150), unit, font=ImageFont.truetype(_face(PLAIN), 15),
                   fill=0)
            truth += [name, price, unit]
    return img, truth


@pytest.mark.parametrize("n, rows, heading", [(2, 1, None), (3, 1, None), (3, 1, "Offers"),
                                              (2, 2, None)])
def test_unframed_tags_read_tag_by_tag(pipe, n, rows, heading):
    img, truth = _tags(n, rows, heading)
    assert _lines(pipe, img) == truth


def test_a_table_of_one_print_size_stays_row_by_row(pipe):
    img, rows = _table(False)
    assert _lines(pipe, img) == rows


def _box(x, y, w, h):
    return np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float64)


def test_block_rows_needs_two_sizes_in_every_column():
    # two columns of one size each (a two-column table): unchanged
    boxes = [_box(x, y, 80, 20) for y in (10, 50, 90) for x in (10, 300)]
    rows = [[0, 1], [2, 3], [4, 5]]
    assert block_rows(rows, boxes) == rows
    # a big line under a name in each column: read column by column
    boxes[2], boxes[3] = _box(10, 40, 80, 50), _box(300, 40, 80, 50)
    boxes[4], boxes[5] = _box(10, 100, 80, 20), _box(300, 100, 80, 20)
    assert block_rows(rows, boxes) == [[0], [2], [4], [1], [3], [5]]
    # a line under the blocks, across the gutter, follows them
    wide = [*boxes[:4], _box(10, 100, 380, 20)]
    assert block_rows([[0, 1], [2, 3], [4]], wide) == [[0], [2], [1], [3], [4]]
    # a line across the gutter between a name and its price joins the columns: unchanged
    mixed = [boxes[0], boxes[1], _box(10, 40, 380, 50), boxes[4], boxes[5]]
    assert block_rows([[0, 1], [2], [3, 4]], mixed) == [[0, 1], [2], [3, 4]]
