"""OCR of a user's own folder, round 37: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user37.py [--only NAME ...]
        [--degrade thumbnail|phone]

Kinds no earlier benchmark draws, each seeded and with its truth in reading order: a
boarding pass with a barcode and an en dash; a nutrition-facts label (g, mg, %, rules
between rows); a bank card with embossed digits (light print with a dark shadow on a dark
card); a road sign shot at an angle (a perspective warp); a math worksheet (×, ÷, −, =,
fractions); notes in an italic face on lined paper with a margin rule; a two-page spread
scanned with a dark gutter and page numbers between en dashes; a slide with white text on
a colour gradient. Faces the tests seldom use: Liberation Sans Bold Italic, Liberation
Mono Bold, DejaVu Serif Italic, DejaVu Sans Mono Bold, DejaVu Serif Condensed, Liberation
Serif Bold Italic. Read and scored as ``bench_ocr_everyday.py`` reads its scenes
(character accuracy, a run of spaces one, spaces between CJK characters dropped, the order
of lines counting); writes ``results/ocr-user37[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_everyday import compare, table  # noqa: E402
from bench_ocr_probes import FONTS, canvas, font, lines_at  # noqa: E402

FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("lib-sans-bolditalic", "truetype/liberation2/LiberationSans-BoldItalic.ttf")
FONTS.setdefault("lib-mono-bold", "truetype/liberation2/LiberationMono-Bold.ttf")
FONTS.setdefault("serif-italic", "truetype/dejavu/DejaVuSerif-Italic.ttf")
FONTS.setdefault("mono-bold", "truetype/dejavu/DejaVuSansMono-Bold.ttf")
FONTS.setdefault("serif-cond", "truetype/dejavu/DejaVuSerifCondensed.ttf")
FONTS.setdefault("lib-serif-bolditalic", "truetype/liberation2/LiberationSerif-BoldItalic.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


@scene
def boarding_pass():
    """A boarding pass: airports in large capitals, fields under small labels, a barcode."""
    rng = np.random.default_rng(37)
    im, d = canvas(1000, 380, (250, 250, 252))
    d.rectangle((0, 0, 1000, 56), fill=(20, 60, 130))
    d.text((30, 12), "BOARDING PASS", font=font("lib-sans-bolditalic", 28), fill=(255, 255, 255))
    out = ["BOARDING PASS"]
    d.text((30, 80), "MUC", font=font("lib-sans-bold", 48), fill=(20, 20, 20))
    d.text((260, 80), "LIS", font=font("lib-sans-bold", 48), fill=(20, 20, 20))
    out.append("MUC LIS")
    out += table(d, [("Flight LH 1792", "Seat 23A", "Group 3")], (30, 300, 480), "lib-sans",
                 22, 160, 40)
    out += lines_at(d, ["Gate B14 – boarding 06:35–07:05"], "lib-sans", 22, 30, 210, 40)
    out += lines_at(d, ["MARIA SCHNEIDER"], "lib-mono-bold", 20, 30, 260, 40)
    x = 640
    while x < 960:  # a barcode: bars 2-6 px wide, 140 px tall
        w = int(rng.integers(2, 7))
        d.rectangle((x, 90, x + w - 1, 230), fill=(0, 0, 0))
        x += w + int(rng.integers(2, 6))
    return im, out


@scene
def nutrition_facts():
    """A nutrition-facts panel: rules between rows, amounts in g and mg, daily values in %."""
    im, d = canvas(560, 560, (255, 255, 255))
    d.rectangle((20, 20, 540, 540), outline=(0, 0, 0), width=3)
    d.text((36, 30), "Nutrition Facts", font=font("lib-sans-bold", 36), fill=0)
    out = ["Nutrition Facts"]
    out += lines_at(d, ["Serving size 30 g (about 12 crackers)"], "lib-sans", 18, 36, 80, 30)
    d.rectangle((36, 110, 524, 118), fill=0)
    rows = [("Energy", "540 kJ / 129 kcal"), ("Fat", "4.5 g", "6%"),
            ("Saturates", "0.5 g", "3%"), ("Carbohydrate", "19 g", "7%"),
            ("Sugars", "1.2 g", "1%"), ("Protein", "3.1 g", "6%"),
            ("Salt", "0.42 g", "7%"), ("Sodium", "168 mg", "7%")]
    f = font("lib-sans", 20)
    y = 132
    for row in rows:
        d.text((40, y), row[0], font=f, fill=0)
        d.text((250, y), row[1], font=f, fill=0)
        if len(row) > 2:
            d.text((520 - d.textlength(row[2], font=f), y), row[2], font=f, fill=0)
        out.append(" ".join(row))
        d.line((36, y + 34, 524, y + 34), fill=0, width=1)
        y += 44
    return im, out


@scene
def bank_card():
    """A bank card: embossed digits (light with a dark shadow) on a dark blue card."""
    im, d = canvas(860, 540, (200, 200, 205))
    d.rounded_rectangle((30, 30, 830, 510), 36, fill=(24, 40, 92))
    d.text((70, 70), "NORDBANK", font=font("lib-sans-bolditalic", 36), fill=(230, 230, 240))
    d.rounded_rectangle((80, 170, 170, 240), 10, fill=(200, 170, 90))  # the chip
    out = ["NORDBANK"]
    f = font("mono-bold", 46)
    for text, (x, y) in (("4921 5530 1187 2046", (70, 290)), ("VALID THRU 09/29", (330, 370)),
                         ("MARIA K SCHNEIDER", (70, 430))):
        size = f if y == 290 else font("mono-bold", 26)
        d.text((x + 2, y + 2), text, font=size, fill=(8, 14, 40))  # the emboss's shadow
        d.text((x, y), text, font=size, fill=(214, 214, 222))
        out.append(text)
    return im, out


@scene
def road_sign_angle():
    """A direction sign shot from below and to the left: a perspective warp of the sign."""
    from PIL import Image

    sign, d = canvas(720, 300, (0, 110, 60))
    d.rectangle((8, 8, 711, 291), outline=(255, 255, 255), width=6)
    rows = [("Hamburg", "112 km"), ("Bremen", "58 km"), ("Airport", "9 km")]
    out = table(d, rows, (40, 680), "lib-sans-bold", 44, 30, 86, right=(1,),
                fill=(255, 255, 255))
    # the corners of the sign as the photo sees them (PIL takes the inverse mapping)
    src = np.array([[0, 0], [720, 0], [720, 300], [0, 300]], float)
    dst = np.array([[60, 40], [700, 90], [690, 330], [70, 300]], float)
    a = []
    for (x, y), (u, v) in zip(dst, src, strict=True):
        a.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        a.append([0, 0, 0, x, y, 1, -v * x, -v * y])
    coeffs = np.linalg.solve(np.array(a), src.reshape(-1))
    photo = Image.new("RGB", (780, 400), (150, 170, 190))
    warped = sign.transform((780, 400), Image.PERSPECTIVE, tuple(coeffs), Image.BICUBIC)
    mask = Image.new("L", (720, 300), 255).transform((780, 400), Image.PERSPECTIVE,
                                                     tuple(coeffs), Image.BICUBIC)
    photo.paste(warped, (0, 0), mask)
    return photo, out


@scene
def math_worksheet():
    """A worksheet of sums: ×, ÷, a minus sign, fractions with a slash, blanks to fill."""
    im, d = canvas(900, 420, (255, 255, 255))
    d.text((40, 24), "Worksheet 7 – Mixed practice", font=font("lib-serif-bolditalic", 30),
           fill=0)
    out = ["Worksheet 7 – Mixed practice"]
    sums = ["1) 12 × 4 = 48", "2) 96 ÷ 8 = 12", "3) 15 − 7 = 8", "4) 3/4 + 1/8 = 7/8",
            "5) 2.5 × 6 = 15", "6) 100 ÷ 4 = 25"]
    f = font("sans", 24)
    for i, s in enumerate(sums):
        d.text((60 + (i % 2) * 420, 100 + (i // 2) * 90), s, font=f, fill=0)
    out += [f"{sums[i]} {sums[i + 1]}" for i in range(0, len(sums), 2)]
    return im, out


@scene
def lined_note():
    """A note in an italic face on lined paper with a red margin rule."""
    im, d = canvas(760, 420, (253, 252, 240))
    for y in range(60, 420, 44):
        d.line((0, y, 760, y), fill=(160, 190, 230), width=1)
    d.line((80, 0, 80, 420), fill=(230, 120, 120), width=2)
    lines = ["Call Anna back – Tue 3 pm", "Buy: milk, eggs, bread", "Pay rent (1,150.00)",
             "Dentist moved to 14.05.", "Pick up parcel #4471"]
    f = font("serif-italic", 24)
    for i, t in enumerate(lines):
        d.text((100, 60 + i * 44 - 31), t, font=f, fill=(20, 30, 110))
    return im, lines


@scene
def spread_with_gutter():
    """A book's two pages scanned open: a dark shadow down the gutter, page numbers
    between en dashes at the foot."""
    im, d = canvas(1200, 640, (246, 242, 232))
    g = np.asarray(im).astype(float)
    x = np.arange(1200)
    shade = 1 - 0.75 * np.exp(-((x - 600) / 40.0) ** 2)  # the gutter's shadow
    g *= shade[None, :, None]
    from PIL import Image, ImageDraw

    im = Image.fromarray(g.clip(0, 255).astype(np.uint8))
    d = ImageDraw.Draw(im)
    left = ["The river had risen in the night,", "and by morning the lower road",
            "was gone under brown water.", "Nobody in the village remembered"]
    right = ["a flood like it. The old mill", "stood to its windows in the",
             "current, and the bridge at Hollen", "had lost two of its arches."]
    f = font("serif-cond", 18)
    d.text((280, 580), "– 112 –", font=f, fill=0)
    d.text((880, 580), "– 113 –", font=f, fill=0)
    # read page by page, each page's number after its lines
    out = lines_at(d, left, "serif-cond", 22, 60, 80, 40) + ["– 112 –"]
    out += lines_at(d, right, "serif-cond", 22, 680, 80, 40) + ["– 113 –"]
    return im, out


@scene
def slide_gradient():
    """A presentation slide: white title and points on a blue-to-violet gradient."""
    from PIL import Image, ImageDraw

    x = np.linspace(0, 1, 1280)[None, :, None]
    y = np.linspace(0, 1, 720)[:, None, None]
    a, b = np.array([20, 60, 160], float), np.array([120, 30, 140], float)
    g = a + (b - a) * (0.7 * x + 0.3 * y)
    im = Image.fromarray(g.astype(np.uint8))
    d = ImageDraw.Draw(im)
    d.text((80, 70), "Q3 results", font=font("lib-sans-bold", 64), fill=(255, 255, 255))
    points = ["Revenue up 12% to EUR 4.2m", "Costs flat at EUR 3.1m",
              "Two new markets: Spain and Portugal", "Next review: 14 October"]
    out = ["Q3 results"]
    out += lines_at(d, points, "lib-sans", 36, 120, 220, 80, fill=(255, 255, 255))
    return im, out


def main(argv=None) -> None:
    compare(SCENES, "user37", "a user's own folder (round 37)", __file__, argv)


if __name__ == "__main__":
    main()
