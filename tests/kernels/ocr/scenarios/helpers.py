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
