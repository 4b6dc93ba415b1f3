"""Word gaps the recognizer read as nothing, put back from the crop's ink
(``spacing.missed_spaces``): "line7" for "line 7" on a JPEG'd scan rendered at 2x, as a scanned
PDF's pages are. The rule is checked on glyph boxes placed by hand, and end to end on rendered
lines against the truth they were drawn from."""

from __future__ import annotations

import os

import numpy as np
import pytest

from skiff.kernels.ocr.spacing import missed_spaces

ALPHABET = ["", *"abcdefghijklmnopqrstuvwxyz0123456789:.", "中", "文", " "]


def _line(cells: list[tuple[str, int]], glyph: int = 10, height: int = 24):
    """A crop with one block of ink per ``(character, empty columns after it)``, from column
    4, and the CTC columns that read it: a frame per 8 crop columns (the crop is 48 rows
    high, so the recognizer's input is its own width), each character's frame on its block."""
    width = sum(glyph + gap for _, gap in cells) + 8
    crop = np.full((48, width, 3), 255, np.uint8)
    best = np.zeros(width // 8 + 1, np.int64)
    x = 4
    for ch, gap in cells:
        crop[12:12 + height, x:x + glyph] = 0
        best[(x + glyph // 2) // 8] = ALPHABET.index(ch)
        x += glyph + gap
    return crop, best


def _text(cells):
    return "".join(ch for ch, _ in cells)


def _hint(best, p=0.03):
    """The space's probability per frame: ``p`` everywhere (under the blank's, as where the
    greedy path read nothing)."""
    return np.full(len(best), p)


def test_a_word_gap_read_as_nothing_is_put_back():
    # "ab cd7": the space read after "b" spans 12 columns (0.5 of the ink's 24 rows); the
    # 11 after "d" were read as nothing
    cells = [("a", 3), ("b", 12), ("c", 3), ("d", 11), ("7", 3)]
    crop, best = _line(cells)
    best[(27 + 39) // 2 // 8] = ALPHABET.index(" ")  # the read space: columns 27-39
    assert missed_spaces("ab cd7", best, _hint(best), ALPHABET, crop, 8.0) == "ab cd 7"
    # the recognizer must have given the space some probability there (an "ff" split by a
    # photo's blur has a gap and no such hint)
    assert missed_spaces("ab cd7", best, _hint(best, 0.0), ALPHABET, crop, 8.0) is None
    assert missed_spaces("ab cd7", best, None, ALPHABET, crop, 8.0) is None
    # a gap under SPACE_GAP of the height, or under 0.8 of the line's read spaces, stays shut
    narrow = [("a", 3), ("b", 12), ("c", 3), ("d", 6), ("7", 3)]
    crop, best = _line(narrow)
    assert missed_spaces("ab cd7", best, _hint(best), ALPHABET, crop, 8.0) is None
    wide_read = [("a", 3), ("b", 20), ("c", 3), ("d", 11), ("7", 3)]
    crop, best = _line(wide_read)
    assert missed_spaces("ab cd7", best, _hint(best), ALPHABET, crop, 8.0) is None


def test_numbers_cjk_punctuation_and_other_readings_are_left_alone():
    # two digits need the space at NUMBER_P or more (a display's right-set "1", a digit in
    # a monospaced cell, stand a word's gap from the digit before; test_number_gaps.py)
    cells = [("a", 12), ("b", 3), ("1", 11), ("2", 3)]
    crop, best = _line(cells)
    assert missed_spaces("a b12", best, _hint(best), ALPHABET, crop, 8.0) is None
    # Chinese is written without spaces
    cells = [("a", 12), ("b", 3), ("中", 11), ("文", 3)]
    crop, best = _line(cells)
    assert missed_spaces("a b中文", best, _hint(best), ALPHABET, crop, 8.0) is None
    # no space before a colon (an italic's overhang leaves a gap there)
    cells = [("a", 12), ("b", 11), (":", 3)]
    crop, best = _line(cells)
    assert missed_spaces("a b:", best, _hint(best), ALPHABET, crop, 8.0) is None
    # a text that is not the frames' reading (word mending changed a letter): untouched
    cells = [("a", 12), ("b", 3), ("c", 11), ("d", 3)]
    crop, best = _line(cells)
    assert missed_spaces("a bxd", best, _hint(best), ALPHABET, crop, 8.0) is None
    assert missed_spaces("a bcd", best, _hint(best), ALPHABET, crop, 8.0) == "a bc d"


def test_a_line_with_no_space_read_needs_a_stronger_hint():
    cells = [("l", 3), ("i", 3), ("n", 3), ("e", 12), ("7", 3)]
    crop, best = _line(cells)
    assert missed_spaces("line7", best, _hint(best), ALPHABET, crop, 8.0) is None
    p = np.zeros(len(best))
    p[(53 + 65) // 2 // 8] = 0.09  # the space's probability in the gap (53-65), under blank
    assert missed_spaces("line7", best, p, ALPHABET, crop, 8.0) == "line 7"


def _render(text: str, face: str, size: int, up: float, quality: int) -> np.ndarray:
    """A line drawn tight (2 px around the ink), JPEG-compressed, then enlarged ``up`` times
    (a scanned page rendered at twice its scan's resolution)."""
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(face, size)
    left, top, right, bottom = font.getbbox(text)
    img = Image.new("L", (right - left + 4, bottom - top + 4), 255)
    ImageDraw.Draw(img).text((2 - left, 2 - top), text, font=font, fill=0)
    grey = np.asarray(img)
    grey = cv2.imdecode(cv2.imencode(".jpg", grey, [cv2.IMWRITE_JPEG_QUALITY, quality])[1], 0)
    if up != 1:
        grey = cv2.resize(grey, None, fx=up, fy=up, interpolation=cv2.INTER_CUBIC)
    return np.repeat(grey[..., None], 3, axis=2)


def test_a_scanned_pdfs_lines_read_with_their_spaces(fonts, tmp_path, monkeypatch):
    """A scanned document as a user has it: three pages drawn at 100 dpi, saved by Pillow as
    a PDF (each page a JPEG inside) and rendered by skiff at 200 dpi. Without the rule 5 of
    its 30 lines lost a space ("Page 1 line7:", "Page3 line10:"); with it every line whose
    letters are read right is read exactly, and no line read right before is changed."""
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr import OcrPipeline, reading

    font = ImageFont.truetype(fonts["latin"], 28)
    pages, truth = [], []
    for k in range(1, 4):
        page = Image.new("RGB", (800, 1000), "white")
        draw = ImageDraw.Draw(page)
        for j in range(10):
            truth.append(f"Page {k} line {j + 1}: the quick brown fox")
            draw.text((60, 60 + 80 * j), truth[-1], font=font, fill="black")
        pages.append(page)
    pdf = tmp_path / "scan.pdf"
    pages[0].save(pdf, save_all=True, append_images=pages[1:], resolution=100)
    pipe = OcrPipeline("ch", device="cpu", threads=2)
    now = [line.text for r in pipe.run([str(pdf)]) for line in r.lines]
    monkeypatch.setattr(reading, "missed_spaces", lambda *a, **k: None)
    before = [line.text for r in pipe.run([str(pdf)]) for line in r.lines]
    assert len(now) == len(before) == len(truth)
    lost = [b for b, t in zip(before, truth, strict=True)
            if b != t and "".join(b.split()) == "".join(t.split())]
    assert len(lost) >= 2, before  # the case exists
    for b, n, t in zip(before, now, truth, strict=True):
        if b == t:
            assert n == t
        if "".join(n.split()) == "".join(t.split()):
            assert n == t, (b, n)


@pytest.mark.parametrize("text", ["Croissant", "illicit", "x = 1 if a else b"])
def test_monospaced_letters_stay_together(text):
    """A monospaced font's narrow letters stand up to 0.4 of the height apart: under a read
    space's 0.8, and under SPACE_GAP in a line with none."""
    from skiff.kernels.ocr import OcrPipeline

    mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
    if not os.path.exists(mono):
        pytest.skip("DejaVu Sans Mono is not installed")
    pipe = OcrPipeline("ch", device="cpu", threads=2, use_det=False)
    for size in (16, 24):
        assert pipe(_render(text, mono, size, 2, 90)).text == text


def test_the_ink_of_a_line_half_in_shadow(fonts):
    """A photo's shadow over half a line: a global threshold takes the shadowed half for
    ink whole (its letters would be one glyph, its gaps none, and the lit half's ground
    ink); measured against its own neighbourhood, each half's letters stand apart."""
    from skiff.kernels.ocr.spacing import ink_mask, local_ink_mask

    crop = _render("Welcome back", fonts["latin"], 24, 1, 95).astype(np.float32)
    crop = crop * 0.8 + 40  # grey print on a light ground
    half = crop.shape[1] // 2
    crop[:, half:] *= np.linspace(0.6, 0.35, crop.shape[1] - half)[None, :, None]
    crop = crop.astype(np.uint8)

    def gaps(mask, lo, hi):
        on = np.r_[False, mask[:, lo:hi].any(0), False]
        return int(np.sum(on[1:] & ~on[:-1])) - 1

    assert gaps(ink_mask(crop), half, crop.shape[1]) <= 0  # the shadow is one block
    assert gaps(local_ink_mask(crop), 0, half) >= 4  # "Welco": letters apart
    assert gaps(local_ink_mask(crop), half, crop.shape[1]) >= 4  # "me back"
