"""An empty pair of brackets in a monospaced line read "( )" (round 35, ``marks.empty_brackets``).

The oracle is the drawn line: each case draws ``truth`` and gives ``empty_brackets`` the
crop with the reading the recognizer gave it ("f( )" for "f()" in Liberation Mono and
DejaVu Sans Mono at 20-28 px), or the drawn text itself where the space is real.
"""

from __future__ import annotations

import numpy as np
import pytest

PIL = pytest.importorskip("PIL")
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from skiff.kernels.ocr.marks import empty_brackets  # noqa: E402

MONO = ["/usr/share/fonts/truetype/liberation2/LiberationMono-Regular.ttf",
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"]
PROPORTIONAL = ["/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf",
                "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"]


def line(text: str, face: str, size: int) -> np.ndarray:
    try:
        f = ImageFont.truetype(face, size)
    except OSError:
        pytest.skip("fonts not installed")
    im = Image.new("RGB", (int(f.getlength(text)) + 16, int(size * 1.6)), "white")
    ImageDraw.Draw(im).text((8, size // 4), text, font=f, fill=0)
    return np.asarray(im)


@pytest.mark.parametrize("face", MONO)
@pytest.mark.parametrize("size", [20, 28])  # at 14 px "f(" touch: left as read
@pytest.mark.parametrize("truth", ["x = f()", "b = {'k': ()}", "call(f(), g())",
                                   "arr[] = {}", "if (x) { y = []; }"])
def test_monospaced_empty_pair_read_with_a_space(truth, face, size):
    read = truth.replace("()", "( )").replace("[]", "[ ]")
    assert read != truth
    assert empty_brackets(read, line(truth, face, size)) == truth


@pytest.mark.parametrize("face", MONO + PROPORTIONAL)
@pytest.mark.parametrize("size", [14, 24])
@pytest.mark.parametrize("truth", ["( ) Yes ( ) No", "f( ) and g( )", "t = [ ]  # empty"])
def test_a_drawn_space_stays(truth, face, size):
    assert empty_brackets(truth, line(truth, face, size)) == truth


@pytest.mark.parametrize("face", PROPORTIONAL)
def test_proportional_face_is_left_as_read(face):
    """No grid of cells: the recognizer reads a proportional "( )" as it is set."""
    truth = "call(f(), g())"
    read = "call(f( ), g())"
    assert empty_brackets(read, line(truth, face, 20)) == read


def test_nothing_to_do():
    crop = line("x = f()", MONO[0], 20)
    assert empty_brackets("x = f()", crop) == "x = f()"
    assert empty_brackets("x = f( )", crop[:4]) == "x = f( )"
