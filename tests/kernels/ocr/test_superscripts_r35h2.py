"""Superscripts and subscripts (round 35; round 34 left "x² + y² ≤ 1" read "x + y0 ≤ 1" and
"E = mc²" "E = mcl" in DejaVu Math TeX Gyre). That face has no "²", "³", "¹", "₂" or "⁻":
Pillow drew its missing-glyph box, so the image held no superscript to read. Where the face
has the glyphs the set's dictionary holds them (²³¹⁰⁴⁵₂₀₁...) and they are read. The
oracle: the rendered text, in faces whose character map has every character drawn."""
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

import skiff
from skiff.kernels.ocr import OcrPipeline

DEJAVU = Path("/usr/share/fonts/truetype/dejavu")


def _has(font: Path, text: str) -> bool:
    from fontTools.ttLib import TTFont

    cmap = TTFont(str(font)).getBestCmap()
    return all(ord(c) in cmap for c in text if not c.isspace())


def _render(text, font, size):
    f = ImageFont.truetype(str(font), size)
    im = Image.new("RGB", (int(f.getlength(text)) + 2 * size, int(size * 2.4)), "white")
    ImageDraw.Draw(im).text((size, size * 0.6), text, font=f, fill="black")
    return im


def test_the_dictionary_holds_the_marks():
    alphabet = set(OcrPipeline("ch").alphabet)
    assert set("²³¹⁰⁴⁵₂₀₁") <= alphabet


def test_round_34s_math_face_draws_no_superscript():
    face = DEJAVU / "DejaVuMathTeXGyre.ttf"
    if not face.exists():
        pytest.skip("DejaVu Math TeX Gyre not installed")
    assert not any(_has(face, c) for c in "²³¹₂⁻")


@pytest.mark.parametrize("text", ["x² + y² ≤ 1", "E = mc²", "H₂O and CO₂", "Area 5 m³, 20 cm²",
                                  "10⁻³ mol"])
@pytest.mark.parametrize("face, size", [("DejaVuSans.ttf", 18), ("DejaVuSerif.ttf", 24)])
def test_superscripts_and_subscripts_read(text, face, size):
    font = DEJAVU / face
    if not font.exists() or not _has(font, text):
        pytest.skip(f"{face} lacks a glyph of {text!r}")
    assert skiff.ocr(_render(text, font, size)).text == text
