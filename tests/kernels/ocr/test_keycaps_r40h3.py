"""Round 40 (h3): a single-letter key the detector left unboxed after a "+" (round 39's
shortcut sheet as a phone photo read "Ctrl +" and "Win +": its "C" and "L" keycaps were no
text to the detector), read from its keycap's inside (`keycaps.dangling_keys`). The oracle
is the drawing; the reader is skiff's own recognizer, as the pipeline passes it."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from skiff.kernels.ocr.keycaps import dangling_keys

MONO_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
LIB_SANS = "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf"


@pytest.fixture(scope="module")
def read():
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", threads=1)
    return lambda crops: [t for t, _ in pipe._recognize_once(crops, True)]


def keys_row(keys, photo: bool, empty: bool = False):
    """Keys in rounded keycaps joined by "+" as `bench_ocr_user39.py` draws them, and the
    box of all but the last key and its "+" (what the detector boxed)."""
    im = Image.new("RGB", (420, 90), (248, 248, 250))
    d = ImageDraw.Draw(im)
    f, g = ImageFont.truetype(MONO_BOLD, 18), ImageFont.truetype(LIB_SANS, 20)
    x, y, right = 20, 25, 0
    for k, key in enumerate(keys):
        if k:
            d.text((x, y + 6), "+", font=g, fill=(80, 80, 80))
            right = x + 14
            x += 22
        tw = d.textlength(key, font=f)
        d.rounded_rectangle((x, y, x + tw + 20, y + 36), radius=7, outline=(150, 150, 150),
                            width=2, fill=(244, 244, 244))
        if not (empty and k == len(keys) - 1):
            d.text((x + 10, y + 7), key, font=f, fill=(30, 30, 30))
        x += tw + 30
    if photo:
        im = im.filter(ImageFilter.GaussianBlur(0.8))
        a = np.asarray(im).astype(np.float32) + np.random.default_rng(5).normal(0, 8, (90, 420, 1))
        buf = io.BytesIO()
        Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=50)
        im = Image.open(buf).convert("RGB")
    box = np.array([[16, y - 2], [right + 2, y - 2], [right + 2, y + 38], [16, y + 38]], float)
    return np.asarray(im)[:, :, ::-1].copy(), box


@pytest.mark.parametrize("photo", [False, True])
@pytest.mark.parametrize("keys", [("Ctrl", "C"), ("Win", "L"), ("Alt", "F4")])
def test_a_dangling_key_is_read_from_its_keycap(read, keys, photo):
    image, box = keys_row(keys, photo)
    read_as = " + ".join(keys[:-1]) + " +"
    assert dangling_keys([[0]], [box], [read_as], image, read) == [" + ".join(keys)]


def test_an_empty_keycap_and_a_bare_plus_stay(read):
    image, box = keys_row(("Ctrl", "C"), photo=False, empty=True)
    assert dangling_keys([[0]], [box], ["Ctrl +"], image, read) == ["Ctrl +"]
    blank = np.full((90, 420, 3), 250, np.uint8)
    assert dangling_keys([[0]], [box], ["Total +"], blank, read) == ["Total +"]


def test_a_boxed_key_is_not_read_twice(read):
    image, box = keys_row(("Ctrl", "C"), photo=False)
    key = np.array([[box[1, 0] + 8, 23], [box[1, 0] + 40, 23], [box[1, 0] + 40, 63],
                    [box[1, 0] + 8, 63]], float)
    got = dangling_keys([[0, 1]], [box, key], ["Ctrl +", "C"], image, read)
    assert got == ["Ctrl +", "C"]
