"""A phone photo of a glossy sign with a lamp's reflection over its first characters
(round 41, h12; docs/ocr.md "Round 41 (h12), glare").

The reflection saturates the paper to white and leaves the print under it a few grey levels
darker; the detector boxed only "心台阶" of "小心台阶" (at a sure score, so no unsure reading
asked for a second look). ``glare.has_glare`` tells such a photo, and the pipeline reads it
again contrast-boosted, keeping the boosted line that holds the first one and reads more."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")
PIL = pytest.importorskip("PIL")

from skiff.kernels.ocr import glare  # noqa: E402

FONT = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
LINES = ["小心台阶", "出口"]


def _card(lines, amp: float, size: int = 28, seed: int = 0) -> np.ndarray:
    """A pale green-grey card with dark print, a Gaussian reflection ``amp`` levels bright
    over its upper left, on a dark wall; blur, sensor noise, JPEG 75 (BGR)."""
    from PIL import Image, ImageDraw, ImageFont

    f = ImageFont.truetype(FONT, size, index=0)
    w = max(f.getbbox(t)[2] for t in lines) + 2 * size
    h = len(lines) * int(size * 1.6) + 2 * size
    im = Image.new("L", (w, h), 0)
    d = ImageDraw.Draw(im)
    for k, t in enumerate(lines):
        d.text((size, size + k * int(size * 1.6)), t, font=f, fill=255)
    m = np.asarray(im, np.float32)[..., None] / 255
    img = np.array([222, 226, 214], np.float32) * (1 - m) + 45 * m
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    blob = np.exp(-(((xx - 0.3 * w) / (0.2 * w)) ** 2 + ((yy - 0.35 * h) / (0.4 * h)) ** 2))
    img = np.clip(img + amp * blob[..., None], 0, 255).astype(np.uint8)
    img = cv2.copyMakeBorder(img, 24, 24, 24, 24, cv2.BORDER_CONSTANT, value=(85, 88, 92))
    img = cv2.GaussianBlur(img, (0, 0), 0.7)
    noise = np.random.default_rng(seed).normal(0, 3, img.shape)
    img = np.clip(img + noise, 0, 255).astype(np.uint8)
    _, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 75])
    return cv2.imdecode(buf, 1)


needs_font = pytest.mark.skipif(not Path(FONT).exists(), reason="Noto Sans CJK not installed")


@needs_font
def test_the_glare_test_fires_on_glare_only():
    assert glare.has_glare(_card(LINES, 220))
    assert not glare.has_glare(_card(LINES, 0))  # the same card in even light
    page = np.full((300, 400, 3), 255, np.uint8)  # a white page of print, all saturated
    cv2.putText(page, "Opening Hours", (20, 150), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (0, 0, 0), 2)
    assert not glare.has_glare(page)
    # a bright spot with no print under it (a lamp on a blank wall) is no glare over text
    wall = np.full((240, 320, 3), 170, np.float32)
    yy, xx = np.mgrid[0:240, 0:320]
    wall += 120 * np.exp(-(((xx - 160) / 60.0) ** 2 + ((yy - 120) / 60.0) ** 2))[..., None]
    assert not glare.has_glare(np.clip(wall, 0, 255).astype(np.uint8))


@needs_font
def test_washed_out_characters_under_a_glare_are_read(pipe):
    r = pipe(_card(LINES, 220))
    assert [line.text for line in r.lines] == LINES, r.text
    assert r.timings.get("glare") == 1
