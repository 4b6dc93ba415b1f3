"""Round 33 (h2): ``det._text_height`` skips its light-print pass on a page whose local
ground is light everywhere (that pass counts light print only on a ground under
``LIGHT_PRINT_GROUND``, so it found nothing there). Oracle: the function as it was before
(both passes always), copied below, on white, grey, dark-ground and noisy pages."""

import cv2
import numpy as np
import pytest

from skiff.kernels.ocr import det
from skiff.kernels.ocr.det import DARK_GROUND, LIGHT_MAJORITY, LIGHT_MIN_GLYPHS, LIGHT_PRINT_GROUND


def _reference(gray, r):
    """``det._text_height`` before round 33: the light pass always run."""
    h, w = gray.shape[:2]
    if min(h, w) < 8:
        return None, None
    small = cv2.resize(gray, (max(1, int(w * r)), max(1, int(h * r))),
                       interpolation=cv2.INTER_AREA) if r < 1 else gray
    small = cv2.GaussianBlur(small, (3, 3), 0)
    ground = cv2.blur(small, (41, 41))
    ink, counts, heights = None, [], []
    for sign in (1, -1):
        bw = cv2.adaptiveThreshold(small, 255, cv2.ADAPTIVE_THRESH_MEAN_C,
                                   cv2.THRESH_BINARY_INV if sign > 0 else cv2.THRESH_BINARY,
                                   41, 18 * sign)
        n, _, stats, centroids = cv2.connectedComponentsWithStats(bw, connectivity=8)
        x, y, cw, ch, area = (stats[1:, k] for k in range(5))
        some = area >= 6
        if sign < 0:
            cx, cy = (centroids[1:].astype(int) if n > 1 else np.zeros((0, 2), int)).T
            under = ground[cy, cx]
            some &= (under < DARK_GROUND) | \
                ((under < LIGHT_PRINT_GROUND) & (ch >= 4) & (area >= 12))
        if some.any():
            box = (int(y[some].min() / r), int(np.ceil((y + ch)[some].max() / r)),
                   int(x[some].min() / r), int(np.ceil((x + cw)[some].max() / r)))
            ink = box if ink is None else (min(ink[0], box[0]), max(ink[1], box[1]),
                                           min(ink[2], box[2]), max(ink[3], box[3]))
        keep = some & (ch >= 4) & (ch < small.shape[0] / 2) & (cw < 4 * ch) & \
            (cw * ch < 40 * area)
        if keep.sum() >= 3:
            counts.append(int(keep.sum()))
            heights.append(float(np.percentile(ch[keep], 70)) / r)
    if not heights:
        return None, None
    if len(heights) == 2 and counts[1] >= LIGHT_MAJORITY * counts[0] and \
            counts[1] >= LIGHT_MIN_GLYPHS:
        return heights[1], ink
    return heights[0], ink


def _page(ground, ink, seed, noise=0.0, banner=None):
    rng = np.random.default_rng(seed)
    img = np.full((360, 640), ground, np.uint8)
    if banner is not None:  # a dark band with light print on it
        img[200:300] = banner
        cv2.putText(img, "OPEN 24 HOURS 7 DAYS", (20, 265), cv2.FONT_HERSHEY_SIMPLEX, 1.2,
                    255, 2)
    for k, words in enumerate(("Invoice 2041 due 12 March", "Total 1,250.00 EUR",
                               "Thank you for your order")):
        cv2.putText(img, words, (20, 50 + 45 * k), cv2.FONT_HERSHEY_SIMPLEX,
                    0.6 + 0.2 * rng.random(), ink, 2)
    if noise:
        img = np.clip(img + rng.normal(0, noise, img.shape), 0, 255).astype(np.uint8)
    return img


PAGES = [
    ("white", dict(ground=255, ink=0, seed=1)),
    ("grey paper", dict(ground=205, ink=30, seed=2)),
    ("noisy white", dict(ground=245, ink=20, seed=3, noise=25)),
    ("dark banner", dict(ground=250, ink=0, seed=4, banner=40)),
    ("mid banner", dict(ground=250, ink=0, seed=5, banner=140)),
    ("dark mode", dict(ground=30, ink=230, seed=6)),
]


@pytest.mark.parametrize("name, kw", PAGES, ids=[p[0] for p in PAGES])
@pytest.mark.parametrize("r", [1.0, 0.5])
def test_same_height_and_ink_box_as_both_passes(name, kw, r):
    page = _page(**kw)
    assert det._text_height(page, r) == _reference(page, r)


def test_white_page_labels_once_dark_ground_twice(monkeypatch):
    calls = []
    real = cv2.connectedComponentsWithStats

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(cv2, "connectedComponentsWithStats", counted)
    det._text_height(_page(255, 0, 1), 1.0)
    assert len(calls) == 1
    calls.clear()
    det._text_height(_page(250, 0, 4, banner=40), 1.0)
    assert len(calls) == 2
