"""Rendered documents with ground truth for the user scenarios (fonts from Debian)."""

from __future__ import annotations

import numpy as np

from skiff.kernels.ocr.synth import char_accuracy, fonts, render_page

__all__ = ["LINES", "TRUTH", "page", "two_column_page", "table_page", "receipt", "acc",
           "flat_acc"]

LINES = ["Invoice number 2041 was paid", "Total amount due 1,284.50"]
TRUTH = "\n".join(LINES)


def acc(text: str, truth: str) -> float:
    return char_accuracy(text, truth)


def page(lines=LINES, size=28, seed=1) -> np.ndarray:
    """An RGB page (uint8) with ``lines`` drawn top to bottom."""
    return render_page(list(lines), size=size, seed=seed)


def _draw(width, height, items, size=22, font="latin"):
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (width, height), (250, 250, 248))
    draw = ImageDraw.Draw(img)
    face = ImageFont.truetype(fonts()[font], size)
    for (x, y), text in items:
        draw.text((x, y), text, font=face, fill=(20, 20, 20))
    return np.asarray(img)


LEFT = ["Rivers carry fresh water from", "the mountains down into the",
        "valleys where farmers grow",
        "wheat and barley every year"]
RIGHT = ["Cities grew along the banks", "because boats moved goods", "much faster than any cart",
         "could travel on old roads"]


def two_column_page(aligned: bool = True) -> tuple[np.ndarray, str]:
    """A heading across the page, two columns of prose (lines side by side when ``aligned``,
    else the right column's lines fall between the left's), a footer across the page."""
    items = [((40, 30), "A Short History of Rivers and Trade Routes")]
    for k, text in enumerate(LEFT):
        items.append(((40, 100 + 40 * k), text))
    for k, text in enumerate(RIGHT):
        items.append(((440, 100 + 40 * k + (0 if aligned else 20)), text))
    items.append(((40, 300), "Page 7 of the annual report on regional history"))
    truth = "\n".join([items[0][1], *LEFT, *RIGHT, items[-1][1]])
    return _draw(820, 350, items), truth


def table_page() -> tuple[np.ndarray, str]:
    """A table of numbers: a header and four rows of four cells, read row by row."""
    rows = [["Item", "Qty", "Price", "Total"], ["Apples", "12", "0.45", "5.40"],
            ["Pears", "7", "0.60", "4.20"], ["Plums", "30", "0.15", "4.50"],
            ["Grapes", "2", "3.10", "6.20"]]
    items = [((40 + 150 * c, 30 + 40 * r), cell) for r, row in enumerate(rows)
             for c, cell in enumerate(row)]
    return _draw(680, 240, items), "\n".join(" ".join(row) for row in rows)


def receipt() -> tuple[np.ndarray, str]:
    """A narrow, long receipt: names on the left, prices on the right, a total."""
    names = ["Coffee beans", "Whole milk", "Rye bread", "Butter", "Oranges", "Green tea",
             "Honey jar", "Rice 2kg", "Olive oil", "Eggs x12", "Cheddar", "Tomatoes"]
    prices = [f"{3 + 1.37 * k:.2f}" for k in range(len(names))]
    items = [((20, 20), "CORNER MARKET")]
    for k, (n, p) in enumerate(zip(names, prices, strict=True)):
        items.append(((20, 70 + 34 * k), n))
        items.append(((260, 70 + 34 * k), p))
    total = f"{sum(float(p) for p in prices):.2f}"
    items.append(((20, 70 + 34 * len(names) + 10), "TOTAL"))
    items.append(((260, 70 + 34 * len(names) + 10), total))
    truth = "\n".join(["CORNER MARKET", *(f"{n} {p}" for n, p in zip(names, prices,
                                                                   strict=True)),
                       f"TOTAL {total}"])
    return _draw(340, 70 + 34 * len(names) + 60, items, size=20), truth


def flat_acc(text: str, truth: str) -> float:
    """Character accuracy with every run of white space (line breaks too) made one space:
    for layouts where a row may come back as one line or as one line per cell."""
    return char_accuracy(" ".join(text.split()), " ".join(truth.split()))



def phone_photo_of_page(index: int = 4, seed: int = 3, shot: int = 0,
                        fill: float = 1.0) -> tuple[np.ndarray, str]:
    """A 3000 x 4000 phone photo of a rendered document page (RGB; :func:`render_photo`)."""
    from skiff.kernels.ocr.synth import render_photo

    sample = render_photo(index, seed=seed, shot=shot, fill=fill)
    return sample.image, "\n".join(sample.lines)


CODE = '''def read_rows(path, limit=10):
    rows = []
    with open(path) as fh:
        for k, line in enumerate(fh):
            if k >= limit:
                break
            rows.append(line.split(","))
    return rows


class Table:
    def __init__(self, rows):
        self.rows = rows'''


def code_screenshot(code: str = CODE, *, size: int = 16, dark: bool = False,
                    mono: bool = True) -> np.ndarray:
    """An editor's screenshot of ``code``: DejaVu Sans Mono (or DejaVu Sans with
    ``mono=False``), one line every 1.5 sizes, a light or a dark theme."""
    import os

    from PIL import Image, ImageDraw, ImageFont

    name = "DejaVuSansMono.ttf" if mono else "DejaVuSans.ttf"
    face = ImageFont.truetype(os.path.join(os.path.dirname(fonts()["latin"]), name), size)
    lines = code.split("\n")
    pitch = int(size * 1.5)
    img = Image.new("RGB", (int(40 + 0.62 * size * max(map(len, lines))), 30 + pitch * len(lines)),
                    (30, 30, 30) if dark else (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((20, 15 + i * pitch), line, font=face,
                  fill=(220, 220, 220) if dark else (20, 20, 20))
    return np.asarray(img)


def shop_page() -> tuple[np.ndarray, list[str]]:
    """Proportional print laid out with centred lines, prices set right and an indented
    list: a receipt's head, its items, a shopping list."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(fonts()["latin"], 18)
    img = Image.new("RGB", (520, 420), "white")
    draw = ImageDraw.Draw(img)
    rows, y = [], 15
    for t in ("CORNER BAKERY", "12 Market Street", "Tel 555-0142"):
        draw.text(((520 - face.getbbox(t)[2]) / 2, y), t, font=face, fill="black")
        rows.append(t)
        y += 28
    y += 10
    for name, price in (("Sourdough loaf", "4.50"), ("Croissant x2", "3.20"),
                        ("Coffee", "2.80"), ("Total", "10.50")):
        draw.text((30, y), name, font=face, fill="black")
        draw.text((490 - face.getbbox(price)[2], y), price, font=face, fill="black")
        rows.append(f"{name} {price}")
        y += 28
    y += 10
    for t, x in (("Shopping list:", 30), ("- flour and yeast", 70), ("- two dozen eggs", 70),
                 ("- butter", 70)):
        draw.text((x, y), t, font=face, fill="black")
        rows.append(t)
        y += 28
    return np.asarray(img), rows
