"""Tick marks as one sign. The recognizer reads a printed "✓" as "√" (the square root, the
tick of the Chinese forms it learned) and, alone in its box, as "V" (Noto Sans CJK at
22 px: 0.95 sure). A user's tick column or "✓ Paid" wants the check mark; the oracle is
the text rendered. A "√" before its operand and a lone letter "V" stay as they are."""

from __future__ import annotations

import os

import numpy as np
import pytest

from skiff.kernels.ocr.synth import CJK_INDEX_SC

TICKS = ["✓ Paid", "Approved ✓", "✓"]


def _lines(path, size, lines, index=0):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(path, size, index=index)
    pitch = int(size * 1.8)
    img = Image.new("RGB", (size * 10, pitch * len(lines) + 20), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((10, 10 + i * pitch), line, font=face, fill=0)
    return np.asarray(img)


@pytest.mark.parametrize("which, size", [("latin", 16), ("latin", 22), ("cjk", 22)])
def test_a_tick_reads_as_a_check_mark(pipe, fonts, which, size):
    index = CJK_INDEX_SC if which == "cjk" else 0
    (r,) = list(pipe.run([_lines(fonts[which], size, TICKS, index)]))
    assert [line.strip() for line in r.text.splitlines() if line.strip()] == TICKS, r.text


def test_a_root_and_a_lone_v_stay(pipe, fonts):
    path = os.path.join(os.path.dirname(fonts["latin"]), "DejaVuSans.ttf")
    lines = ["√2 = 1.414", "V", "Part V"]
    (r,) = list(pipe.run([_lines(path, 22, lines)]))
    assert [line.strip() for line in r.text.splitlines() if line.strip()] == lines, r.text


def test_tick_marks_rewrites_only_a_free_standing_root():
    from skiff.kernels.ocr.marks import tick_marks

    blank = np.full((30, 30, 3), 255, np.uint8)
    assert tick_marks("√ Paid", blank) == "✓ Paid"
    assert tick_marks("是 √", blank) == "是 ✓"
    assert tick_marks("√x + √(y)", blank) == "√x + √(y)"
    assert tick_marks("V", blank) == "V"  # no ink to lean: a letter
