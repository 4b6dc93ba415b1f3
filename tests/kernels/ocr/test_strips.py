"""A strip image (a 20,000 x 40 banner or ticker) is detected in tiles as high as the image:
a short word in one of them fills its tile's height and was dropped as a box that "fills its
tile" (``det._fills_tile``: meant for bare paper marked whole in a square tile). The oracle
is the text rendered."""

from __future__ import annotations

import numpy as np

from skiff.kernels.ocr.det import _fills_tile
from skiff.kernels.ocr.synth import char_accuracy


def _box(x, y, w, h):
    return np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float64)


def test_a_box_fills_its_tile_only_across_and_down():
    assert _fills_tile(_box(11, 52, 1114, 1089), (1142, 1126))  # bare paper marked whole
    assert not _fills_tile(_box(0, 0, 84, 39), (40, 2090))  # a short word in a strip's tile
    assert not _fills_tile(_box(0, 0, 39, 84), (2090, 40))  # and in a tall strip's


def test_every_word_of_a_very_wide_strip_is_read(pipe, fonts):
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(fonts["latin"], 24)
    words = [f"seg {k}" for k in range(0, 19000, 1500)]
    img = Image.new("RGB", (20000, 40), "white")
    draw = ImageDraw.Draw(img)
    for k, word in zip(range(0, 19000, 1500), words, strict=True):
        draw.text((k + 10, 5), word, font=face, fill="black")
    (r,) = list(pipe.run([np.asarray(img)]))
    assert r.text.startswith("seg 0 "), r.text  # the first word, at the strip's left end
    assert char_accuracy(r.text, " ".join(words)) >= 0.98, r.text
