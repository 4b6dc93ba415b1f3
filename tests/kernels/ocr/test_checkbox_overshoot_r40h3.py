"""Round 40 (h3): a hand's tick drawn past its check box (the long arm out over the top
side, as `bench_ocr_user40.py`'s filled form has it) joined the frame into one component
that was no square frame, and the box was dropped: "Family" for "☑ Family", clean and as a
phone photo (`checkboxes._overshot`). The oracle is the drawing."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.checkboxes import checkbox_text

LIB_SANS = "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf"
LIB_MONO = "/usr/share/fonts/truetype/liberation2/LiberationMono-Regular.ttf"


def option(tick: str | None, over: int = 4, photo: bool = False, turn: float = 0.0):
    """A box (18 px, 2 px sides) and its label "Family", as the detector crops the line: a
    tick ("tick") whose long arm ends ``over`` px above the frame, a cross, or nothing."""
    im = Image.new("RGB", (200, 60), "white")
    d = ImageDraw.Draw(im)
    x, y = 12, 20
    d.rectangle((x, y + 2, x + 18, y + 20), outline=(0, 0, 0), width=2)
    if tick == "tick":
        d.line((x + 3, y + 11, x + 8, y + 17), fill=(20, 40, 160), width=3)
        d.line((x + 8, y + 17, x + 17, y + 2 - over), fill=(20, 40, 160), width=3)
    d.text((x + 28, y), "Family", font=ImageFont.truetype(LIB_SANS, 20), fill=(0, 0, 0))
    if turn:
        im = im.rotate(turn, resample=Image.BICUBIC, fillcolor="white")
    if photo:
        im = im.filter(ImageFilter.GaussianBlur(0.8))
        noise = np.random.default_rng(3).normal(0, 6, (60, 200, 1))
        im = Image.fromarray(np.clip(np.asarray(im) + noise, 0, 255).astype(np.uint8))
    a = np.asarray(im)
    ys, xs = np.nonzero(a.min(2) < 128)
    return a[ys.min() - 4:ys.max() + 5, xs.min() - 4:xs.max() + 5, ::-1].copy()


@pytest.mark.parametrize(("over", "photo", "turn"), [
    (4, False, 0.0), (2, False, 0.0), (6, False, 0.0), (4, True, 0.0), (4, True, 2.0),
    (6, True, -2.0),
])
def test_a_tick_past_the_frame_is_ticked(over, photo, turn):
    assert checkbox_text("Family", option("tick", over, photo, turn)) == "\u2611 Family"


@pytest.mark.parametrize("photo", [False, True])
def test_an_empty_box_stays_empty(photo):
    assert checkbox_text("Family", option(None, photo=photo)) == "\u2610 Family"


def test_a_tick_inside_the_frame_as_before():
    assert checkbox_text("Family", option("tick", over=-3)) == "\u2611 Family"


@pytest.mark.parametrize(("turn", "seed"), [(0, 0), (1, 3), (2, 1), (-1, 2)])
def test_a_blurred_d_is_no_box(turn, seed):
    """A photographed monospaced "d" (round 35's `code_syntax_colours` as a phone photo):
    its bowl is a frame and its stem runs on above it as a tick would, but nothing is
    inside: no box ("☐ def clamp" in the A/B of the first version)."""
    import io

    f = ImageFont.truetype(LIB_MONO, 20)
    im = Image.new("RGB", (340, 60), (250, 250, 250))
    d = ImageDraw.Draw(im)
    d.text((10, 16), "def ", font=f, fill=(170, 30, 160))
    d.text((58, 16), "clamp(x, lo=0, hi=1):", font=f, fill=(30, 30, 30))
    im = im.rotate(turn, Image.BICUBIC, fillcolor=(250, 250, 250))
    im = im.filter(ImageFilter.GaussianBlur(0.8))
    a = np.asarray(im).astype(np.float32)
    a = a + np.random.default_rng(seed).normal(0, 8, (60, 340, 1))
    buf = io.BytesIO()
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=50)
    a = np.asarray(Image.open(buf).convert("RGB"))
    ys, xs = np.nonzero(a.min(2) < 160)
    crop = a[ys.min() - 4:ys.max() + 5, xs.min() - 4:xs.max() + 5, ::-1].copy()
    text = "def clamp(x, lo=0, hi=1):"
    assert checkbox_text(text, crop) == text
