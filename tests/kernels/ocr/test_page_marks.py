"""A page number's spaces and a checklist's crosses, against the text rendered.

"- 1 -" at a page's foot was read "-1-": the recognizer gives a single digit's gaps no
space at all, and the dashes' ink stands a word's gap away (``marks.page_number_spaces``).
The recognizer has no cross mark: "✗" read "X" or "x" beside ticks read "✓"; on a page
with ticks a cross standing as a word is "✗" (``marks.cross_marks``), and elsewhere an
"x" or "X" stays a letter or a product."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from skiff.kernels.ocr.marks import cross_marks


def _face(pattern):
    found = sorted(glob.glob(f"/usr/share/fonts/truetype/{pattern}"))
    if not found:
        pytest.skip(f"{pattern} is not installed")
    return found[0]


def _read(pipe, path, size, lines, width=None):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(path, size)
    img = Image.new("RGB", (width or size * 10, size * 2 * len(lines) + size * 2), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((size, size + i * size * 2), line, font=face, fill=(20, 20, 20))
    (r,) = list(pipe.run([np.asarray(img)]))
    return [line.strip() for line in r.text.splitlines() if line.strip()]


FACES = ["dejavu/DejaVuSans.ttf", "liberation*/LiberationSans-Regular.ttf",
         "liberation*/LiberationSerif-Regular.ttf"]


@pytest.mark.parametrize("pattern", FACES)
@pytest.mark.parametrize("size", [12, 16, 24])
@pytest.mark.parametrize("footer", ["- 1 -", "- 12 -", "-12-"])
def test_a_page_number_keeps_the_spaces_its_ink_shows(pipe, pattern, size, footer):
    assert _read(pipe, _face(pattern), size, [footer]) == [footer]


@pytest.mark.parametrize("size", [12, 16, 24])
def test_a_checklist_page_reads_ticks_and_crosses(pipe, size):
    path = _face("dejavu/DejaVuSans.ttf")  # Liberation has no "✓" or "✗" to draw
    lines = ["✓ Passed", "✗ Failed", "✓ Skipped", "Tests: ✓ 12 ✗ 3", "2 x 3.50 Paid"]
    assert _read(pipe, path, size, lines, width=size * 16) == lines


def test_an_x_stays_a_letter_or_a_product_without_ticks(pipe):
    lines = ["2 x 3.50", "Malcolm X", "x-ray", "X marks the spot"]
    assert _read(pipe, _face("dejavu/DejaVuSans.ttf"), 16, lines, width=16 * 16) == lines


def test_crosses_need_a_tick_on_the_page():
    assert cross_marks(["x Failed", "X"]) == ["x Failed", "X"]
    assert cross_marks(["✓ Passed", "x Failed", "X", "Malcolm X"]) == \
        ["✓ Passed", "✗ Failed", "✗", "Malcolm X"]
    assert cross_marks(["✓ 2 x 3.50", "✓ 3 × 4 ×"]) == ["✓ 2 x 3.50", "✓ 3 × 4 ✗"]
