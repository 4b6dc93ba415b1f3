"""Round 38 (h3): en dashes on phone photos, against rendered ground truth (the drawn text
is the oracle; the reading given is the recognizer's on such photos, "-" for each dash):
a dash the blur joined to its digit ("06:35–07:05" read "06:35-07:05", round 37's left
item) and a dash the blur and turn left under 0.8 of its box, while every hyphen stays."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageFilter

from skiff.kernels.ocr.marks import DASH_FILL, _flat_marks, _joined_dashes, en_dashes
from skiff.kernels.ocr.spacing import ink_mask

from .test_dashes_leaders_r37h3 import LIB_SANS, LIB_SERIF, line_crop


def photo(text: str, path: str, px: int, seed: int) -> np.ndarray:
    """``text`` drawn as :func:`line_crop` draws it, then shot as a phone does
    (``bench_ocr_probes.degrade``'s "phone": turned up to 3 degrees, blurred 0.8 px, noise
    of sigma 8, JPEG at quality 50), as a BGR crop."""
    rng = np.random.default_rng(seed)
    im = Image.fromarray(line_crop(text, path, px)[:, :, ::-1].copy())
    im = im.rotate(float(rng.uniform(-3, 3)), Image.BICUBIC, expand=True, fillcolor=(255,) * 3)
    im = im.filter(ImageFilter.GaussianBlur(0.8))
    a = np.asarray(im).astype(np.float32) + rng.normal(0, 8, (im.height, im.width, 1))
    buf = io.BytesIO()
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=50)
    return np.asarray(Image.open(buf).convert("RGB"))[:, :, ::-1].copy()


@pytest.mark.parametrize(("text", "px", "seed"), [
    ("06:35–07:05", 26, 0), ("06:35–07:05", 30, 1), ("10–12", 26, 2), ("1990–2026", 30, 0)])
def test_a_dash_joined_to_its_digit(text, px, seed):
    """Liberation Serif as a photo: the dash touches a digit, no free mark is left; the run
    of columns holding only the dash's stroke is found and spans an en dash's width."""
    crop = photo(text, LIB_SERIF, px, seed)
    marks, _, _ = _flat_marks(ink_mask(crop))
    assert marks == []  # joined: what round 37 could not pair
    assert en_dashes(text.replace("–", "-"), crop) == text


def test_a_free_dash_and_a_joined_one_in_one_line():
    """Liberation Sans 22 px: "Mon – Fri" keeps its dash apart, "8–18" joins its digits."""
    text = "Mon – Fri 8–18"
    crop = photo(text, LIB_SANS, 22, 0)
    assert en_dashes("Mon - Fri 8-18", crop) == text


@pytest.mark.parametrize(("text", "px", "seed"), [
    ("10–12", 24, 2), ("10–12", 26, 5), ("Open 9–17", 24, 5), ("Open 9–17", 28, 5)])
def test_a_blurred_dash_under_the_box_fill(text, px, seed):
    """Liberation Sans: the photo's turn and blur leave the free dash under 0.8 of its box
    (0.67-0.72); between letters or digits 0.6 will do."""
    crop = photo(text, LIB_SANS, px, seed)
    (mark,), _, _ = _flat_marks(ink_mask(crop))
    assert mark[3] < DASH_FILL
    assert en_dashes(text.replace("–", "-"), crop) == text


@pytest.mark.parametrize("path", [LIB_SANS, LIB_SERIF])
@pytest.mark.parametrize("px", [14, 22, 28])
def test_hyphens_on_photos_stay(path, px):
    """A hyphen joined to its digits keeps the grey bridge of the blur (Liberation Serif 22
    px: a run of 0.40 of the digit height); none of these is turned."""
    for j, text in enumerate(("2026-12-06", "Tel 021-555-0187", "ISBN 978-3-16", "1-0-1",
                              "Rx 448-2093", "6-12 y", "HR-12")):
        assert en_dashes(text, photo(text, path, px, 31 * px + j)) == text, (text, px)


def test_a_capital_h_bar_is_no_dash():
    """"H"'s bar is one stroke halfway up between stems: a joined run too, so the counts
    differ from the reading's one hyphen and the line stays as read."""
    crop = line_crop("route 4-H", LIB_SANS, 30)
    bw = ink_mask(crop)
    marks, tall, top = _flat_marks(bw)
    assert len(_joined_dashes(bw, tall, top, marks)) >= 1
    assert en_dashes("route 4-H", crop) == "route 4-H"
