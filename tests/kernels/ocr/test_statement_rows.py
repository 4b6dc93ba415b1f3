"""A bank statement in a monospaced face, under a column of amounts: descriptions left,
under one gutter. Its right side's lines ("-45.99              12,404.01") are as wide as
prose, and the block was read as two columns of prose, every amount after every
description. A side whose lines are only amounts is a table's. The oracle is the
statement rendered, row by row."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from skiff.kernels.ocr.layout import is_amounts

ROWS = [[(0, "1,234,567")], [(0, "$3,450,000.00")], [(0, "987,654,321")], [(0, "12,345.67")],
        [(0, "USD 1,000,000.00")], [(0, "(1,234.56)")],
        [(0, "03/01"), (7, "Opening balance"), (34, "12,450.00")],  # debit 22, credit 28
        [(0, "03/04"), (7, "POS AMAZON MKTPL"), (22, "-45.99"), (34, "12,404.01")],
        [(0, "03/09"), (7, "SALARY ACME CORP"), (28, "3,200.00"), (34, "15,604.01")],
        [(0, "03/22"), (7, "Transfer to 1234-5678"), (22, "-1,000.00"), (34, "14,404.01")]]


def test_a_monospaced_statement_is_read_row_by_row(pipe):
    from PIL import Image, ImageDraw, ImageFont

    found = glob.glob("/usr/share/fonts/truetype/liberation*/LiberationMono-Regular.ttf")
    if not found:
        pytest.skip("Liberation Mono is not installed (fonts-liberation2)")
    size = 14
    face = ImageFont.truetype(found[0], size)
    img = Image.new("RGB", (size * 42 + 60, size * 2 * len(ROWS) + 60), "white")
    draw = ImageDraw.Draw(img)
    for i, row in enumerate(ROWS):
        for em, cell in row:
            draw.text((30 + em * size, 30 + i * 2 * size), cell, font=face, fill=(20, 20, 20))
    (r,) = list(pipe.run([np.asarray(img)]))
    got = [" ".join(line.split()) for line in r.text.splitlines() if line.strip()]
    assert got == [" ".join(cell for _, cell in row) for row in ROWS], r.text


def test_amounts_and_prose_told_apart():
    assert all(is_amounts(t) for t in ("-45.99  12,404.01", "$1,209.56", "(1,234.56)", "15%"))
    assert not any(is_amounts(t) for t in ("Opening balance", "Total 5", "USD 1,000.00", ""))
