"""Two lines of small print set close, one over the other, stay two lines (round 45, h15).

A shipping label's sender ("FROM: ...", its street under it) in DejaVu Sans Condensed at
8-9 px, 10-12 px apart: the detector boxes each line apart, the unclip grows the boxes until
they overlap by a third, and ``det.join_fragments`` joined them as "pieces of one row": one
box of two lines, read as nothing. The truth is the text rendered."""

from __future__ import annotations

import io

import numpy as np
import pytest

from skiff.kernels.ocr.det import join_fragments

FROM = "FROM: Nordlicht Versand GmbH"
STREET = "Hafenstr. 7, 20457 Hamburg"
SHIP = "SHIP TO: Lukas Meyer"


def phone_shot(im, seed: int):
    """``im`` (an RGB PIL image) shot as a phone photo: blur, seeded sensor noise, JPEG 50."""
    from PIL import Image, ImageFilter

    rng = np.random.default_rng(seed)
    im = im.filter(ImageFilter.GaussianBlur(0.8))
    a = np.asarray(im).astype(np.float32) + rng.normal(0, 8, (im.height, im.width, 1))
    im = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=50)
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB")


def _label(fonts_dir, size: int, pitch: int, phone_seed: int | None = None) -> np.ndarray:
    from PIL import Image, ImageDraw, ImageFont

    im = Image.new("RGB", (640, 200), "white")
    d = ImageDraw.Draw(im)
    d.rectangle((10, 10, 630, 190), outline=0, width=3)
    f = ImageFont.truetype(fonts_dir + "/DejaVuSansCondensed.ttf", size)
    d.text((30, 26), FROM, font=f, fill=0)
    d.text((30, 26 + pitch), STREET, font=f, fill=0)
    d.line((10, 90, 630, 90), fill=0, width=2)
    d.text((30, 110), SHIP, font=ImageFont.truetype(fonts_dir + "/DejaVuSansCondensed.ttf", 24),
           fill=0)
    im = im.resize((320, 100), Image.LANCZOS)  # the label at half size: 8-9 px print
    if phone_seed is not None:  # shot as a photo: blur, sensor noise, JPEG
        im = phone_shot(im, phone_seed)
    return np.asarray(im)


@pytest.fixture(scope="module")
def dejavu():
    import os

    d = "/usr/share/fonts/truetype/dejavu"
    if not os.path.exists(d + "/DejaVuSansCondensed.ttf"):
        pytest.skip("DejaVu Sans Condensed missing")
    return d


@pytest.mark.parametrize("size,pitch", [(18, 22), (16, 20)])
def test_close_small_lines_read_apart(pipe, dejavu, size, pitch):
    lines = [ln.text for ln in pipe(_label(dejavu, size, pitch)).lines]
    assert lines == [FROM, STREET, SHIP]


def test_close_small_lines_as_a_photo(pipe, dejavu):
    lines = pipe(_label(dejavu, 18, 24, phone_seed=3)).lines
    assert len(lines) == 3
    tops = [float(np.asarray(ln.box)[:, 1].mean()) for ln in lines]
    # the rendered lines' middles at half size: ~17, ~29 and ~61
    assert tops[0] < 24 < tops[1] < 36 < tops[2]
    assert lines[1].text.endswith("20457 Hamburg") and lines[2].text == SHIP


def _box(x0, y0, x1, y1):
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32)


def test_pieces_of_one_row_still_join():
    # a row the detector cut in two overlapping boxes (a display's "-1" and "17.5"), one
    # a little lower than the other, is still joined; two grown lines one over the
    # other (the label's boxes as measured: 139 x 20 at a pitch of 12) are not
    row = join_fragments([(_box(10, 10, 75, 40), 0.8), (_box(50, 12, 160, 43), 0.9)])
    assert len(row) == 1
    two = join_fragments([(_box(21, 9, 160, 29), 0.7), (_box(21, 21, 140, 41), 0.7)])
    assert len(two) == 2
