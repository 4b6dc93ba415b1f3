"""A page number "- 1 -" under a page shown at 0.44 of its size: at 10 px the dashes are a
pixel high and the number stands alone at the foot of the page. It was read "-1." (a dash
as a point), or not boxed at all (its faint region is wider than high, and only regions
no wider than high were looked at again). The oracle is the page rendered."""

from __future__ import annotations

import glob

import numpy as np
import pytest

BODY = [f"This is line {i + 1} of the body text of the page." for i in range(20)]


def _page(name, size=24, scale=0.44):
    from PIL import Image, ImageDraw, ImageFont

    found = glob.glob(f"/usr/share/fonts/truetype/liberation*/{name}")
    if not found:
        pytest.skip(f"{name} is not installed (fonts-liberation2)")
    face = ImageFont.truetype(found[0], size)
    img = Image.new("RGB", (1654, 2339), "white")  # A4 at 200 dpi
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(BODY):
        draw.text((160, 200 + i * int(size * 1.8)), line, font=face, fill=0)
    width = draw.textlength("- 1 -", font=face)
    draw.text((827 - width / 2, 2339 - 180), "- 1 -", font=face, fill=0)
    return np.asarray(img.resize((int(1654 * scale), int(2339 * scale)), Image.LANCZOS))


@pytest.mark.parametrize("name", ["LiberationSans-Regular.ttf", "LiberationSerif-Regular.ttf"])
def test_a_small_page_number_keeps_its_dashes(pipe, name):
    (r,) = list(pipe.run([_page(name)]))
    lines = [line.strip() for line in r.text.splitlines() if line.strip()]
    assert lines[:-1] == BODY, r.text
    assert lines[-1].replace(" ", "") == "-1-", r.text


def test_a_point_on_the_baseline_stays_a_point(fonts):
    """The rule looks at the ink: a numbered item's "1." and a ".5" keep their points."""
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr.marks import edge_dashes

    for size in (11, 16, 24):
        face = ImageFont.truetype(fonts["latin"], size)
        for text in ("1.", "12.", ".5", ".25", "3.5."):
            img = Image.new("RGB", (size * 4, size * 2), "white")
            ImageDraw.Draw(img).text((size // 3, size // 3), text, font=face, fill=0)
            assert edge_dashes(text, np.asarray(img)) == text, (text, size)
        img = Image.new("RGB", (size * 5, size * 2), "white")  # and a dash read as a point
        ImageDraw.Draw(img).text((size // 3, size // 3), "- 7 -", font=face, fill=0)
        assert edge_dashes(".7.", np.asarray(img)) == "-7-", size
