"""Round 29: faint print on a grey ground (a grey sign, a tinted card, a dim photo) is read
again stretched to the full range (``denoise.is_grey_on_grey``, ``denoise.stretched``).

The ground truth is the rendered text; the figures the stretch is judged by are the pixels'
own percentiles (NumPy)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from skiff.kernels.ocr.synth import char_accuracy

WQY = "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"


def _grey_label(text, path, index, size, *, ground, ink, noise, seed, blur=0.6):
    """``text`` in ``ink`` grey on a ``ground`` grey, blurred, noisy and JPEG'd at 40."""
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    try:
        font = ImageFont.truetype(path, size, index=index)
    except OSError:
        pytest.skip(f"font {path} missing (install fonts-wqy-zenhei)")
    left, top, right, bottom = font.getbbox(text)
    w, h = max(230, right - left + 40), bottom - top + 30
    mask = Image.new("L", (w, h), 0)
    ImageDraw.Draw(mask).text(((w - right + left) // 2 - left, 15 - top), text, font=font,
                              fill=255)
    a = np.asarray(mask, np.float32) / 255
    grey = cv2.GaussianBlur(ground * (1 - a) + ink * a, (0, 0), blur)
    grey = grey + np.random.default_rng(seed).normal(0, noise, grey.shape)
    buf = io.BytesIO()
    Image.fromarray(np.clip(grey, 0, 255).astype(np.uint8)).convert("RGB").save(
        buf, "JPEG", quality=40)
    return np.asarray(Image.open(buf).convert("RGB"))


def test_stretched_spans_the_range_and_keeps_order():
    from skiff.kernels.ocr.denoise import stretched

    rng = np.random.default_rng(1)
    img = rng.normal(160, 12, (40, 200, 3)).clip(0, 255).astype(np.uint8)
    out = stretched(img)
    lo, hi = np.percentile(out, (1, 99))
    assert lo <= 3 and hi >= 252  # the image's own 1st and 99th percentiles, now 0 and 255
    flat_in, flat_out = img.reshape(-1).astype(int), out.reshape(-1).astype(int)
    order = np.argsort(flat_in, kind="stable")
    assert np.all(np.diff(flat_out[order]) >= 0)  # a monotone map of the levels


def test_grey_ground_told_from_white_paper(hard_fonts_r29):
    from skiff.kernels.ocr.denoise import is_grey_on_grey
    from skiff.kernels.ocr.synth_hard import render_hard

    label = _grey_label("五金建材", WQY, 1, 15, ground=165, ink=115, noise=16, seed=0)
    assert is_grey_on_grey(label[..., ::-1])
    # the same label on white paper, and the project's small noisy labels on white paper
    # (blurred thin print whose 1st percentile is paper too) are not grey on grey
    white = _grey_label("五金建材", WQY, 1, 15, ground=235, ink=185, noise=16, seed=0)
    assert not is_grey_on_grey(white[..., ::-1])
    for i in range(12):
        img = render_hard("degraded", i, seed=1).image
        assert not is_grey_on_grey(img[..., ::-1]), i


@pytest.fixture(scope="module")
def hard_fonts_r29():
    from skiff.kernels.ocr.synth import FontsMissing
    from skiff.kernels.ocr.synth_hard import hard_fonts

    try:
        return hard_fonts()
    except FontsMissing as exc:
        pytest.skip(str(exc))


def test_grey_label_read_again_stretched(pipe, monkeypatch):
    """A 15 px sign in grey (115) on grey (165) under noise 16 and JPEG 40: its three smoothed
    copies find no line (measured: ""), the stretched one reads it."""
    from skiff.kernels.ocr import denoise

    text = "五金建材"
    img = _grey_label(text, WQY, 1, 15, ground=165, ink=115, noise=16, seed=0)
    r = pipe(img)
    assert r.timings.get("denoised") == "stretched", r.timings
    assert char_accuracy(r.text, text) == 1.0, r.text
    monkeypatch.setattr(denoise, "GREY_GROUND", 0.0)  # no stretched copy
    without = pipe(img)
    assert without.timings.get("denoised") != "stretched"
    assert char_accuracy(without.text, text) < 1.0, without.text
