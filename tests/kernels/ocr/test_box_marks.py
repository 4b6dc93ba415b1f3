"""A crossed check box is "☒", against the marks rendered.

The recognizer reads a box with an X in it as "X" before its label ("X Share my data with
partners" on a form whose ticked boxes read nothing) or as the squared times sign "⊠"
(DejaVu's "☒" at 18-32 px); RapidOCR 3.10 reads "⊠" or nothing. ``marks.box_marks``
writes "☒" where a reading begins with such a mark and the crop's first ink is a square
frame with ink inside; a plain "X" and a product's "x" stay."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from skiff.kernels.ocr.marks import box_marks


def _face(pattern):
    found = sorted(glob.glob(f"/usr/share/fonts/truetype/{pattern}"))
    if not found:
        pytest.skip(f"{pattern} is not installed")
    return found[0]


def _form(size, marks, boxed=True):
    """A form's lines: a box drawn with a mark in it (or the mark alone) before each label
    (the geometry of ``bench_ocr_everyday.check_box_form``)."""
    from PIL import Image, ImageDraw, ImageFont

    face = _face("dejavu/DejaVuSans.ttf")  # Liberation has no "✓" or "✗" to draw
    sans, big = ImageFont.truetype(face, size), ImageFont.truetype(face, int(size * 1.3))
    img = Image.new("RGB", (size * 24, size * 3 * len(marks) + size * 2), "white")
    d = ImageDraw.Draw(img)
    for i, (mark, label) in enumerate(marks):
        y, b = size + i * size * 3, int(size * 1.53)
        if boxed:
            d.rectangle((size, y, size + b, y + b), outline=0, width=2)
        d.text((size + 4, y - 1), mark, font=big, fill=0)
        d.text((size + b + size, y + 2), label, font=sans, fill=0)
    return np.asarray(img)


FORM = [("✓", "Email me the invoice"), ("✗", "Share my data with partners"),
        ("✓", "Keep me signed in")]


@pytest.mark.parametrize("size", [17, 18, 24])
def test_a_box_with_a_cross_drawn_in_it_reads_as_a_crossed_box(pipe, size):
    lines = pipe(_form(size, FORM)).text.splitlines()
    crossed = [t.strip() for t in lines if "Share my data" in t]
    assert crossed == ["☒ Share my data with partners"], lines


def test_a_form_of_crossed_boxes_reads_each_as_a_crossed_box(pipe):
    marks = [("✗", "Share my data with partners"), ("✗", "Send me offers")]
    assert pipe(_form(24, marks)).text.splitlines() == [f"☒ {label}" for _, label in marks]


def test_the_crossed_box_glyph_reads_as_itself(pipe):
    from PIL import Image, ImageDraw, ImageFont

    size = 24
    img = Image.new("RGB", (size * 12, size * 3), "white")
    ImageDraw.Draw(img).text((size, size), "☒ Share my data", fill=0,
                             font=ImageFont.truetype(_face("dejavu/DejaVuSans.ttf"), size))
    assert pipe(np.asarray(img)).text.strip() == "☒ Share my data"


def test_a_plain_x_is_no_box(pipe):
    lines = pipe(_form(20, [("X", "Send me offers"), ("X", "Share my data")],
                       boxed=False)).text.splitlines()
    assert lines == ["X Send me offers", "X Share my data"]


def test_box_marks_needs_a_frame_in_the_ink():
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(_face("dejavu/DejaVuSans.ttf"), 24)
    crops = {}
    for framed in (True, False):
        img = Image.new("L", (200, 40), 255)
        d = ImageDraw.Draw(img)
        if framed:
            d.rectangle((4, 6, 32, 34), outline=0, width=2)
        d.text((10, 6), "X", font=face, fill=0)
        d.text((44, 8), "Yes", font=face, fill=0)
        crops[framed] = np.asarray(img)
    assert box_marks("X Yes", crops[True]) == "☒ Yes"
    assert box_marks("X Yes", crops[False]) == "X Yes"
    assert box_marks("Yes", crops[True]) == "Yes"  # nothing read there: nothing written
