"""Round 29: one detector box holding several lines of a small, noisy, turned label is cut
into its lines by the ink's profile across them (:mod:`skiff.kernels.ocr.joined`).

The oracle is the rendering: where each line's ink was drawn (PIL), turned by a known angle
(OpenCV's rotation matrix), and the text drawn."""

from __future__ import annotations

import io

import numpy as np
import pytest

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def _label(lines, size=14, degrees=0.0, noise=0.0, blur=0.0, jpeg=None, seed=0):
    """``lines`` drawn dark on light, turned ``degrees`` (counter-clockwise on screen,
    OpenCV's sense); the grey image and each line's ink centre in it."""
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    try:
        font = ImageFont.truetype(DEJAVU, size)
    except OSError:
        pytest.skip(f"font {DEJAVU} missing (install fonts-dejavu-core)")
    boxes = [font.getbbox(t) for t in lines]
    lh = max(b[3] - b[1] for b in boxes)
    gap = int(lh * 0.7)
    w = max(b[2] - b[0] for b in boxes) + 60
    h = len(lines) * lh + (len(lines) - 1) * gap + 60
    mask = Image.new("L", (w, h), 0)
    draw = ImageDraw.Draw(mask)
    y, centres = 30, []
    for t, b in zip(lines, boxes, strict=True):
        draw.text((30 - b[0], y - b[1]), t, font=font, fill=255)
        centres.append((30 + (b[2] - b[0]) / 2, y + lh / 2))
        y += lh + gap
    a = np.asarray(mask, np.float32) / 255
    grey = 235 * (1 - a) + 25 * a
    if blur:
        grey = cv2.GaussianBlur(grey, (0, 0), blur)
    m = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 1.0)
    grey = cv2.warpAffine(grey, m, (w, h), borderMode=cv2.BORDER_REPLICATE)
    pts = np.array(centres) @ m[:, :2].T + m[:, 2]
    if noise:
        grey = grey + np.random.default_rng(seed).normal(0, noise, grey.shape)
    grey = np.clip(grey, 0, 255).astype(np.uint8)
    if jpeg:
        buf = io.BytesIO()
        Image.fromarray(grey).save(buf, "JPEG", quality=jpeg)
        grey = np.asarray(Image.open(buf).convert("L"))
    return grey, pts


def test_bands_find_the_rendered_lines():
    from skiff.kernels.ocr.joined import _ink, bands

    grey, centres = _label(["Parcel lockers", "Mind the step", "Oat milk"], noise=25, seed=3)
    found = bands(_ink(grey))
    assert len(found) == 3
    for (top, bottom), (_, cy) in zip(found, centres, strict=True):
        assert top <= cy <= bottom  # each band holds its rendered line's centre


def test_one_line_is_not_cut():
    from skiff.kernels.ocr.joined import _ink, bands, split_joined

    grey, _ = _label(["Happy hour 5-7pm"], size=28, noise=20, seed=1)
    assert len(bands(_ink(grey))) <= 1
    h, w = grey.shape
    whole = np.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], np.float32)
    assert len(split_joined(grey, [(whole, 0.9)], 0.0)) == 1


@pytest.mark.parametrize("degrees", [-30.0, 35.0, 150.0])
def test_a_turned_block_box_is_cut_into_its_lines(degrees):
    import cv2

    from skiff.kernels.ocr.joined import split_joined

    grey, centres = _label(["Free refills", "Serial SN 7730-A", "Made in Portugal"],
                           degrees=degrees, noise=30, blur=1.0, jpeg=25, seed=7)
    ys, xs = np.nonzero(grey < 150)
    x0, y0, x1, y1 = (float(np.percentile(xs, 1)), float(np.percentile(ys, 1)),
                      float(np.percentile(xs, 99)), float(np.percentile(ys, 99)))
    block = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32)  # level, as DB did
    cut = split_joined(grey, [(block, 0.9)], -degrees)  # the lines' angle in image axes
    assert len(cut) == 3
    for box, _ in cut:  # each new box holds exactly one rendered line's centre
        inside = [cv2.pointPolygonTest(box.reshape(-1, 1, 2), (float(x), float(y)), False) >= 0
                  for x, y in centres]
        assert sum(inside) == 1
    held = {int(np.argmax([cv2.pointPolygonTest(b.reshape(-1, 1, 2), (float(x), float(y)),
                                                True) for x, y in centres])) for b, _ in cut}
    assert held == {0, 1, 2}
