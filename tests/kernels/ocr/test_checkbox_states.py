"""A form's check boxes read as their state, "☐", "☑" or "☒", before each label.

Round 28, a user's probe (forms in DejaVu Sans at 14-24 px, boxes drawn 1.53 times the
print with "✓", "✗" or nothing in them, and DejaVu's own "☐☑☒" glyphs; clean and as
phone shots): the recognizer read a ticked box as "☑", "✓" or nothing, an empty one as
"□" or nothing, and the detector left boxes at 14-16 px out of the line: 19 of 80 lines
began with their box's state. ``checkboxes.checkbox_text`` (the box as the crop's first
ink) and ``checkboxes.box_before`` (the box just left of the line's box) read the state
from the frame's inside: 72 of 80 (``/work/round28/h9-ocr-followups/boxes_probe.py``)."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from skiff.kernels.ocr.checkboxes import CROSSED, EMPTY, TICKED, checkbox_text, frame_state

SIGN = {"✓": TICKED, "✗": CROSSED, "": EMPTY}
FORM = [("✓", "Email me the invoice"), ("✗", "Share my data with partners"),
        ("", "Keep me signed in"), ("✓", "Send me offers")]


def _face():
    found = sorted(glob.glob("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))
    if not found:
        pytest.skip("DejaVu Sans is not installed")
    return found[0]


def _form(size, glyphs=False):
    from PIL import Image, ImageDraw, ImageFont

    sans, big = ImageFont.truetype(_face(), size), ImageFont.truetype(_face(), int(size * 1.3))
    img = Image.new("RGB", (size * 24, size * 3 * len(FORM) + size * 2), "white")
    d = ImageDraw.Draw(img)
    for i, (mark, label) in enumerate(FORM):
        y, b = size + i * size * 3, int(size * 1.53)
        if glyphs:  # the box as a character of the face
            d.text((size, y), SIGN[mark], font=sans, fill=0)
            d.text((3 * size, y), label, font=sans, fill=0)
        else:
            d.rectangle((size, y, size + b, y + b), outline=0, width=2)
            if mark:
                d.text((size + 4, y - 1), mark, font=big, fill=0)
            d.text((size + b + size, y + 2), label, font=sans, fill=0)
    return img


@pytest.mark.parametrize("size, glyphs, phone", [
    (14, False, False), (24, False, False), (14, False, True),
    (20, False, True), (18, True, False), (24, True, True)])
def test_each_box_reads_as_its_state_before_its_label(pipe, size, glyphs, phone):
    img = _form(size, glyphs)
    if phone:
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
        from bench_ocr_probes import degrade

        img = degrade(img, "phone", 1)
    got = pipe(np.asarray(img.convert("RGB")))
    lines = [" ".join(line.split()) for line in got.text.splitlines() if line.strip()]
    assert lines == [f"{SIGN[mark]} {label}" for mark, label in FORM]


def _crop(mark, word="Keep", size=24):
    """One line's crop as the detector boxes it: the box, then the word."""
    from PIL import Image, ImageDraw, ImageFont

    sans, big = ImageFont.truetype(_face(), size), ImageFont.truetype(_face(), int(size * 1.3))
    b = int(size * 1.53)
    img = Image.new("RGB", (size * 12, b + 8), "white")
    d = ImageDraw.Draw(img)
    if mark is not None:
        d.rectangle((4, 4, 4 + b, 4 + b), outline=0, width=2)
        if mark:
            d.text((8, 3), mark, font=big, fill=0)
    d.text((b + size, 8), word, font=sans, fill=0)
    return np.asarray(img)


def test_the_state_comes_from_the_frames_inside_and_plain_words_stay():
    assert checkbox_text("Keep", _crop("")) == f"{EMPTY} Keep"
    assert checkbox_text("□ Keep", _crop("")) == f"{EMPTY} Keep"
    assert checkbox_text("✓ Keep", _crop("✓")) == f"{TICKED} Keep"
    assert checkbox_text("V Keep", _crop("✗")) == f"{CROSSED} Keep"
    assert checkbox_text("Keep", _crop(None)) == "Keep"  # no box: nothing added
    assert checkbox_text("O Keep", _crop(None, "O Keep")) == "O Keep"  # a round letter
    assert checkbox_text("D0 Keep", _crop(None, "D0 Keep")) == "D0 Keep"
    assert checkbox_text("口罩", _crop("")) == "口罩"  # a CJK word stays


def test_a_frame_is_square_with_corners():
    ring = np.zeros((30, 30), np.uint8)
    yy, xx = np.mgrid[:30, :30]
    ring[(np.hypot(yy - 15, xx - 15) < 12) & (np.hypot(yy - 15, xx - 15) >= 10)] = 1
    assert frame_state(ring, (5, 40)) is None
    square = np.zeros((30, 30), np.uint8)
    square[4:26, 4:26] = 1
    square[6:24, 6:24] = 0
    assert frame_state(square, (5, 40))[0] == EMPTY
    wide = np.zeros((30, 60), np.uint8)
    wide[4:26, 4:56] = 1
    wide[6:24, 6:54] = 0
    assert frame_state(wide, (5, 40)) is None  # a table's cell, not a box


def test_an_icon_framed_with_a_solid_square_is_no_box():
    """A UI list's icon (a square outline around a filled square) before "Settings" was
    read "☒ Settings" (round 28, a user's probe): a solid mark is no tick or cross."""
    img = _crop(None, "Settings").copy()
    img[4:30, 4:30] = 255
    img[4:30, 4:6] = img[4:30, 28:30] = img[4:6, 4:30] = img[28:30, 4:30] = 0
    img[11:23, 11:23] = 0
    assert checkbox_text("Settings", img) == "Settings"
    img[11:23, 11:23] = 255  # the same frame, empty: a box
    assert checkbox_text("Settings", img) == f"{EMPTY} Settings"


@pytest.mark.parametrize("key", ["K", "1", "S", "Q"])
def test_a_keycap_is_no_box(pipe, key):
    """A shortcut legend's keys, a letter or digit framed before its action, were read as
    crossed or ticked boxes ("☒ K Keep going", "☑ First tab"; round 28, a user's probe): a
    letter's stem, bar, arc or apex is no tick or cross."""
    from PIL import Image, ImageDraw, ImageFont

    sans = ImageFont.truetype(_face(), 16)
    img = Image.new("RGB", (400, 60), "white")
    d = ImageDraw.Draw(img)
    d.rectangle((20, 16, 44, 40), outline=0, width=2)
    d.text((27, 18), key, font=sans, fill=0)
    d.text((58, 18), "Keep going", font=sans, fill=0)
    got = pipe(np.asarray(img)).text
    assert not any(sign in got for sign in (EMPTY, TICKED, CROSSED)), got
