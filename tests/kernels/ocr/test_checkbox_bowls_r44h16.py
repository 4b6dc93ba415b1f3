"""A line's first letter drawn as a bowl ("D", "O") is no check box (round 44, h16).

A business card's "Dr. Jonas Berger" as a phone photo read "☐ Dr. Jonas Berger": blurred,
the "D" is a hollow square frame and touches the "r". Small or bold, an "O" is one too
("Order now" in Liberation Sans Bold at 18 px read "☐ Order now", a bold "OK" as a phone
photo "☒ OK"). A box's label stands apart from it (a space: 0.4 of the frame's height or
more), a word's next letter does not. Truth: the rendered text; no model is read."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.ocr.checkboxes import EMPTY, checkbox_text

FONTS = {
    "ls": "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    "lsb": "/usr/share/fonts/truetype/liberation2/LiberationSans-Bold.ttf",
    "dv": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "dvb": "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
}


def _crop(text: str, face: str, px: int, look: str | None = None, seed: int = 0):
    """The line's crop as the detector boxes it: its ink with a margin."""
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    if not Path(FONTS[face]).exists():
        pytest.skip(f"font {FONTS[face]} not installed")
    font = ImageFont.truetype(FONTS[face], px)
    img = Image.new("L", (40 + int(px * len(text) * 0.7), int(px * 2.2)), 255)
    ImageDraw.Draw(img).text((12, int(px * 0.5)), text, font=font, fill=0)
    img = img.convert("RGB")
    if look == "blur":
        img = img.filter(ImageFilter.GaussianBlur(0.8))
    elif look == "phone":
        sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
        from bench_ocr_probes import degrade

        img = degrade(img, "phone", seed)
    a = np.asarray(img)
    dark = a.mean(2) < 160
    ys, xs = np.flatnonzero(dark.any(1)), np.flatnonzero(dark.any(0))
    y0, y1 = max(0, ys[0] - int(px * 0.15)), min(a.shape[0], ys[-1] + int(px * 0.15))
    x0, x1 = max(0, xs[0] - int(px * 0.2)), min(a.shape[1], xs[-1] + int(px * 0.3))
    return np.ascontiguousarray(a[y0:y1, x0:x1])


@pytest.mark.parametrize("text,face,px,look,seed", [
    ("Order now", "lsb", 18, None, 0),
    ("Open daily", "lsb", 18, None, 0),
    ("OK", "lsb", 18, None, 0),
    ("Order now", "ls", 18, "blur", 0),
    ("OK", "ls", 18, "phone", 6),
    ("Do not", "ls", 30, "phone", 1),
    ("OK", "dvb", 22, "phone", 3),
    ("Open daily", "dvb", 22, "phone", 4),
])
def test_a_bowl_letter_stays_a_letter(text, face, px, look, seed):
    assert checkbox_text(text, _crop(text, face, px, look, seed)) == text


@pytest.mark.parametrize("text,face,px,look", [
    ("\u2610 Open daily", "dv", 18, None),
    ("\u2610 Order now", "dv", 30, "blur"),
    ("\u2610 Do not", "dvb", 22, None),
    ("\u2610 OK", "dv", 26, "phone"),
    ("\u2610Yes", "dv", 18, None),
    ("\u2610No", "dvb", 22, "phone"),
])
def test_a_box_before_its_label_stays_a_box(text, face, px, look):
    # the recognizer skips the box (the detector often boxes the label alone)
    label = text[1:].strip()
    assert checkbox_text(label, _crop(text, face, px, look, 2)) == f"{EMPTY} {label}"
