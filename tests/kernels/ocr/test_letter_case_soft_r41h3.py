"""Round 41 (h3): a letter's case from its height measured to a fraction of a pixel
(`letter_case._soft_heights`).

A card statement's dates in Liberation Mono 20 px ("03 Nov"): the recognizer read "05 NoV",
and on a phone photo `letter_case` itself wrote "03 NOV" (Otsu's threshold measured the
blurred "o" and "v" 12 px against the capitals' 13). The oracle is the renderer: each crop
is drawn with PIL from the text it must read, then blurred as `bench_ocr_probes.degrade`'s
phone photo blurs (sigma 0.8 px)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.letter_case import letter_case

FONTS = "/usr/share/fonts/truetype/"
LIB_MONO = FONTS + "liberation2/LiberationMono-Regular.ttf"
LIB_SANS = FONTS + "liberation2/LiberationSans-Regular.ttf"
DEJAVU_MONO = FONTS + "dejavu/DejaVuSansMono.ttf"


def line(text: str, path: str, px: int, blur: float = 0.0, dy: int = 0) -> np.ndarray:
    """``text`` drawn as a detector's box crops it (a margin of a third of the size), blurred
    by ``blur`` px; ``dy`` moves the print down a fraction of its grid (0-3 px)."""
    try:
        f = ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")
    im = Image.new("L", (int(f.getlength(text)) + 2 * px, 2 * px), 255)
    ImageDraw.Draw(im).text((px, px // 3 + dy), text, font=f, fill=20)
    if blur:
        im = im.filter(ImageFilter.GaussianBlur(blur))
    a = np.asarray(im)
    return np.repeat(a[:, :, None], 3, axis=2).copy()


@pytest.mark.parametrize("dy", [0, 2])
@pytest.mark.parametrize("blur", [0.0, 0.8])
@pytest.mark.parametrize(("path", "px"), [(LIB_MONO, 20), (LIB_MONO, 24), (LIB_SANS, 26),
                                          (DEJAVU_MONO, 20)])
def test_dates_keep_their_small_letters(path, px, blur, dy):
    """"Nov" read "NoV" or "NOV" is "Nov": only capitals and digits to measure against."""
    crop = line("03 Nov", path, px, blur, dy)
    assert letter_case("03 NoV", crop) == "03 Nov"
    assert letter_case("03 NOV", crop) == "03 Nov"
    assert letter_case("03 Nov", crop) == "03 Nov"


@pytest.mark.parametrize("blur", [0.0, 0.8])
@pytest.mark.parametrize(("path", "px"), [(LIB_MONO, 20), (LIB_SANS, 22), (DEJAVU_MONO, 20)])
def test_capitals_stay_capitals(path, px, blur):
    """A month in capitals ("14 NOV", a boarding pass's "CDG 0VZ") read small is put back."""
    crop = line("14 NOV", path, px, blur)
    assert letter_case("14 NOV", crop) == "14 NOV"
    assert letter_case("14 Nov", crop) == "14 NOV"


@pytest.mark.parametrize(("px", "blur"), [(20, 0.8), (22, 0.0), (22, 0.8)])
def test_an_ascender_is_no_capital_height(px, blur):
    """Round 35's ruled timetable (Liberation Mono Bold Italic) as a photo read "chemistry":
    its "h" rises above the capitals, and against it the "C" measured small until the
    ascenders counted :data:`letter_case.ASCENDER` of their height."""
    crop = line("Chemistry", FONTS + "liberation2/LiberationMono-BoldItalic.ttf", px, blur)
    assert letter_case("chemistry", crop) == "Chemistry"
