"""A table shot a degree or two askew (a payslip, a receipt photographed by a phone): each
short cell's box is level to a pixel, so the boxes' median angle gave half the skew, and a
row's name and its amount, far apart, fell into rows of their own ("2,591.85" read above
"Net pay"). The oracle is the table rendered, turned by a known angle: every row is read
as its cells, left to right; RapidOCR, a box a line, gives no rows to compare."""

from __future__ import annotations

import numpy as np
import pytest

ROWS = [("Gross pay", "4,250.00"), ("Income tax", "-812.40"), ("Social security", "-845.75"),
        ("Net pay", "2,591.85"), ("Pension", "-212.50")]


def _table(path, degrees):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(path, 18)
    img = Image.new("RGB", (720, 320), "white")
    draw = ImageDraw.Draw(img)
    for i, (name, amount) in enumerate(ROWS):
        draw.text((30, 30 + 50 * i), name, font=face, fill=0)
        draw.text((680 - draw.textlength(amount, font=face), 30 + 50 * i), amount,
                  font=face, fill=0)
    img = img.rotate(degrees, Image.BICUBIC, expand=True, fillcolor=(255, 255, 255))
    return np.asarray(img)


@pytest.mark.parametrize("degrees", [-2.5, -1.5, 0.0, 1.5, 2.5])
def test_a_tilted_table_reads_row_by_row(pipe, fonts, degrees):
    (r,) = list(pipe.run([_table(fonts["latin"], degrees)]))
    got = [" ".join(line.split()) for line in r.text.splitlines() if line.strip()]
    assert got == [f"{a} {b}" for a, b in ROWS], r.text


def test_lines_of_prose_a_row_apart_stay_apart(pipe, fonts):
    """The search for the rows' angle takes no line into the row above: a short line at the
    right, half a line lower than a long one at the left, stays a row of its own when the
    page is level."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(fonts["latin"], 18)
    img = Image.new("RGB", (900, 200), "white")
    draw = ImageDraw.Draw(img)
    draw.text((20, 30), "The first line of the note", font=face, fill=0)
    draw.text((700, 58), "page 12", font=face, fill=0)
    draw.text((20, 100), "The second line of the note", font=face, fill=0)
    draw.text((20, 150), "The third line of the note", font=face, fill=0)
    (r,) = list(pipe.run([np.asarray(img)]))
    got = [" ".join(line.split()) for line in r.text.splitlines() if line.strip()]
    assert got == ["The first line of the note", "page 12", "The second line of the note",
                   "The third line of the note"]
