"""Round 30: an unsure line is read again from the middle rows of its crop, and the surer
reading kept (``LineReading.recognize``, ``rec.trim_rows``).

The detector's box grows a small line by about its own height, so 13-17 px print under blur,
noise and JPEG fills little of the recognizer's 48 rows and reads as other characters
("配送费" as "688", "收银台" as "收理台"). The oracle is the rendered text: loosely boxed
Chinese labels, spoiled as a phone's small noisy shot is, must read as drawn, where the same
crops read whole (the second look turned off) mostly do not."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest

NOTO = ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2)
ZEN = ("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", 0)
# (font, text, px, noise seed): each read wrong from the whole crop on this machine
CASES = [(NOTO, "配送费", 14, 0), (NOTO, "收银台", 16, 0), (NOTO, "今日特价", 16, 1),
         (ZEN, "配送费", 16, 3), (ZEN, "营业时间", 14, 0), (NOTO, "配送费", 16, 3)]


def _loose_label(face, text, size, seed):
    """``text`` dark on light with a margin of 0.75 text height above and below (a
    detector's box around a small line), blurred, noised (sigma 25) and JPEG'd at 25."""
    from PIL import Image, ImageDraw, ImageFont
    from scipy import ndimage

    try:
        font = ImageFont.truetype(face[0], size, index=face[1])
    except OSError:
        pytest.skip(f"font {face[0]} missing (install fonts-noto-cjk / fonts-wqy-zenhei)")
    left, top, right, bottom = font.getbbox(text)
    h = bottom - top
    m = int(round(0.75 * h))
    img = Image.new("L", (right - left + 2 * (h // 2), h + 2 * m), 235)
    ImageDraw.Draw(img).text((h // 2 - left, m - top), text, font=font, fill=30)
    a = ndimage.gaussian_filter(np.asarray(img, np.float32), 1.0)
    a = a + np.random.default_rng(seed).normal(0, 25, a.shape)
    buf = io.BytesIO()
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=25)
    grey = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("L"))
    return np.repeat(grey[..., None], 3, 2).copy()


def _read(pipe, crops):
    items = [SimpleNamespace(timings={})]
    return pipe.recognize(crops, [(0, k) for k in range(len(crops))], items)


def test_unsure_small_lines_read_from_their_middle_rows(pipe, monkeypatch):
    from skiff.kernels.ocr import reading

    crops = [_loose_label(*c) for c in CASES]
    truth = [c[1] for c in CASES]
    got = [t for t, _ in _read(pipe, crops)]
    monkeypatch.setattr(reading, "TRIM_KEEP", 1.0)
    whole = [t for t, _ in _read(pipe, crops)]
    right = sum(g == t for g, t in zip(got, truth, strict=True))
    before = sum(w == t for w, t in zip(whole, truth, strict=True))
    assert before <= 1, whole  # the cases are real: read whole, they misread
    assert right >= 5, got


def test_sure_lines_are_read_once(pipe, monkeypatch):
    """A clean line the recognizer is sure of is not read again (no cost on clean pages)."""
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr import reading

    try:
        font = ImageFont.truetype(NOTO[0], 24, index=NOTO[1])
    except OSError:
        pytest.skip(f"font {NOTO[0]} missing (install fonts-noto-cjk)")
    img = Image.new("RGB", (130, 40), "white")
    ImageDraw.Draw(img).text((8, 4), "营业时间", font=font, fill="black")
    crop = np.asarray(img).copy()
    calls = []
    once = reading.LineReading._recognize_once

    def spy(self, crops, fallback):
        calls.append(len(crops))
        return once(self, crops, fallback)

    monkeypatch.setattr(reading.LineReading, "_recognize_once", spy)
    (text, score), = _read(pipe, [crop])
    assert text == "营业时间" and score >= reading.TRIM_UNSURE
    assert calls == [1]


def test_trim_rows_keeps_the_middle():
    from skiff.kernels.ocr.rec import TRIM_ROWS, trim_rows

    crop = np.arange(40)[:, None, None].repeat(30, 1).repeat(3, 2).astype(np.uint8)
    cut = trim_rows(crop, 0.75)
    assert cut.shape == (30, 30, 3) and cut[0, 0, 0] == 5 and cut[-1, 0, 0] == 34
    low = crop[:TRIM_ROWS + 1]
    assert trim_rows(low, 0.75) is low  # too few rows left: as it is
