"""Round 43 (h2): the check-box step's own work cut, the same boxes found.

A line's firm ink (``spacing.ink_mask``) is made only where a frame is found (most lines
have none), and ``faint_ink`` of a BGR crop counts its channel sums instead of sorting a
float64 grey image: the same mask bit for bit (the oracle: numpy's ``percentile`` of the
channels' mean, what it computed before)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr import checkboxes as cb


def _faint_by_percentile(region):
    grey = region.mean(2)
    paper, dark, light = np.percentile(grey, (50, 2, 98))
    if light - paper > paper - dark:
        return (grey > paper + cb.FAINT * (light - paper)).astype(np.uint8)
    return (grey < dark + cb.FAINT * (paper - dark)).astype(np.uint8)


def _line(text, size=22, box=False):
    from PIL import Image, ImageDraw

    from skiff.kernels.ocr.synth import FontsMissing, _font, fonts

    try:
        font = _font(fonts()["latin"], size)
    except FontsMissing as exc:
        pytest.skip(str(exc))
    im = Image.new("RGB", (40 + int(size * 0.62 * len(text)) + 3 * size, 2 * size), "white")
    d = ImageDraw.Draw(im)
    x = 10
    if box:
        d.rectangle([x, size // 2, x + size - 4, size // 2 + size - 4], outline="black", width=2)
        x += int(1.6 * size)
    d.text((x, size // 2), text, font=font, fill="black")
    bgr = np.asarray(im)[..., ::-1]
    ink = bgr.min(2) < 128  # cut to the line's ink and a margin, as the detector boxes it
    rows, cols = np.flatnonzero(ink.any(1)), np.flatnonzero(ink.any(0))
    return np.ascontiguousarray(bgr[rows[0] - 3:rows[-1] + 4, cols[0] - 3:cols[-1] + 4])


def test_faint_ink_is_the_percentile_mask_bit_for_bit():
    rng = np.random.default_rng(43)
    regions = [_line("Total due 1,234.50"), _line("Accept terms", box=True)]
    for k in range(300):
        h, w = (int(v) for v in rng.integers(1, 50, 2))
        if k % 3 == 0:  # uniform noise
            r = rng.integers(0, 256, (h, w, 3))
        elif k % 3 == 1:  # grey levels, many ties
            r = np.repeat(rng.integers(0, 256, (h, w, 1)), 3, 2)
        else:  # dark or light print on paper
            ink = rng.random((h, w, 1)) < 0.15
            r = np.where(ink, rng.integers(0, 90, (h, w, 3)), rng.integers(170, 256, (h, w, 3)))
            r = r if k % 2 else 255 - r
        regions.append(r.astype(np.uint8))
    for r in regions:
        got, want = cb.faint_ink(r), _faint_by_percentile(r)
        assert got.dtype == want.dtype == np.uint8 and got.shape == want.shape
        assert np.array_equal(got, want)


def test_firm_ink_is_made_only_for_a_frame(monkeypatch):
    pytest.importorskip("cv2")
    made = []
    real = cb.ink_mask
    monkeypatch.setattr(cb, "ink_mask", lambda crop: made.append(1) or real(crop))
    plain = _line("Shipping address")
    assert cb.checkbox_text("Shipping address", plain) == "Shipping address"
    assert made == []  # no frame in the line: its firm ink was never needed
    boxed = _line("I agree", box=True)
    assert cb.checkbox_text("I agree", boxed) == f"{cb.EMPTY} I agree"
    assert made  # a frame's inside is read in the firm ink
