"""Round 37 (h3): an en dash read "-" and a dotted leader's first dot read onto its dish,
against rendered ground truth (the text drawn is the oracle; the readings are the
recognizer's, round 36's `dash.py` and menu photos)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.marks import en_dashes
from skiff.kernels.ocr.panels import leader_stubs

FONTS = "/usr/share/fonts/truetype/"
LIB_SANS = FONTS + "liberation2/LiberationSans-Regular.ttf"
LIB_SERIF = FONTS + "liberation2/LiberationSerif-Regular.ttf"
LIB_MONO = FONTS + "liberation2/LiberationMono-Regular.ttf"
DEJAVU = FONTS + "dejavu/DejaVuSans.ttf"
DEJAVU_BOLD = FONTS + "dejavu/DejaVuSans-Bold.ttf"
MONO_BOLD = FONTS + "liberation2/LiberationMono-Bold.ttf"


def _face(path: str, px: int):
    try:
        return ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")


def line_crop(text: str, path: str, px: int) -> np.ndarray:
    """``text`` drawn black on white with a detector box's margin, as a BGR crop."""
    f = _face(path, px)
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    x0, y0, x1, y1 = probe.textbbox((0, 0), text, font=f)
    pad = px // 3
    im = Image.new("RGB", (x1 - x0 + 2 * pad, y1 - y0 + 2 * pad), "white")
    ImageDraw.Draw(im).text((pad - x0, pad - y0), text, font=f, fill=0)
    return np.asarray(im)[:, :, ::-1].copy()


@pytest.mark.parametrize("truth, read, path, px", [
    ("Mon – Fri", "Mon - Fri", LIB_SANS, 18),
    ("pages 12–15", "pages 12-15", LIB_MONO, 26),
    ("1990–2026", "1990-2026", LIB_SERIF, 26),
    ("Open 9–17", "Open 9-17", DEJAVU, 26),
    # the space the recognizer dropped beside the dash comes back from the ink's blank
    ("8:00 – 18:30", "8:00 -18:30", LIB_SERIF, 18),
    ("8:00 – 18:30", "8:00-18:30", LIB_SERIF, 26),
])
def test_en_dash_read_as_hyphen(truth, read, path, px):
    assert en_dashes(read, line_crop(truth, path, px)) == truth


@pytest.mark.parametrize("path", [LIB_SANS, LIB_SERIF, LIB_MONO, DEJAVU, DEJAVU_BOLD, MONO_BOLD])
def test_hyphens_stay(path):
    """A hyphen's ink spans at most 0.36 of the digit height in every installed face."""
    for px in (14, 26):
        for text in ("2026-12-06", "well-known fact", "Tel 021-555-0187", "x = -3", "A-4 paper"):
            assert en_dashes(text, line_crop(text, path, px)) == text, (text, px)


def test_minus_in_arithmetic():
    """A wide dash in a line with "=" is a minus sign, not an en dash."""
    assert en_dashes("12 - 5 = 7", line_crop("12 − 5 = 7", LIB_MONO, 26)) == "12 − 5 = 7"


def test_a_sign_is_no_en_dash():
    """A display's minus ("-80.4" on a DSEG meter in the hard set) and "x = -3" stay."""
    assert en_dashes("-12.5", line_crop("\u221212.5", LIB_SANS, 26)) == "-12.5"
    assert en_dashes("x = -3", line_crop("x = \u22123", LIB_SANS, 26)) == "x = -3"


def test_cjk_line_stays():
    """AR PL UKai's hyphen spans half the digit height (the hard set's "电话 010-8821")."""
    path = "/usr/share/fonts/truetype/arphic/ukai.ttc"
    assert en_dashes("电话 010-8821", line_crop("电话 010-8821", path, 26)) == "电话 010-8821"


def test_no_space_beside_a_mark():
    """A prompt's "~" read "-" after a colon: no space goes in ("build: –/skiff")."""
    mono = FONTS + "dejavu/DejaVuSansMono.ttf"  # the probes' terminal
    read = en_dashes("alice@build:-/skiff$", line_crop("alice@build:~/skiff$", mono, 18))
    assert " " not in read


def test_counts_differ_nothing_changes():
    # two dashes drawn, one read: which is which is unknown
    crop = line_crop("9–12 and 14–17", LIB_SANS, 26)
    assert en_dashes("9-12 and 1417", crop) == "9-12 and 1417"


def _menu_row(name: str, price: str, path: str, px: int, stub: bool):
    """A dish, its price flush right and a dotted leader between (dots one ". " apart from
    one ". " after the name), with the boxes a detector gives: the name's (and, where the
    recognizer read it, the leader's first dot's) and the price's."""
    f = _face(path, px)
    im = Image.new("RGB", (560, 3 * px), (252, 250, 245))
    d = ImageDraw.Draw(im)
    x0, x1, y = 20, 540, px
    d.text((x0, y), name, font=f, fill=(40, 30, 20))
    w = d.textlength(price, font=f)
    d.text((x1 - w, y), price, font=f, fill=(40, 30, 20))
    dot = d.textlength(". ", font=f)
    x, first = x0 + d.textlength(name, font=f) + dot, None
    while x < x1 - w - dot:
        d.text((x, y), ".", font=f, fill=(90, 80, 70))
        first = first or d.textbbox((x, y), ".", font=f)
        x += dot
    a = d.textbbox((x0, y), name, font=f)
    right = first[2] + 1 if stub else a[2]
    b = d.textbbox((x1 - w, y), price, font=f)

    def box(l, t, r, btm):
        return np.array([[l - 2, t - 3], [r + 2, t - 3], [r + 2, btm + 3], [l - 2, btm + 3]],
                        np.float32)
    return np.asarray(im)[:, :, ::-1].copy(), [box(*a[:2], right, a[3]), box(*b)]


@pytest.mark.parametrize("path", [LIB_SERIF, DEJAVU])
def test_leader_first_dot_read_onto_the_dish(path):
    image, boxes = _menu_row("Croissant", "2.80", path, 22, stub=True)
    assert leader_stubs([[0, 1]], boxes, ["Croissant.", "2.80"], image) == ["Croissant", "2.80"]


@pytest.mark.parametrize("path", [LIB_SERIF, DEJAVU])
def test_a_names_own_point_stays(path):
    # "approx." ends in its own point, a space before the leader: the run begins past it
    image, boxes = _menu_row("Soup approx.", "7.90", path, 22, stub=False)
    texts = ["Soup approx.", "7.90"]
    assert leader_stubs([[0, 1]], boxes, texts, image) == texts


def test_one_box_reading():
    """A mono receipt's line boxed whole: "Orange juice ...... 4.50" read with the dot."""
    text = "Orange juice " + "." * 12 + " 4.50"
    f = _face(LIB_MONO, 18)
    im = Image.new("RGB", (420, 60), (252, 250, 245))
    d = ImageDraw.Draw(im)
    d.text((20, 20), text, font=f, fill=(30, 30, 30))
    x0, y0, x1, y1 = d.textbbox((20, 20), text, font=f)
    box = np.array([[x0 - 3, y0 - 4], [x1 + 3, y0 - 4], [x1 + 3, y1 + 4], [x0 - 3, y1 + 4]],
                   np.float32)
    image = np.asarray(im)[:, :, ::-1].copy()
    assert leader_stubs([[0]], [box], ["Orange juice. 4.50"], image) == ["Orange juice 4.50"]
