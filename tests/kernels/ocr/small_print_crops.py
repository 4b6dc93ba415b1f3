"""Small degraded CJK line crops for the small-print recognizer's tests (rounds 35 and 38):
each line drawn in a face at 13-16 px, blurred, noised (sigma 25) and saved as JPEG 25, then
cut with the detector's margin (0.4 of the ink's height on every side) as the pipeline cuts.
The truth is the text drawn."""

from __future__ import annotations

import io
import os
import random

import numpy as np
import pytest


def degraded_crops(n, faces, lines, seed, sizes, blur):
    """``n`` (crop, text) pairs: line ``i`` is ``lines[i % len(lines)]`` in
    ``faces[i % len(faces)]`` (path, index), its size drawn from ``sizes`` (a randint range)
    by ``random.Random(seed)``; ``blur`` is the Gaussian sigma, a number, or a (low, high)
    range drawn from the same stream after the size. A face not installed skips the test."""
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr.rec import crop_box

    r = random.Random(seed)
    out = []
    for i in range(n):
        path, index = faces[i % len(faces)]
        if not os.path.exists(path):
            pytest.skip(f"font {path} not installed")
        size, text = r.randint(*sizes), lines[i % len(lines)]
        sigma = r.uniform(*blur) if isinstance(blur, tuple) else blur
        font = ImageFont.truetype(path, size, index=index)
        x0, y0, x1, y1 = font.getbbox(text)
        im = Image.new("L", (x1 + 40, y1 + 30), 225)
        ImageDraw.Draw(im).text((20, 15), text, font=font, fill=40)
        a = cv2.GaussianBlur(np.asarray(im).astype(np.float32), (0, 0), sigma)
        a = np.clip(a + np.random.default_rng(i).normal(0, 25, a.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format="JPEG", quality=25)
        a = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))[:, :, ::-1]
        h = y1 - y0
        box = np.array([[20 + x0 - h * .4, 15 + y0 - h * .4], [20 + x1 + h * .4, 15 + y0 - h * .4],
                        [20 + x1 + h * .4, 15 + y1 + h * .4], [20 + x0 - h * .4, 15 + y1 + h * .4]],
                       np.float32)
        out.append((crop_box(np.ascontiguousarray(a), box), text))
    return out
