"""Round 41 (h3): a slash between numbers with a word gap on both sides keeps its spaces
(`spacing.missed_spaces`, `_both_sides`).

A title slide's footer "1 / 24" (Liberation Sans 18 px) read "1/24": the recognizer reads
the slash's blanks as nothing and `missed_spaces` looked at no gap beside a slash (a
monospaced "2/3" leaves a blank as wide as a word on one side). The oracle is the renderer:
one page drawn with PIL holds the lines it must read, spaced and unspaced."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

FONTS = "/usr/share/fonts/truetype/"
FACES = [("liberation2/LiberationSans-Regular.ttf", 30),
         ("liberation2/LiberationSans-Bold.ttf", 16),
         ("liberation2/LiberationSerif-Regular.ttf", 30)]
SPACED = ["Page 1 / 24", "3 / 12"]
TIGHT = ["Serving 2/3 cup", "Date 14/11/2026", "km/h 120"]


@pytest.fixture(scope="module")
def readings(pipe):
    """Each face's page: the spaced and the tight lines, read in one batch."""
    pages = []
    for path, px in FACES:
        try:
            f = ImageFont.truetype(FONTS + path, px)
        except OSError:
            pytest.skip(f"{path} not installed")
        lines = SPACED + TIGHT
        im = Image.new("RGB", (900, 60 + 2 * px * len(lines)), "white")
        d = ImageDraw.Draw(im)
        for i, t in enumerate(lines):
            d.text((30, 30 + 2 * px * i), t, font=f, fill=(0, 0, 0))
        pages.append(np.asarray(im))
    return [[" ".join(t.split()) for t in r.text.splitlines()] for r in pipe.run(pages)]


@pytest.mark.parametrize("k", range(len(FACES)))
def test_page_numbers_keep_their_spaces(readings, k):
    for t in SPACED:
        assert t in readings[k], (FACES[k], readings[k])


@pytest.mark.parametrize("k", range(len(FACES)))
def test_tight_slashes_take_no_space(readings, k):
    for t in TIGHT:
        assert t in readings[k], (FACES[k], readings[k])
