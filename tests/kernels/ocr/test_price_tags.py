"""Cards side by side are read card by card, against the text rendered on each card.

Shelf price tags in one photo (a name over a big price over a unit price) were read as
rows across the tags ("Bananas Oat milk 1L Eggs 10 pcs"; RapidOCR 3.10 reads them in the
same order, a box a line): ``panels.panel_rows`` reads the lines framed or filled together
one after the other. A ruled table (a line a cell) and a page without frames stay row by
row."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from skiff.kernels.ocr.panels import panel_rows


def _face(pattern):
    found = sorted(glob.glob(f"/usr/share/fonts/truetype/{pattern}"))
    if not found:
        pytest.skip(f"{pattern} is not installed")
    return found[0]


BOLD = "dejavu/DejaVuSans-Bold.ttf"
PLAIN = "liberation*/LiberationSans-Regular.ttf"

TAGS = [("Apples", "2.99", "per kg 2.99"), ("Rye bread", "3.45", "500 g 6.90/kg"),
        ("Butter", "1.89", "250 g 7.56/kg")]


def _tags(n, frame, fill, scale=1.0):
    """``n`` tags side by side: (image, lines in the order a reader reads them)."""
    from PIL import Image, ImageDraw, ImageFont

    s = scale
    img = Image.new("RGB", (int((40 + 250 * n) * s), int(240 * s)), (248, 248, 248))
    d = ImageDraw.Draw(img)
    truth = []
    for k, (name, price, unit) in enumerate(TAGS[:n]):
        x = (20 + 250 * k) * s
        d.rectangle((x, 20 * s, x + 230 * s, 215 * s), fill=fill,
                    outline=frame, width=max(1, int(3 * s)) if frame else 0)
        d.text((x + 12 * s, 32 * s), name, font=ImageFont.truetype(_face(BOLD), int(20 * s)),
               fill=(0, 0, 0))
        d.text((x + 12 * s, 70 * s), price, font=ImageFont.truetype(_face(BOLD), int(64 * s)),
               fill=(190, 0, 0))
        d.text((x + 12 * s, 172 * s), unit, font=ImageFont.truetype(_face(PLAIN), int(15 * s)),
               fill=(0, 0, 0))
        truth += [name, price, unit]
    return img, truth


def _lines(pipe, img):
    (r,) = list(pipe.run([np.asarray(img)]))
    return [line.strip() for line in r.text.splitlines() if line.strip()]


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("frame, fill", [((200, 0, 0), (255, 236, 0)),  # framed, yellow
                                         (None, (255, 236, 0)),           # yellow, no frame
                                         ((40, 40, 40), (255, 255, 255))])  # white, framed
def test_price_tags_side_by_side_read_tag_by_tag(pipe, n, frame, fill):
    img, truth = _tags(n, frame, fill)
    assert _lines(pipe, img) == truth


def test_price_tags_as_a_jpeg_thumbnail_read_tag_by_tag(pipe):
    import io

    from PIL import Image

    img, truth = _tags(3, (200, 0, 0), (255, 236, 0))
    small = img.resize((img.width // 2, img.height // 2), Image.LANCZOS)
    buf = io.BytesIO()
    small.save(buf, "JPEG", quality=50)
    got = _lines(pipe, Image.open(buf).convert("RGB"))
    # the order is what is checked: each tag's name, then its price, then its unit line
    names = [got.index(t[0]) for t in TAGS]
    prices = [got.index(t[1]) for t in TAGS]
    assert names == sorted(names) and all(p == q + 1 for p, q in zip(prices, names))


def _table(ruled):
    """A table of three columns and four rows, ruled as a grid or not: (image, rows)."""
    from PIL import Image, ImageDraw, ImageFont

    rows = [("Item", "Qty", "Price"), ("Coffee", "2", "12.50"), ("Filters", "10", "0.35"),
            ("Frother", "1", "49.90")]
    img = Image.new("RGB", (520, 40 + 48 * len(rows)), "white")
    d = ImageDraw.Draw(img)
    f = ImageFont.truetype(_face(PLAIN), 18)
    xs = (20, 220, 360, 500)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            d.text((xs[j] + 10, 30 + 48 * i), cell, font=f, fill=(0, 0, 0))
    if ruled:
        for i in range(len(rows) + 1):
            d.line((xs[0], 20 + 48 * i, xs[-1], 20 + 48 * i), fill=(0, 0, 0), width=2)
        for x in xs:
            d.line((x, 20, x, 20 + 48 * len(rows)), fill=(0, 0, 0), width=2)
    return img, [" ".join(row) for row in rows]


@pytest.mark.parametrize("ruled", [True, False])
def test_a_table_stays_row_by_row(pipe, ruled):
    img, rows = _table(ruled)
    assert _lines(pipe, img) == rows


def test_panel_rows_keeps_rows_without_an_image_or_cards():
    boxes = [np.array([[x, y], [x + 80, y], [x + 80, y + 20], [x, y + 20]], np.float64)
             for y in (10, 60) for x in (10, 200)]
    rows = [[0, 1], [2, 3]]
    assert panel_rows(rows, boxes, None) == rows
    blank = np.full((100, 300, 3), 255, np.uint8)
    assert panel_rows(rows, boxes, blank) == rows
