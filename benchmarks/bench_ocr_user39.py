"""OCR of a user's own folder, round 39: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user39.py [--only NAME ...]
        [--degrade thumbnail|phone]

Kinds no earlier benchmark draws, each seeded and with its truth in reading order (lines as
the renderer set them): a spreadsheet screenshot (grid lines, a grey header row, negative
amounts, percentages and "–" in cells with no value); a recipe card (fractions "½", "°C",
"2–3" with an en dash); a weather app's card in white on a blue gradient ("12°C", "%",
"km/h"); a keyboard shortcut sheet, two framed cards whose keys stand in rounded keycaps
("Ctrl + Shift + T");
a Japanese ramen shop's menu (katakana, kanji and "¥" prices beside Latin names); a bank
statement with dates, debits "-45.90" and a running balance "1,204.10"; a slide with
bullets "•" and an arrow "→". Faces: Liberation Sans/Serif (and Bold, Italic), DejaVu Sans
Mono Bold, DejaVu Serif, Noto Sans CJK (Debian's fonts-liberation2, fonts-dejavu,
fonts-noto-cjk). RapidOCR as its users run it (``limit_type=max, 960``, its own
dictionary). Scored as ``bench_ocr_everyday.py`` scores (character accuracy, a run of
spaces one, spaces between CJK characters dropped, the order of lines counting) and by
exact lines (a truth line found, after the same normalisation, as one of the read lines);
writes ``results/ocr-user39[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_everyday import table  # noqa: E402
from bench_ocr_probes import FONTS, canvas, font, lines_at, normal  # noqa: E402
from user_scenes import exact_lines  # noqa: E402, F401 (the earlier home of exact_lines)

FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("lib-serif-bold", "truetype/liberation2/LiberationSerif-Bold.ttf")
FONTS.setdefault("lib-serif-italic", "truetype/liberation2/LiberationSerif-Italic.ttf")
FONTS.setdefault("mono-bold", "truetype/dejavu/DejaVuSansMono-Bold.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


@scene
def spreadsheet_screenshot():
    """A spreadsheet's screenshot: grid lines, a grey header row, negative changes, a
    percentage column and "–" where a cell has no value."""
    im, d = canvas(820, 330, (255, 255, 255))
    rows = [("Region", "Q1", "Q2", "Change", "Share"),
            ("North", "1,240", "1,315", "75", "18.2%"),
            ("South", "980", "942", "-38", "13.0%"),
            ("East", "2,105", "–", "–", "29.1%"),
            ("West", "1,660", "1,702", "42", "23.5%"),
            ("Online", "–", "1,280", "–", "16.2%")]
    xs = (20, 200, 350, 500, 650, 800)
    for i in range(len(rows) + 1):
        d.line((xs[0], 20 + i * 48, xs[-1], 20 + i * 48), fill=(200, 200, 200), width=1)
    for x in xs:
        d.line((x, 20, x, 20 + len(rows) * 48), fill=(200, 200, 200), width=1)
    d.rectangle((xs[0] + 1, 21, xs[-1] - 1, 67), fill=(232, 236, 240))
    f, g = font("lib-sans", 19), font("lib-sans-bold", 19)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            ff = g if i == 0 else f
            x = xs[j] + 10 if j == 0 else xs[j + 1] - 12 - d.textlength(cell, font=ff)
            d.text((x, 32 + i * 48), cell, font=ff, fill=(20, 20, 20))
    return im, [" ".join(r) for r in rows]


@scene
def recipe_card():
    """A recipe card: a title in bold serif, servings and time, ingredients with "½" and an
    en dash between amounts, the oven's "°C"."""
    im, d = canvas(700, 430, (250, 246, 236))
    d.text((30, 22), "Buttermilk Pancakes", font=font("lib-serif-bold", 34), fill=(90, 40, 20))
    out = ["Buttermilk Pancakes"]
    out += lines_at(d, ["Serves 4 · 25 min"], "lib-serif-italic", 22, 32, 72, 30,
                    (90, 70, 60))
    out += lines_at(d, ["250 g flour", "½ tsp salt", "2–3 eggs", "300 ml buttermilk",
                        "Bake at 180 °C for 12 min"], "serif", 21, 40, 130, 50)
    return im, out


@scene
def weather_card():
    """A weather app's card: white print on a blue gradient, a city, the temperature, rain
    and wind, three days' highs and lows."""
    from PIL import Image

    w, h = 600, 420
    top, bottom = np.array([40, 110, 200]), np.array([20, 50, 120])
    t = np.linspace(0, 1, h)[:, None, None]
    arr = (top * (1 - t) + bottom * t).repeat(w, axis=1).astype(np.uint8)
    im = Image.fromarray(arr)
    from PIL import ImageDraw

    d = ImageDraw.Draw(im)
    white = (255, 255, 255)
    d.text((30, 24), "Hamburg", font=font("lib-sans-bold", 34), fill=white)
    d.text((30, 80), "12°C", font=font("lib-sans", 64), fill=white)
    out = ["Hamburg", "12°C"]
    out += lines_at(d, ["Light rain", "Rain 80% Wind 14 km/h"], "lib-sans", 22, 30, 170, 38,
                    white)
    out += table(d, [("Mon", "13°", "7°"), ("Tue", "10°", "4°"), ("Wed", "15°", "9°")],
                 (30, 200, 280), "lib-sans", 22, 270, 44, right=(1, 2), fill=white)
    return im, out


@scene
def shortcut_sheet():
    """A keyboard shortcut sheet: two framed cards side by side, each with its heading, the
    keys in rounded keycaps joined by "+" and the action beside them (read card by card)."""
    im, d = canvas(1000, 370, (248, 248, 250))
    f, g, head = font("mono-bold", 18), font("lib-sans", 20), font("lib-sans-bold", 22)
    cards = [("Editing", [(("Ctrl", "C"), "Copy"), (("Ctrl", "Shift", "T"), "Reopen tab"),
                          (("Alt", "F4"), "Close window"), (("Ctrl", "Z"), "Undo")]),
             ("System", [(("Win", "L"), "Lock screen"), (("Ctrl", "F"), "Find"),
                         (("Shift", "Del"), "Delete"), (("F5",), "Refresh")])]
    out = []
    for col, (title, items) in enumerate(cards):
        left = 20 + col * 490
        d.rounded_rectangle((left, 15, left + 470, 350), radius=12, outline=(120, 120, 140),
                            width=2, fill=(255, 255, 255))
        d.text((left + 20, 28), title, font=head, fill=(40, 40, 120))
        out.append(title)
        for i, (keys, what) in enumerate(items):
            x, y = left + 20, 80 + i * 66
            for k, key in enumerate(keys):
                if k:
                    d.text((x, y + 6), "+", font=g, fill=(80, 80, 80))
                    x += 22
                tw = d.textlength(key, font=f)
                d.rounded_rectangle((x, y, x + tw + 20, y + 36), radius=7,
                                    outline=(150, 150, 150), width=2, fill=(244, 244, 244))
                d.text((x + 10, y + 7), key, font=f, fill=(30, 30, 30))
                x += tw + 30
            d.text((left + 290, y + 6), what, font=g, fill=(0, 0, 0))
            out.append(" + ".join(keys) + " " + what)
    return im, out


@scene
def ramen_menu():
    """A Japanese ramen shop's menu: katakana and kanji names, a Latin name under each and
    a "¥" price flush right."""
    im, d = canvas(700, 470, (252, 248, 240))
    d.text((30, 20), "ラーメン屋 一番", font=font("cjk-bold", 36), fill=(160, 20, 20))
    out = ["ラーメン屋 一番"]
    items = [("醤油ラーメン", "Shoyu Ramen", "¥850"), ("味噌ラーメン", "Miso Ramen", "¥900"),
             ("餃子 6個", "Gyoza (6)", "¥400"), ("ビール", "Beer", "¥550")]
    f, g = font("cjk", 26), font("lib-sans", 18)
    for i, (jp, en, price) in enumerate(items):
        y = 96 + i * 88
        d.text((40, y), jp, font=f, fill=(0, 0, 0))
        d.text((660 - d.textlength(price, font=f), y), price, font=f, fill=(0, 0, 0))
        d.text((40, y + 40), en, font=g, fill=(90, 90, 90))
        out += [f"{jp} {price}", en]
    return im, out


@scene
def bank_statement():
    """A bank statement's page: the account, then a ruled table of dates, descriptions,
    debits (with a minus) and credits, and a running balance."""
    im, d = canvas(900, 420, (255, 255, 255))
    out = lines_at(d, ["Statement 01.11.2026 - 30.11.2026", "Account DE44 5001 0517 5407 3249 31"],
                   "lib-serif", 20, 30, 20, 32)
    rows = [("Date", "Description", "Amount", "Balance"),
            ("03.11.", "Rent November", "-850.00", "2,054.10"),
            ("07.11.", "Supermarket", "-45.90", "2,008.20"),
            ("15.11.", "Salary", "2,400.00", "4,408.20"),
            ("21.11.", "Electricity", "-62.00", "4,346.20")]
    d.line((30, 128, 870, 128), fill=(0, 0, 0), width=2)
    out += table(d, rows, (30, 150, 690, 860), "lib-serif", 20, 100, 48, right=(2, 3))
    for i in range(2, len(rows) + 1):
        d.line((30, 98 + i * 48 - 8, 870, 98 + i * 48 - 8), fill=(210, 210, 210), width=1)
    return im, out


@scene
def bullet_slide():
    """A slide: a title, bullets "•" and a closing line with an arrow "→"."""
    im, d = canvas(1000, 560, (250, 250, 252))
    d.text((60, 40), "Launch Review", font=font("lib-sans-bold", 48), fill=(30, 30, 80))
    out = ["Launch Review"]
    out += lines_at(d, ["• Sign-ups up 24% in week 1", "• Churn down to 3.1%",
                        "• Support tickets: 412 (−9%)", "→ Next: pricing test in Q3"],
                    "lib-sans", 30, 70, 150, 70, (30, 30, 30))
    return im, out


def main(argv=None) -> None:
    from user_scenes import scene_main

    scene_main(39, __file__, __doc__, SCENES, normal, argv)

if __name__ == "__main__":
    main()
