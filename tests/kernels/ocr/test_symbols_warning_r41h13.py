"""Round 41 (h13): a warning sign "⚠" at the head of a line (`symbols._warning`, through
`inline_symbols` and its page gate `symbol_page`).

The recognizer reads DejaVu Sans's "⚠" as "Δ" (22 px) or "△" (30 px), Noto Sans CJK's as
"④"; a "Δ" or "④" is no symbol of Unicode's, so the page was not even looked at. The
oracle is the renderer: the glyphs and the lines are drawn with PIL."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

FACES = {"dejavu": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
         "dejavu-bold": "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
         "noto-cjk": "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"}


def _font(face: str, px: int):
    try:
        return ImageFont.truetype(FACES[face], px)
    except OSError:
        pytest.skip(f"{FACES[face]} not installed")


def _glyph(ch: str, face: str, px: int, blur: float) -> np.ndarray:
    """The 0/1 ink of one glyph drawn alone, as `inline_symbols` cuts it from its line."""
    from skiff.kernels.ocr.spacing import ink_mask

    im = Image.new("L", (px * 3, px * 3), 255)
    ImageDraw.Draw(im).text((px, px // 2), ch, font=_font(face, px), fill=0)
    if blur:
        im = im.filter(ImageFilter.GaussianBlur(blur))
    return ink_mask(np.dstack([np.asarray(im)] * 3)).astype(np.uint8)


@pytest.mark.parametrize("face", sorted(FACES))
@pytest.mark.parametrize("px", [22, 30, 44])
def test_a_warning_sign_is_known_by_its_ink(face, px):
    from skiff.kernels.ocr.symbols import _glyph_symbol, _warning

    assert _warning(_glyph("\u26a0", face, px, 0))
    assert _glyph_symbol(_glyph("\u26a0", face, px, 0)) == "\u26a0"


@pytest.mark.parametrize("face", sorted(FACES))
@pytest.mark.parametrize("ch", list("\u0394\u25b3A\u2463\u25b2\u2206\u00c5"))
def test_no_other_triangle_or_letter_is(face, ch):
    from skiff.kernels.ocr.symbols import _warning

    for px in (18, 30):
        for blur in (0, 0.8):
            assert not _warning(_glyph(ch, face, px, blur)), (ch, face, px, blur)


def test_symbol_page_reads_a_generator_once_more():
    from skiff.kernels.ocr.symbols import symbol_page

    assert symbol_page(t for t in ["\u2463 Do not stack"])
    assert not symbol_page(t for t in ["Delta \u0394x = 3", "Plain text"])


@pytest.fixture(scope="module")
def readings(pipe):
    """A label's two lines in each face at 22 px, read in one batch."""
    pages = []
    for face in ("dejavu", "noto-cjk"):
        f = _font(face, 22)
        im = Image.new("RGB", (520, 120), "white")
        d = ImageDraw.Draw(im)
        d.text((20, 20), "Done \u2713", font=f, fill=(20, 20, 20))
        d.text((20, 60), "\u26a0 Do not stack", font=f, fill=(20, 20, 20))
        pages.append(np.asarray(im))
    # a packing list at 18 px, where Noto Sans CJK's sign is read "∆" (U+2206)
    f = _font("noto-cjk", 18)
    im = Image.new("RGB", (480, 256), "white")
    d = ImageDraw.Draw(im)
    for i, t in enumerate(["Done \u2713", "Paid \u2713", "Backup complete \u2713",
                           "\u26a0 Fragile", "Step 3 \u2713", "Tests passed \u2714"]):
        d.text((20, 20 + 36 * i), t, font=f, fill=(20, 20, 20))
    pages.append(np.asarray(im))
    return [[" ".join(t.split()) for t in r.text.splitlines()] for r in pipe.run(pages)]


@pytest.mark.parametrize("k", [0, 1])
def test_a_warning_line_reads_its_sign(readings, k):
    assert "\u26a0 Do not stack" in readings[k], readings[k]


def test_a_small_warning_sign_read_as_an_increment(readings):
    assert "\u26a0 Fragile" in readings[2], readings[2]
