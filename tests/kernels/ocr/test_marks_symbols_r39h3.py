"""Round 39 (h3): a box holding one symbol the recognizer misreads ("☀" read "米", "♥"
read "A" or "V", "★" read "￥", "☺" read "⑤"), written as its ink's shape says
(`symbols.lone_symbol`). The oracle is the renderer: each crop is the drawn symbol."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.symbols import lone_symbol

FONTS = "/usr/share/fonts/"
DEJAVU = FONTS + "truetype/dejavu/DejaVuSans.ttf"
DEJAVU_SERIF = FONTS + "truetype/dejavu/DejaVuSerif.ttf"
DEJAVU_BOLD = FONTS + "truetype/dejavu/DejaVuSans-Bold.ttf"
MONO = FONTS + "truetype/dejavu/DejaVuSansMono.ttf"
LIB_BOLD = FONTS + "truetype/liberation2/LiberationSans-Bold.ttf"
CJK = FONTS + "opentype/noto/NotoSansCJK-Regular.ttc"
CJK_BOLD = FONTS + "opentype/noto/NotoSansCJK-Bold.ttc"


def crop(ch: str, path: str, px: int, photo: bool = False) -> np.ndarray:
    """The glyph as a detector boxes it (a margin of a third of its size), BGR."""
    try:
        f = ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")
    im = Image.new("RGB", (3 * px, 3 * px), "white")
    d = ImageDraw.Draw(im)
    d.text((px, px // 2), ch, font=f, fill=(20, 20, 20))
    if photo:
        from PIL import ImageFilter

        im = im.filter(ImageFilter.GaussianBlur(0.8))
    a = np.asarray(im)
    ys, xs = np.nonzero(a.min(2) < 128)
    if not len(ys):
        return None  # the face lacks the glyph
    m = px // 3
    return a[ys.min() - m:ys.max() + m, xs.min() - m:xs.max() + m, ::-1].copy()


@pytest.mark.parametrize(("ch", "read", "path", "px"), [
    ("\u2600", "\u7c73", DEJAVU, 22), ("\u2600", "\u7c73", DEJAVU_SERIF, 32),
    ("\u2600", "\u7c73", MONO, 32), ("\u2665", "A", DEJAVU, 22), ("\u2665", "V", DEJAVU, 32),
    ("\u2665", "4", MONO, 32), ("\u2665", "P", CJK, 32), ("\u2605", "\uffe5", DEJAVU, 22),
    ("\u2605", "0", DEJAVU, 32), ("\u2605", "X", CJK, 32), ("\u263a", "\u2464", MONO, 22),
    ("\u263a", "\u2464", DEJAVU_SERIF, 32), ("\u2665", "V", DEJAVU, 26)])
def test_a_lone_symbol_reads_as_drawn(ch, read, path, px):
    assert lone_symbol(read, crop(ch, path, px)) == ch


def test_a_blurred_symbol_too():
    assert lone_symbol("\u7c73", crop("\u2600", DEJAVU, 28, photo=True)) == "\u2600"
    assert lone_symbol("V", crop("\u2665", DEJAVU, 28, photo=True)) == "\u2665"


@pytest.mark.parametrize("path", [DEJAVU, DEJAVU_BOLD, LIB_BOLD, CJK_BOLD, MONO])
def test_letters_digits_and_cjk_stay(path):
    """Letters, digits and marks alone in a box, bold ones too, and CJK characters (米
    itself) keep their reading, as do a filled bullet and square, triangles and diamonds
    (as solid as a heart, without its cleft)."""
    for ch in "AVWMX048%&@#©\u7c73\u6c34\u706b\u25cf\u25a0\u25b2\u25bc\u25c6\u2666":
        drawn = crop(ch, path, 30)
        assert drawn is None or lone_symbol(ch, drawn) == ch, ch
    assert lone_symbol("Sun", crop("\u2600", DEJAVU, 30)) == "Sun"
