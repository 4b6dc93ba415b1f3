"""Amounts in a monospaced face (a bank statement, a receipt): Liberation Mono sets "," and
"." at the left of a digit's cell, and the recognizer read the rest of the cell as a space
("$3, 450,000.00", "987,654, 321"). The oracle is the text rendered: each amount is read
exactly, and real spaces after a separator (lists, pairs) stay in both kinds of face."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

AMOUNTS = ["1,234,567", "$3,450,000.00", "987,654,321", "12,345.67", "-1,000.00"]
LISTS = ["Values: 1.5, 2.5, 3.5", "Lot 7, 450,000 units", "Totals 1,200, 3,400 and 5,600"]


def _face(name):
    found = glob.glob(f"/usr/share/fonts/truetype/liberation*/{name}")
    if not found:
        pytest.skip(f"{name} is not installed (fonts-liberation2)")
    return found[0]


def _lines(path, size, lines):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(path, size)
    pitch = int(size * 1.8)
    img = Image.new("RGB", (size * 22, pitch * len(lines) + 20), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((10, 10 + i * pitch), line, font=face, fill=(20, 20, 20))
    return np.asarray(img)


@pytest.mark.parametrize("size", [11, 16])
def test_monospaced_amounts_read_without_a_space_after_their_separators(pipe, size):
    (r,) = list(pipe.run([_lines(_face("LiberationMono-Regular.ttf"), size, AMOUNTS)]))
    assert [line.strip() for line in r.text.splitlines() if line.strip()] == AMOUNTS, r.text


@pytest.mark.parametrize("name, size", [("LiberationMono-Regular.ttf", 11),
                                        ("LiberationMono-Regular.ttf", 16),
                                        ("LiberationSerif-Regular.ttf", 14)])
def test_a_real_space_after_a_separator_stays(pipe, fonts, name, size):
    path = _face(name)
    (r,) = list(pipe.run([_lines(path, size, LISTS)]))
    got = [" ".join(line.split()) for line in r.text.splitlines() if line.strip()]
    assert got == LISTS, r.text


def test_a_dejavu_list_keeps_its_spaces(pipe, fonts):
    path = os.path.join(os.path.dirname(fonts["latin"]), "DejaVuSerif.ttf")
    if not os.path.exists(path):
        pytest.skip("DejaVu Serif is not installed")
    (r,) = list(pipe.run([_lines(path, 14, LISTS)]))
    got = [" ".join(line.split()) for line in r.text.splitlines() if line.strip()]
    assert got == LISTS, r.text
