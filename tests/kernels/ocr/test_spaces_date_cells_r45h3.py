"""A table's date cell "19 Nov" read "19Nov" (round 45, issue 14; ``spacing.missed_spaces``,
``LONE_GAP``): a bank statement in Liberation Serif read its date column "02 Nov", "04 Nov",
... but "19Nov". The cell is a line of its own with no read space, so the word-number rule
had nothing to measure against, and the space's hint (0.0017-0.046) stayed under
``SPACE_P``. A word and a number there take a space where the gap is wide (``LONE_GAP`` of
the ink's height) and stands out from the line's other gaps (``LONE_OF_OTHERS``). Checked
on hand-placed glyph blocks and end to end on rendered cells against the text drawn; a
letter printed beside a digit ("Room12B", "F16", "No1", "3rd") stays so."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr import spacing
from skiff.kernels.ocr.spacing import missed_spaces

ALPHABET = ["", *"abcdefghijklmnopqrstuvwxyzN0123456789:.", " "]
SERIF = "/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf"
DJ_SERIF = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"


FW = 4  # input columns a CTC frame


def _line(cells, glyph=10, height=24):
    """A crop with one block of ink per ``(character, empty columns after it)`` and the CTC
    columns that read it (a frame per ``FW`` columns of a 48-row crop)."""
    width = sum(glyph + gap for _, gap in cells) + 8
    crop = np.full((48, width, 3), 255, np.uint8)
    best = np.zeros(width // FW + 1, np.int64)
    x = 4
    for ch, gap in cells:
        crop[12:12 + height, x:x + glyph] = 0
        best[(x + glyph // 2) // FW] = ALPHABET.index(ch)
        x += glyph + gap
    return crop, best


def _peak(best, k, p=0.01, rest=1e-6):
    """The space's probability per frame: ``p`` between the ``k``-th and the next
    character's frames, ``rest`` elsewhere (as the recognizer gives it in a gap it
    hesitates at)."""
    frames = np.flatnonzero(best)
    out = np.full(len(best), rest)
    out[frames[k] + 1:frames[k + 1]] = p
    return out


def test_a_lone_cells_word_number_gap_takes_a_space():
    # "19Nov": 14 empty columns after the "9" (0.58 of the 24-row ink), 3 elsewhere
    crop, best = _line([("1", 3), ("9", 14), ("N", 3), ("o", 3), ("v", 3)])
    assert missed_spaces("19Nov", best, _peak(best, 1), ALPHABET, crop, FW) == "19 Nov"
    # "Nov19" the other way round
    crop, best = _line([("N", 3), ("o", 3), ("v", 14), ("1", 3), ("9", 3)])
    assert missed_spaces("Nov19", best, _peak(best, 2), ALPHABET, crop, FW) == "Nov 19"


def test_a_lone_cells_tight_or_even_gaps_stay():
    # a gap under LONE_GAP (0.33 of the ink: "3rd" in DejaVu Sans Mono 28 px)
    crop, best = _line([("1", 3), ("9", 8), ("N", 3), ("o", 3), ("v", 3)])
    assert missed_spaces("19Nov", best, _peak(best, 1), ALPHABET, crop, FW) is None
    # wide, but the line's other gaps as wide: no word gap stands out
    crop, best = _line([("1", 9), ("9", 14), ("N", 9), ("o", 3), ("v", 3)])
    assert missed_spaces("19Nov", best, _peak(best, 1), ALPHABET, crop, FW) is None
    # the recognizer gave the space nothing there, or as much everywhere
    crop, best = _line([("1", 3), ("9", 14), ("N", 3), ("o", 3), ("v", 3)])
    assert missed_spaces("19Nov", best, _peak(best, 1, 1e-4), ALPHABET, crop, FW) is None
    assert missed_spaces("19Nov", best, np.full(len(best), 0.03), ALPHABET, crop,
                         FW) is None
    # two letters: not a word and a number
    crop, best = _line([("a", 3), ("b", 14), ("N", 3), ("o", 3), ("v", 3)])
    assert missed_spaces("abNov", best, _peak(best, 1), ALPHABET, crop, FW) is None


def _cells(words, face, size, blur):
    """A column of ``words`` drawn far apart (each a line of its own), blurred."""
    f = ImageFont.truetype(face, size)
    step = int(size * 2.4)
    im = Image.new("RGB", (size * 9, step * len(words) + 30), "white")
    d = ImageDraw.Draw(im)
    for i, w in enumerate(words):
        d.text((20, 15 + i * step), w, font=f, fill=0)
    return im.filter(ImageFilter.GaussianBlur(blur)) if blur else im


# the cells that read "19Nov" before (round 45's wnprobe.py), with tight words beside them
CASES = [(SERIF, 20, 0), (SERIF, 24, 0.8), (DJ_SERIF, 16, 0)]
WORDS = ["19 Nov", "Room12B", "F16", "No1", "3rd"]


@pytest.mark.parametrize("face,size,blur", CASES)
def test_rendered_date_cells_read_their_space(pipe, face, size, blur, monkeypatch):
    im = np.asarray(_cells(WORDS, face, size, blur))
    assert pipe(im).text.splitlines() == WORDS
    monkeypatch.setattr(spacing, "LONE_GAP", 99.0)  # the rule off: as before
    assert "19Nov" in pipe(im).text.splitlines()
