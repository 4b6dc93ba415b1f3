"""Round 40 (h3): a symbol inside a line that the recognizer dropped ("Rating ♥ 4 of 5"
read "Rating 4 of 5", "■ Support" read "Support") or misread ("☺" read "©", DejaVu Serif's
"♥" read "◆", DejaVu Sans Mono's "★" read "*"), written as its ink says
(`symbols.inline_symbols`). The oracle is the renderer: each crop is the drawn line, the
reading what skiff's recognizer gave for it (`/work/round40/h3/symline.py`)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.symbols import inline_symbols

FONTS = "/usr/share/fonts/"
DEJAVU = FONTS + "truetype/dejavu/DejaVuSans.ttf"
DEJAVU_SERIF = FONTS + "truetype/dejavu/DejaVuSerif.ttf"
DEJAVU_SERIF_BOLD = FONTS + "truetype/dejavu/DejaVuSerif-Bold.ttf"
DEJAVU_BOLD = FONTS + "truetype/dejavu/DejaVuSans-Bold.ttf"
MONO = FONTS + "truetype/dejavu/DejaVuSansMono.ttf"
MONO_OBLIQUE = FONTS + "truetype/dejavu/DejaVuSansMono-Oblique.ttf"
LIB_SANS = FONTS + "truetype/liberation2/LiberationSans-Regular.ttf"
LIB_MONO = FONTS + "truetype/liberation2/LiberationMono-Regular.ttf"
CJK = FONTS + "opentype/noto/NotoSansCJK-Regular.ttc"


def line(text: str, path: str, px: int, blur: float = 0.0) -> np.ndarray:
    """The line as a detector boxes it (a margin of a fifth of its size), BGR."""
    try:
        f = ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"{path} not installed")
    im = Image.new("RGB", (int(f.getlength(text)) + 2 * px, 3 * px), "white")
    ImageDraw.Draw(im).text((px, px // 2), text, font=f, fill=(20, 20, 20))
    if blur:
        from PIL import ImageFilter

        im = im.filter(ImageFilter.GaussianBlur(blur))
    a = np.asarray(im)
    ys, xs = np.nonzero(a.min(2) < 128)
    m = px // 5
    return a[ys.min() - m:ys.max() + m, xs.min() - m:xs.max() + m, ::-1].copy()


@pytest.mark.parametrize(("truth", "read", "path", "px"), [
    ("Rating \u2665 4 of 5", "Rating 4 of 5", DEJAVU, 22),
    ("Order shipped \u2665", "Order shipped", DEJAVU, 32),
    ("\u2665 Support 040 123", "\u25c6 Support 040 123", DEJAVU_SERIF, 22),
    ("\u263a Support 040 123", "\u00a9 Support 040 123", DEJAVU, 32),
    ("Rating \u263a 4 of 5", "Rating \u00a9 4 of 5", MONO, 22),
    ("\u2605 Support 040 123", "* Support 040 123", MONO, 22),
    ("\u25a0 Support 040 123", "Support 040 123", DEJAVU, 22),
    ("Rating \u25b6 4 of 5", "Rating 4 of 5", DEJAVU_SERIF, 32),
    ("\u25c6 Support 040 123", "Support 040 123", DEJAVU, 32),
])
def test_a_symbol_in_a_line_reads_as_drawn(truth, read, path, px):
    assert inline_symbols(read, line(truth, path, px)) == truth


def test_a_blurred_heart_in_a_line():
    truth = "Rating \u2665 4 of 5"
    assert inline_symbols("Rating 4 of 5", line(truth, DEJAVU, 28, blur=0.8)) == truth


@pytest.mark.parametrize(("text", "path", "px"), [
    ("x = (a + b) * 2", DEJAVU_SERIF, 30),   # a raised asterisk is no star
    ("Fig. 3 * p < 0.05", MONO_OBLIQUE, 30),
    ("x = (a + b) * 2", DEJAVU_SERIF_BOLD, 44),
    ("\u25c6 diamond kept", DEJAVU_BOLD, 14),  # a small diamond's steps are no heart's cleft
    ("\u25c6 diamond kept", MONO, 20),
    ("\u00a9 2026 Skiff", DEJAVU, 22),       # a copyright sign stays
    ("I am at home", DEJAVU_SERIF_BOLD, 14),
    ("A - B = C", LIB_MONO, 14),
    ("\u2022 Bullet one", LIB_SANS, 26),
    ("\u7530 \u56de \u570b \u25a0 \u4e00", CJK, 22),
    ("Total: 1,234.56 EUR", DEJAVU_BOLD, 30),
])
def test_lines_without_a_lost_symbol_stay(text, path, px):
    assert inline_symbols(text, line(text, path, px)) == text


def test_a_drawn_bullet_is_left_to_bullet_mark():
    """A slide's drawn disc before its first word (round 33's "• Beta opens on 3 March") is
    no "●": `marks.bullet_mark` writes it "•" after."""
    from PIL import Image, ImageDraw, ImageFont

    im = Image.new("RGB", (520, 60), "white")
    d = ImageDraw.Draw(im)
    d.ellipse((16, 24, 28, 36), fill=(0, 0, 0))
    d.text((40, 14), "Beta opens on 3 March", font=ImageFont.truetype(DEJAVU, 28), fill=0)
    a = np.asarray(im)[:, :, ::-1].copy()
    assert inline_symbols("Beta opens on 3 March", a) == "Beta opens on 3 March"


def photo(text: str, px: int, turn: float, seed: int) -> np.ndarray:
    """The line shot as `bench_ocr_probes.degrade(..., "phone")` shoots a page: turned,
    blurred (0.8 px), sensor noise (8) and JPEG at quality 50, cropped as the detector
    boxes it."""
    import io

    from PIL import ImageFilter

    f = ImageFont.truetype(DEJAVU, px)
    im = Image.new("RGB", (int(f.getlength(text)) + 2 * px, 3 * px), "white")
    ImageDraw.Draw(im).text((px, px // 2), text, font=f, fill=(40, 40, 40))
    im = im.rotate(turn, Image.BICUBIC, expand=True, fillcolor=(255, 255, 255))
    im = im.filter(ImageFilter.GaussianBlur(0.8))
    a = np.asarray(im).astype(np.float32)
    a = a + np.random.default_rng(seed).normal(0, 8, (im.height, im.width, 1))
    buf = io.BytesIO()
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=50)
    a = np.asarray(Image.open(buf).convert("RGB"))
    ys, xs = np.nonzero(a.min(2) < 128)
    m = px // 5
    return a[max(0, ys.min() - m):ys.max() + m, max(0, xs.min() - m):xs.max() + m, ::-1].copy()


@pytest.mark.parametrize(("px", "turn", "seed"), [(22, -1.0, 1), (26, -2.0, 0), (26, 2.0, 2)])
def test_a_photographed_telephone_is_no_heart(px, turn, seed):
    """A phone photo's "☎" (`bench_ocr_user40.py --degrade phone`'s review card read
    "♥ Support") is symmetric and dented as a heart, but stands on a flat base."""
    got = inline_symbols("Support 040 123 456", photo("\u260e Support 040 123 456", px, turn, seed))
    assert "\u2665" not in got


def test_a_photographed_heart_in_a_line():
    truth = "Rating \u2665 4 of 5"
    assert inline_symbols("Rating 4 of 5", photo(truth, 26, -2.0, 0)) == truth


def test_a_heavy_check_is_no_heart():
    """"✔" fills its hull and dents it as a heart does, but is not its own mirror image."""
    truth = "Order shipped \u2714"
    assert "\u2665" not in inline_symbols("Order shipped", line(truth, DEJAVU, 22))
