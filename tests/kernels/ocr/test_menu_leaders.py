"""A menu's dotted leaders are no text, against the rows rendered.

A leader between an item and its price is read short, boxed with the item or apart:
"Scrambled eggs ... 6.50", "Avocado toast ..8.90", "Soup of the day . € 5,40" (round 28,
a user's probe: 48 menus in four faces at 14-24 px, clean and JPEG'd, read 0.926 of their
characters, RapidOCR 3.10 0.696). ``rec.strip_leader`` drops a run of marks between a label
and the number ending its line, and ``rec.row_leaders`` one split across a row's cells."""

from __future__ import annotations

import glob
import io

import numpy as np
import pytest

from skiff.kernels.ocr.rec import row_leaders, strip_leader

ROWS = [("Scrambled eggs", "6.50"), ("Pancakes with syrup", "7.20"), ("Avocado toast", "8.90"),
        ("Fresh orange juice", "3.80"), ("Soup of the day", "€ 5,40"), ("Chapter 3", "12")]

FACES = {"dejavu-serif": "dejavu/DejaVuSerif.ttf", "dejavu-sans": "dejavu/DejaVuSans.ttf",
         "liberation-sans": "liberation*/LiberationSans-Regular.ttf",
         "liberation-serif": "liberation*/LiberationSerif-Regular.ttf"}


def _menu(face, size, pitch, gap, jpeg):
    from PIL import Image, ImageDraw, ImageFont

    found = sorted(glob.glob(f"/usr/share/fonts/truetype/{FACES[face]}"))
    if not found:
        pytest.skip(f"{FACES[face]} is not installed")
    f = ImageFont.truetype(found[0], size)
    img = Image.new("RGB", (size * 28, size * 3 * len(ROWS) // 2 + 2 * size), (252, 248, 236))
    d = ImageDraw.Draw(img)
    for i, (item, price) in enumerate(ROWS):
        y = size + i * size * 3 // 2
        d.text((size, y), item, font=f, fill=0)
        x = size + d.textlength(item, font=f) + gap * size
        end = size * 27 - d.textlength(price, font=f)
        while x < end - size * 0.5:
            d.text((x, y), ".", font=f, fill=0)
            x += pitch * size
        d.text((end, y), price, font=f, fill=0)
    if jpeg:
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=40)
        img = Image.open(buf).convert("RGB")
    return np.asarray(img)


@pytest.mark.parametrize("face, size, pitch, jpeg", [
    ("dejavu-serif", 24, 0.45, False), ("dejavu-serif", 24, 0.45, True),
    ("liberation-sans", 24, 0.45, False), ("liberation-serif", 18, 0.3, False),
    ("dejavu-sans", 18, 0.3, False)])
def test_a_menu_reads_item_and_price_without_the_leader(pipe, face, size, pitch, jpeg):
    got = pipe(_menu(face, size, pitch, 0.4 if pitch > 0.4 else 0.25, jpeg))
    lines = [" ".join(line.split()) for line in got.text.splitlines() if line.strip()]
    assert lines == [f"{item} {price}" for item, price in ROWS]


def test_leader_marks_go_only_between_a_label_and_its_number():
    assert strip_leader("Scrambled eggs ... 6.50") == "Scrambled eggs 6.50"
    assert strip_leader("Avocado toast ..8.90") == "Avocado toast 8.90"
    assert strip_leader("Soup of the day . . . € 5,40") == "Soup of the day € 5,40"
    assert strip_leader("Fresh orange juice .3.80") == "Fresh orange juice 3.80"
    for kept in ("incl. 4.50", "Wait ... and see", "Loading...50%", "Pay .50", "No. 12"):
        assert strip_leader(kept) == kept
    assert row_leaders(["Scrambled eggs ...", "6.50"]) == ["Scrambled eggs", "6.50"]
    assert row_leaders(["Soup of the day", ".", "€ 5,40"]) == ["Soup of the day", "", "€ 5,40"]
    assert row_leaders(["Fresh orange juice", "..3.80"]) == ["Fresh orange juice", "3.80"]
    assert row_leaders(["Wait ...", "and see"]) == ["Wait ...", "and see"]
    assert row_leaders(["Score", ".5"]) == ["Score", ".5"]
