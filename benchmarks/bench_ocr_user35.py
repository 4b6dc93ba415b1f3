"""OCR of a user's own folder, round 35: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user35.py [--only NAME ...]
        [--degrade thumbnail|phone]

Kinds no earlier benchmark draws, each seeded and with its truth in reading order: a code
screenshot with syntax colours (brackets, operators, comparisons); a form with combs (one
character a box); handwriting-like italic on squared paper; a two-column paper page with a
figure caption and a footnote; a shipping label (a barcode, small print, a block set
sideways); a bank statement with negative amounts in parentheses; a slide whose text lies
on a photograph; chat bubbles left and right with times inside them; a Japanese page with a
horizontal title over vertical columns; a timetable ruled in a grid. Faces the tests seldom
or never use: DejaVu Sans Mono Oblique, DejaVu Serif Condensed Italic, DejaVu Serif Bold
Italic, DejaVu Serif Condensed Bold, Liberation Sans Bold Italic, Liberation Mono Bold
Italic, Liberation Sans Italic, Noto Serif CJK Bold, DejaVu Sans Condensed Oblique. Read and
scored as ``bench_ocr_everyday.py`` reads its scenes (character accuracy, a run of spaces
one, spaces between CJK characters dropped, the order of lines counting); writes
``results/ocr-user35[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_everyday import compare, table  # noqa: E402
from bench_ocr_probes import FONTS, blobs, canvas, font, lines_at  # noqa: E402

FONTS.setdefault("mono-oblique", "truetype/dejavu/DejaVuSansMono-Oblique.ttf")
FONTS.setdefault("lib-mono", "truetype/liberation2/LiberationMono-Regular.ttf")
FONTS.setdefault("serif-cond-italic", "truetype/dejavu/DejaVuSerifCondensed-Italic.ttf")
FONTS.setdefault("serif-bolditalic", "truetype/dejavu/DejaVuSerif-BoldItalic.ttf")
FONTS.setdefault("serif-cond-bold", "truetype/dejavu/DejaVuSerifCondensed-Bold.ttf")
FONTS.setdefault("lib-sans-bolditalic", "truetype/liberation2/LiberationSans-BoldItalic.ttf")
FONTS.setdefault("lib-mono-bolditalic", "truetype/liberation2/LiberationMono-BoldItalic.ttf")
FONTS.setdefault("lib-sans-italic", "truetype/liberation2/LiberationSans-Italic.ttf")
FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("cjk-serif-bold", "opentype/noto/NotoSerifCJK-Bold.ttc")
FONTS.setdefault("cond-oblique", "truetype/dejavu/DejaVuSansCondensed-Oblique.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


@scene
def code_syntax_colours():
    """An editor's light theme, each token its own colour, indentation in spaces."""
    im, d = canvas(1000, 380, (250, 250, 250))
    f = font("lib-mono", 20)
    kw, nm, op, st, cm = (170, 30, 160), (30, 30, 30), (200, 90, 0), (20, 130, 40), (130, 130, 130)
    rows = [[("def ", kw), ("clamp", (20, 70, 200)), ("(x, lo=0, hi=1):", nm)],
            [("    if ", kw), ("x <= lo", nm), (":", op)],
            [("        return ", kw), ("lo", nm)],
            [("    return ", kw), ("min(x, hi) ", nm), ("# x > lo", cm)],
            [("d = {", nm), ("'a'", st), (": [1, 2], ", nm), ("'b'", st), (": ()}", nm)],
            [("n += len(d[", nm), ("'a'", st), ("]) * 2 != 5", nm)]]
    out = []
    for i, row in enumerate(rows):
        x = 24
        for tok, c in row:
            d.text((x, 24 + i * 56), tok, font=f, fill=c)
            x += d.textlength(tok, font=f)
        out.append("".join(t for t, _ in row).strip())
    return im, out


@scene
def comb_form():
    """Boxes for one character each, as on tax and customs forms."""
    im, d = canvas(900, 300)
    f = font("lib-sans", 20)
    out = []
    for i, (label, value) in enumerate((("Surname", "MUELLER"), ("Postcode", "80331"),
                                        ("Date", "14031988"))):
        y = 40 + i * 80
        d.text((40, y + 8), label, font=f, fill=0)
        x0, cell = 200, 36
        n = len(value) + 2
        d.rectangle((x0, y, x0 + n * cell, y + 40), outline=0, width=1)
        for k in range(1, n):
            d.line((x0 + k * cell, y + 28, x0 + k * cell, y + 40), fill=0, width=1)
        for k, ch in enumerate(value):
            w = d.textlength(ch, font=font("serif-cond-italic", 24))
            d.text((x0 + k * cell + (cell - w) / 2, y + 4), ch, font=font("serif-cond-italic", 24),
                   fill=(20, 30, 120))
        out.append(f"{label} {value}")
    return im, out


@scene
def squared_paper_notes():
    im, d = canvas(900, 360, (253, 253, 250))
    for k in range(0, 900, 22):
        d.line((k, 0, k, 360), fill=(190, 205, 230))
    for k in range(0, 360, 22):
        d.line((0, k, 900, k), fill=(190, 205, 230))
    lines = ["Lab notes, 3 March", "sample B dried at 105 C", "mass before 12.48 g",
             "mass after 11.91 g", "loss = 4.6 %"]
    return im, lines_at(d, lines, "serif-bolditalic", 24, 50, 30, 62, (30, 40, 120))


@scene
def two_column_paper():
    """Title across, two columns, a figure with its caption in the right column, a
    footnote under a short rule at the bottom."""
    im, d = canvas(1100, 900)
    d.text((230, 30), "Sparse Solvers on Small Clusters", font=font("serif-cond-bold", 32), fill=0)
    f = font("lib-serif", 20)
    left = ["We compare three preconditioners", "on meshes of one to eight million",
            "cells. Each run used two nodes", "with sixteen cores, and the",
            "times are the median of five",
            "repeats. Algebraic multigrid", "was fastest in every case but", "the smallest one.*"]
    right = ["Figure 1: Time per solve against", "mesh size, log scale.",
             "The incomplete factorization", "needed the least memory."]
    out = ["Sparse Solvers on Small Clusters"]
    for i, t in enumerate(left):
        d.text((60, 120 + i * 34), t, font=f, fill=0)
    out += left
    d.rectangle((590, 120, 1040, 380), outline=(90, 90, 90), width=2)
    pts = [(620, 350), (720, 300), (820, 240), (920, 190), (1010, 150)]
    d.line(pts, fill=(40, 80, 200), width=3)
    fc = font("lib-sans-italic", 17)
    d.text((590, 395), right[0], font=fc, fill=0)
    d.text((590, 420), right[1], font=fc, fill=0)
    for i, t in enumerate(right[2:]):
        d.text((590, 470 + i * 34), t, font=f, fill=0)
    out += right
    d.line((60, 800, 320, 800), fill=0, width=1)
    note = "* On one node the direct solver was faster."
    d.text((60, 812), note, font=font("lib-serif", 15), fill=0)
    out.append(note)
    return im, out


@scene
def shipping_label():
    """A parcel label: sender in small print, the address large, a barcode with its
    number under it, and a service line set sideways along the right edge."""
    from PIL import Image, ImageDraw

    im, d = canvas(820, 560)
    d.rectangle((10, 10, 810, 550), outline=0, width=3)
    fs = font("cond-oblique", 14)
    out = []
    for i, t in enumerate(["FROM: North Pumps Ltd, Unit 4", "Dock Road, Hull HU9 1TX"]):
        d.text((30, 24 + i * 20), t, font=fs, fill=0)
        out.append(t)
    fb = font("lib-sans-bold", 30)
    for i, t in enumerate(["TO: Anna Schmidt", "Lindenstrasse 12", "10969 Berlin", "GERMANY"]):
        d.text((30, 100 + i * 42), t, font=fb, fill=0)
        out.append(t)
    rng = np.random.default_rng(35)
    x = 40
    while x < 600:
        w = int(rng.integers(2, 6))
        d.rectangle((x, 300, x + w - 1, 440), fill=0)
        x += w + int(rng.integers(2, 5))
    d.text((150, 450), "JD 0146 2231 8870", font=font("lib-mono", 24), fill=0)
    out.append("JD 0146 2231 8870")
    side = Image.new("RGB", (420, 44), (255, 255, 255))
    ImageDraw.Draw(side).text((10, 6), "EXPRESS 24H", font=font("lib-sans-bold", 28), fill=0)
    im.paste(side.rotate(90, expand=True), (730, 80))
    out.append("EXPRESS 24H")
    return im, out


@scene
def bank_statement_parentheses():
    im, d = canvas(960, 380)
    d.text((40, 24), "Statement, November 2026", font=font("serif-cond-bold", 26), fill=0)
    rows = [("Date", "Description", "Amount", "Balance"),
            ("02 Nov", "Salary", "3,450.00", "4,212.18"),
            ("04 Nov", "Rent", "(1,250.00)", "2,962.18"),
            ("11 Nov", "Card refund", "39.90", "3,002.08"),
            ("19 Nov", "Insurance", "(118.40)", "2,883.68")]
    out = ["Statement, November 2026"]
    out += table(d, rows, (40, 200, 640, 900), "lib-sans", 20, 90, 50, right=(2, 3))
    return im, out


@scene
def slide_on_photo():
    """White bold italic text with a dark shadow over a soft colour photograph."""
    from PIL import Image, ImageDraw

    a = blobs(35, (4, 6), (1200, 675), 30)
    im = Image.fromarray((np.asarray(a.convert("RGB")) * 0.7).astype(np.uint8))
    d = ImageDraw.Draw(im)
    lines = [("Quarterly review", 56, 60), ("Revenue up 12% on last year", 34, 220),
             ("Two new sites in Lyon and Porto", 34, 290), ("Hiring: 14 engineers", 34, 360)]
    out = []
    for t, size, y in lines:
        f = font("lib-sans-bolditalic", size)
        d.text((82, y + 3), t, font=f, fill=(20, 20, 20))
        d.text((80, y), t, font=f, fill=(255, 255, 255))
        out.append(t)
    return im, out


@scene
def chat_left_right_with_times():
    im, d = canvas(720, 520, (236, 229, 221))
    f, ft = font("lib-sans", 20), font("lib-sans", 13)
    msgs = [("l", "Are you still at the office?", "18:02"), ("r", "Leaving in 10 min", "18:03"),
            ("l", "Can you bring the charger?", "18:03"), ("r", "Sure, the white one?", "18:05"),
            ("l", "Yes please!", "18:05")]
    out = []
    for i, (side, t, tm) in enumerate(msgs):
        y = 24 + i * 96
        w = d.textlength(t, font=f) + 90
        x0 = 24 if side == "l" else 696 - w
        d.rounded_rectangle((x0, y, x0 + w, y + 66), 14,
                            fill=(255, 255, 255) if side == "l" else (220, 248, 198))
        d.text((x0 + 14, y + 10), t, font=f, fill=(20, 20, 20))
        d.text((x0 + w - 48, y + 44), tm, font=ft, fill=(120, 120, 120))
        out += [t, tm]
    return im, out


@scene
def japanese_title_over_vertical_columns():
    """A horizontal heading, then two columns set top to bottom, read right to left."""
    im, d = canvas(520, 640, (255, 252, 245))
    d.text((40, 24), "お知らせ２０２６", font=font("cjk-serif-bold", 34), fill=0)
    f = font("cjk-serif-bold", 34)
    cols = ["本日は休業します", "明日は十時開店"]
    for j, text in enumerate(cols):
        x = 380 - j * 90
        for i, ch in enumerate(text):
            d.text((x, 110 + i * 44), ch, font=f, fill=(30, 30, 30))
    return im, ["お知らせ２０２６", *cols]


@scene
def ruled_timetable():
    """A school timetable: ruled grid lines around every cell."""
    im, d = canvas(900, 330)
    rows = [("Time", "Mon", "Tue", "Wed", "Thu"), ("08:00", "Maths", "Physics", "French", "Art"),
            ("09:45", "History", "Maths", "Biology", "Music"),
            ("11:30", "Sport", "Chemistry", "Maths", "German")]
    xs = [30, 170, 340, 510, 680, 860]
    for i in range(len(rows) + 1):
        d.line((30, 30 + i * 64, 860, 30 + i * 64), fill=0, width=2)
    for x in xs:
        d.line((x, 30, x, 30 + len(rows) * 64), fill=0, width=2)
    f = font("lib-mono-bolditalic", 20)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            d.text((xs[j] + 14, 30 + i * 64 + 20), cell, font=f, fill=0)
    return im, [" ".join(r) for r in rows]


def main(argv=None) -> None:
    compare(SCENES, "user35", "a user's own folder (round 35)", __file__, argv)


if __name__ == "__main__":
    main()
