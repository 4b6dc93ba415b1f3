"""Round 39 (h3): letters whose two cases share a shape read in the wrong case
(`letter_case.letter_case`), a degree ring read as the ordinal "º" or twice
(`marks.degree_signs`), a fraction read with its own parts (`marks.fraction_echoes`).

The oracle is the renderer: each crop is drawn with PIL from the text it must read. (The
shortcut sheet read end to end, card by card in the right case, is
`test_marks_wired_r39.py`'s: round 41 dropped the copy here that put `letter_case` in by
hand before it was wired, one page read less.)"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.letter_case import letter_case
from skiff.kernels.ocr.marks import degree_signs, fraction_echoes

FONTS = "/usr/share/fonts/truetype/"
MONO_BOLD = FONTS + "dejavu/DejaVuSansMono-Bold.ttf"
LIB_SANS = FONTS + "liberation2/LiberationSans-Regular.ttf"
LIB_SERIF = FONTS + "liberation2/LiberationSerif-Regular.ttf"
DEJAVU = FONTS + "dejavu/DejaVuSans.ttf"


def face(path: str, px: int):
    try:
        return ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")


def keycaps(keys: list[str], path: str, px: int) -> np.ndarray:
    """Keys in rounded keycaps joined by "+", cropped as a detector boxes the print (the
    caps' sides inside the crop, their top and bottom outside it)."""
    f = face(path, px)
    im = Image.new("RGB", (60 * len(keys) + 40 * px, 4 * px), (255, 255, 255))
    d = ImageDraw.Draw(im)
    x, y = 10, px
    for k, key in enumerate(keys):
        if k:
            d.text((x, y + 6), "+", font=f, fill=(80, 80, 80))
            x += int(1.2 * px)
        tw = d.textlength(key, font=f)
        d.rounded_rectangle((x, y, x + tw + 20, y + 2 * px), radius=7, outline=(150, 150, 150),
                            width=2, fill=(244, 244, 244))
        d.text((x + 10, y + 7), key, font=f, fill=(30, 30, 30))
        x += int(tw) + 30
    return np.asarray(im)[y + 4:y + 2 * px - 4, 4:x + 4, ::-1].copy()


def line(text: str, path: str, px: int) -> np.ndarray:
    f = face(path, px)
    im = Image.new("RGB", (int(f.getlength(text)) + 2 * px, 2 * px), "white")
    ImageDraw.Draw(im).text((px, px // 3), text, font=f, fill=(0, 0, 0))
    return np.asarray(im)[:, :, ::-1].copy()


@pytest.mark.parametrize(("keys", "read"), [
    (["Ctrl", "C"], "ctrl + c"), (["Ctrl", "Z"], "Ctrl + z"), (["Alt", "X"], "Alt + x"),
    (["Shift", "S"], "shift + s")])
def test_keycap_letters_take_their_height(keys, read):
    crop = keycaps(keys, MONO_BOLD, 18)
    assert letter_case(read, crop) == " + ".join(keys)


@pytest.mark.parametrize(("text", "path", "px"), [
    ("Cross the river now", LIB_SANS, 24), ("sow seeds over Oxford", LIB_SERIF, 26),
    ("Wax Volume Zone", DEJAVU, 22), ("Cost: 12 Euro", LIB_SANS, 30)])
def test_letters_read_right_stay(text, path, px):
    assert letter_case(text, line(text, path, px)) == text


@pytest.mark.parametrize(("text", "read"), [
    ("Cross the river now", "cross the river now"), ("Oven at 200", "oven at 200"),
    ("Save now", "save now"), ("Zone 4 exit", "zone 4 exit")])
def test_a_first_capital_read_small(text, read):
    assert letter_case(read, line(text, LIB_SANS, 26)) == text


def test_no_reference_or_small_print_no_change():
    """Nothing to measure against ("sox": no capital, no small letter of one case), print
    under 12 px, or a reading whose characters do not pair with the glyphs: as read."""
    assert letter_case("sox zoo", line("sox zoo", LIB_SANS, 26)) == "sox zoo"
    assert letter_case("crane", line("Crane", LIB_SANS, 11)) == "crane"
    assert letter_case("cran", line("Crane", LIB_SANS, 26)) == "cran"


def test_degree_rings():
    """A weather card's days as read from Liberation Sans 22 px ("7º" for "7°") and its
    64-px "12°C" read "12°℃"; a page with no degree keeps its ordinals."""
    read = ["Hamburg", "12°℃", "Mon 13° 7º", "Tue 10° 4º", "Wed 15º 9º"]
    assert degree_signs(read) == ["Hamburg", "12°C", "Mon 13° 7°", "Tue 10° 4°", "Wed 15° 9°"]
    assert degree_signs(["Oven 180ºC", "2º piso"]) == ["Oven 180°C", "2º piso"]
    assert degree_signs(["Vive en el 2º piso", "Calle 5º"]) == ["Vive en el 2º piso", "Calle 5º"]


def test_fraction_read_with_its_parts():
    """DejaVu Serif's "½" (a small 1, a slash, a small 2) photographed reads "1½2"."""
    assert fraction_echoes("1½2 tsp salt") == "½ tsp salt"
    assert fraction_echoes("3¾4 cup milk, 1¼4 tsp") == "¾ cup milk, ¼ tsp"
    for kept in ("1½ 2", "11½2", "1½ cups", "½"):
        assert fraction_echoes(kept) == kept
