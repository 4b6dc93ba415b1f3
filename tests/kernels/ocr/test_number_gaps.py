"""Two numbers a word's gap apart ("3,200.00 15,604.01", "2024-03-15 14:30:00", a row of
days "7 14 21 28") were read as one: the recognizer gave the gap a space's probability
under the blank's, and ``spacing.missed_spaces`` did not look between two characters of
numbers (a seven-segment "1" stands a word's gap from the digit before it), while
``spacing.cell_spaces`` took the spaces of tabular digits for a display's. The rule is
checked on glyph blocks placed by hand, and end to end on rendered lines against the text
they were drawn from: the spaces come back, and numbers with separators, and displays full
of "1"s, keep none they do not have."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from skiff.kernels.ocr.spacing import NUMBER_P, missed_spaces

ALPHABET = ["", *"0123456789,.:-", " "]


def _line(cells, glyph: int = 12, height: int = 24):
    """A crop with one block of ink per ``(character, empty columns after it, width or 0
    for ``glyph``)``,
    from column 4, and the CTC columns that read it (a frame per 8 crop columns on a crop
    48 rows high: the recognizer's input is the crop's own width)."""
    width = sum((w or glyph) + gap for _, gap, w in cells) + 8
    crop = np.full((48, width, 3), 255, np.uint8)
    best = np.zeros(width // 8 + 1, np.int64)
    x = 4
    for ch, gap, w in cells:
        w = w or glyph
        crop[12:12 + height, x:x + w] = 0
        best[(x + w // 2) // 8] = ALPHABET.index(ch)
        x += w + gap
    return crop, best


def _p(best, value):
    return np.full(len(best), value)


def test_the_gap_between_two_numbers_takes_a_space_the_recognizer_hinted():
    # "12 34": 14 empty columns (0.58 of the ink's height) between "2" and "3"
    cells = [("1", 3, 0), ("2", 14, 0), ("3", 3, 0), ("4", 3, 0)]
    crop, best = _line(cells)
    assert missed_spaces("1234", best, _p(best, NUMBER_P + 0.05), ALPHABET, crop, 8.0) == \
        "12 34"
    # a space's probability under NUMBER_P is a digit's cell (a monospaced "1" or ".")
    assert missed_spaces("1234", best, _p(best, NUMBER_P / 2), ALPHABET, crop, 8.0) is None


def test_a_separator_inside_a_number_never_takes_a_space():
    # "1,234": a monospaced comma stands at the left of its cell, a word's gap before "2"
    cells = [("1", 3, 0), (",", 14, 4), ("2", 3, 0), ("3", 3, 0), ("4", 3, 0)]
    crop, best = _line(cells)
    assert missed_spaces("1,234", best, _p(best, 0.3), ALPHABET, crop, 8.0) is None


def test_a_seven_segment_one_takes_no_space_before_it():
    # a display's "1" is one bar at the right of its cell (3 columns of 24 rows): its dark
    # left half is as wide as a word gap, and the recognizer hints a space there
    cells = [("8", 14, 0), ("1", 3, 3), ("8", 3, 0)]
    crop, best = _line(cells)
    assert missed_spaces("818", best, _p(best, 0.3), ALPHABET, crop, 8.0) is None
    # a printed "1" (flag and foot: 9 columns) after the same gap is another number
    cells = [("8", 14, 0), ("1", 3, 9), ("8", 3, 0)]
    crop, best = _line(cells)
    assert missed_spaces("818", best, _p(best, 0.3), ALPHABET, crop, 8.0) == "8 18"


def _face(pattern):
    found = sorted(glob.glob(f"/usr/share/fonts/truetype/{pattern}"))
    if not found:
        pytest.skip(f"{pattern} is not installed")
    return found[0]


def _page(path, size, lines):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(path, size)
    pitch = size * 2
    img = Image.new("RGB", (size * 24, pitch * len(lines) + 20), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((10, 10 + i * pitch), line, font=face, fill=(20, 20, 20))
    return np.asarray(img)


def _read(pipe, img):
    (r,) = list(pipe.run([img]))
    return [" ".join(line.split()) for line in r.text.splitlines() if line.strip()]


SPACED = ["3,200.00 15,604.01", "2024-03-15 14:30:00", "7 14 21 28", "12 345", "Qty 2 3.50"]
SOLID = ["1,234,567.89", "14:30:05", "2024-03-15", "192.168.10.1", "11117", "3.1415926"]


@pytest.mark.parametrize("pattern, size", [("dejavu/DejaVuSansMono.ttf", 16),
                                           ("liberation*/LiberationMono-Regular.ttf", 16),
                                           ("liberation*/LiberationSans-Regular.ttf", 16),
                                           ("liberation*/LiberationSerif-Regular.ttf", 16)])
def test_numbers_a_word_apart_read_apart_and_numbers_whole_read_whole(pipe, pattern, size):
    got = _read(pipe, _page(_face(pattern), size, SPACED + SOLID))
    assert got == SPACED + SOLID


@pytest.mark.parametrize("size", [24, 40])
def test_a_display_full_of_ones_reads_without_spaces(pipe, size):
    path = _face("dseg/DSEG7Classic-Regular.ttf")
    displays = ["11118", "635143", "1118", "21.17"]
    for text in displays:
        from PIL import Image, ImageDraw, ImageFont

        face = ImageFont.truetype(path, size)
        img = Image.new("RGB", (size * 8, size * 2), (10, 10, 10))
        ImageDraw.Draw(img).text((size // 2, size // 3), text, font=face, fill=(255, 60, 40))
        assert _read(pipe, np.asarray(img)) == [text], (text, size)


def test_rapidocr_reads_the_merged_amounts_as_one_too(pipe):
    """The peer's reading of the same page, for the record: where RapidOCR reads a gap
    skiff should too (a line RapidOCR spaces and skiff does not fails)."""
    rapidocr = pytest.importorskip("rapidocr")
    path = _face("liberation*/LiberationSans-Regular.ttf")
    img = _page(path, 16, SPACED)
    import logging

    logging.disable(logging.INFO)
    try:
        engine = rapidocr.RapidOCR(params={"EngineConfig.onnxruntime.intra_op_num_threads": 1})
        theirs = [" ".join(t.split()) for t in (engine(img[..., ::-1].copy()).txts or ())]
    finally:
        logging.disable(logging.NOTSET)
    ours = _read(pipe, img)
    assert len(ours) == len(SPACED)
    for want, got in zip(SPACED, ours, strict=True):
        if want in theirs:
            assert got == want
    assert any(want in theirs for want in SPACED), theirs  # the comparison was made


@pytest.mark.parametrize("pattern, size", [("dejavu/DejaVuSans.ttf", 16),
                                           ("dejavu/DejaVuSerif.ttf", 24),
                                           ("liberation*/LiberationSans-Regular.ttf", 24)])
def test_single_digits_a_word_apart_read_apart(pipe, pattern, size):
    """A calendar's week set as one line: the recognizer gives the gaps between single
    digits no space ("1234567"); ``spacing.digit_spaces`` reads them from the ink."""
    lines = ["1 2 3 4 5 6 7", "2 4 6", "4 5 6 7 8 9"]
    assert _read(pipe, _page(_face(pattern), size, lines)) == lines


@pytest.mark.parametrize("pattern, size", [("dejavu/DejaVuSerif.ttf", 12),
                                           ("dejavu/DejaVuSerif.ttf", 14),
                                           ("dejavu/DejaVuSans.ttf", 13)])
def test_numbers_of_two_digits_and_whole_numbers_stay(pipe, pattern, size):
    """Near the rule's edges: a "1"'s foot a third of the height from the next digit."""
    lines = ["12 3", "3 12", "10 5", "2046", "90210", "1171"]
    assert _read(pipe, _page(_face(pattern), size, lines)) == lines
