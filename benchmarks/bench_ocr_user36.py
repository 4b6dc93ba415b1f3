"""OCR of a user's own folder, round 36: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user36.py [--only NAME ...]
        [--degrade thumbnail|phone]

Kinds no earlier benchmark draws, each seeded and with its truth in reading order: a menu
in two columns with dotted leaders and prices; a medicine label in small print (µg/mL, ±,
°C, a dosage table); an event ticket with a QR code beside its text; a spreadsheet
screenshot with gridlines and a header cell merged across three columns; notes in an
oblique face on squared paper with quantities; a Japanese receipt with kana, yen amounts
and a total; a shop sign with a vertical Chinese column beside horizontal lines; a Chinese
form whose labels end in full-width colons and hold full-width brackets; a thermostat's
screen (light on dark, °C and %); a pharmacy's opening hours with en dashes and a note in
brackets. Faces the tests seldom or never use: DejaVu Sans Bold Oblique, DejaVu Sans
Condensed Bold Oblique, DejaVu Sans Mono Bold Oblique, DejaVu Serif Condensed Bold Italic,
Liberation Serif Bold, Liberation Serif Italic, WenQuanYi Zen Hei. Read and scored as
``bench_ocr_everyday.py`` reads its scenes (character accuracy, a run of spaces one,
spaces between CJK characters dropped, the order of lines counting); writes
``results/ocr-user36[-KIND].md``.
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

FONTS.setdefault("sans-boldoblique", "truetype/dejavu/DejaVuSans-BoldOblique.ttf")
FONTS.setdefault("cond-boldoblique", "truetype/dejavu/DejaVuSansCondensed-BoldOblique.ttf")
FONTS.setdefault("mono-boldoblique", "truetype/dejavu/DejaVuSansMono-BoldOblique.ttf")
FONTS.setdefault("serif-cond-bolditalic", "truetype/dejavu/DejaVuSerifCondensed-BoldItalic.ttf")
FONTS.setdefault("lib-serif-bold", "truetype/liberation2/LiberationSerif-Bold.ttf")
FONTS.setdefault("lib-serif-italic", "truetype/liberation2/LiberationSerif-Italic.ttf")
FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("zenhei", "truetype/wqy/wqy-zenhei.ttc")
FONTS.setdefault("cjk-serif", "opentype/noto/NotoSerifCJK-Regular.ttc")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


def _leader(d, x0, x1, y, name, price, f):
    """``name`` at ``x0``, ``price`` flush right at ``x1``, dots between them."""
    d.text((x0, y), name, font=f, fill=(40, 30, 20))
    w = d.textlength(price, font=f)
    d.text((x1 - w, y), price, font=f, fill=(40, 30, 20))
    dot = d.textlength(". ", font=f)
    x = x0 + d.textlength(name, font=f) + dot
    while x < x1 - w - dot:
        d.text((x, y), ".", font=f, fill=(90, 80, 70))
        x += dot
    return f"{name} {price}"


@scene
def menu_two_columns():
    """A café's menu: a heading over two columns, each with a section title and dishes
    whose prices stand flush right after dotted leaders."""
    im, d = canvas(1100, 520, (252, 248, 238))
    d.text((400, 24), "Café Lindner", font=font("serif-cond-bolditalic", 40), fill=(90, 40, 20))
    f, head = font("lib-serif-italic", 22), font("lib-serif-bold", 24)
    cols = [("Breakfast", [("Two eggs on toast", "7.50"), ("Porridge with honey", "5.20"),
                           ("Croissant", "2.80"), ("Fruit salad", "4.90")]),
            ("Lunch", [("Soup of the day", "6.40"), ("Club sandwich", "9.80"),
                       ("Quiche and salad", "10.50"), ("Pasta al pomodoro", "11.20")])]
    out = ["Café Lindner"]
    for j, (title, dishes) in enumerate(cols):
        x0 = 50 + j * 540
        d.text((x0, 110), title, font=head, fill=(90, 40, 20))
        out.append(title)
        for i, (name, price) in enumerate(dishes):
            out.append(_leader(d, x0, x0 + 470, 160 + i * 70, name, price, f))
    return im, out


@scene
def medicine_label():
    """A bottle's label: a bold name, small print with units and signs, a dosage table."""
    im, d = canvas(760, 460)
    d.rectangle((12, 12, 748, 448), outline=(0, 90, 160), width=3)
    d.text((36, 30), "Salbutamol 100 µg", font=font("lib-sans-bold", 30), fill=(0, 60, 120))
    small = ["Oral solution, 2 mg/5 mL (± 5 %)", "Store below 25 °C. Do not freeze.",
             "Keep out of the reach of children."]
    out = ["Salbutamol 100 µg"]
    out += lines_at(d, small, "lib-sans", 15, 36, 84, 24)
    rows = [("Age", "Dose", "Times a day"), ("2-6 years", "1-2 mg", "3"),
            ("6-12 years", "2 mg", "3-4"), ("Adults", "2-4 mg", "3-4")]
    out += table(d, rows, (36, 260, 460), "lib-sans", 16, 180, 34)
    d.text((36, 330), "Lot B2291   Exp 11/2028", font=font("mono", 14), fill=0)
    out.append("Lot B2291 Exp 11/2028")
    return im, out


def _qr(d, x, y, cell, n, seed):
    """A QR code's look: ``n`` x ``n`` seeded modules and three finder squares."""
    rng = np.random.default_rng(seed)
    grid = rng.random((n, n)) < 0.5
    for fy, fx in ((0, 0), (0, n - 7), (n - 7, 0)):
        grid[fy:fy + 7, fx:fx + 7] = False
        grid[fy:fy + 7, fx] = grid[fy:fy + 7, fx + 6] = True
        grid[fy, fx:fx + 7] = grid[fy + 6, fx:fx + 7] = True
        grid[fy + 2:fy + 5, fx + 2:fx + 5] = True
    for i, j in zip(*np.nonzero(grid), strict=True):
        d.rectangle((x + j * cell, y + i * cell, x + (j + 1) * cell - 1,
                     y + (i + 1) * cell - 1), fill=0)


@scene
def ticket_with_qr():
    """A concert ticket: text at the left, a QR code at the right, a perforation between."""
    im, d = canvas(980, 360, (245, 240, 255))
    d.rectangle((10, 10, 970, 350), outline=(80, 40, 140), width=2)
    d.text((40, 30), "ADMIT ONE", font=font("sans-boldoblique", 34), fill=(80, 40, 140))
    body = ["Orchestra Hall, 14 March 2027", "Doors 19:00 · Start 19:30", "Row F  Seat 14",
            "Price EUR 48.00 incl. VAT"]
    out = ["ADMIT ONE"]
    out += lines_at(d, body, "lib-sans", 22, 40, 100, 44)
    out[3] = "Row F Seat 14"
    for y in range(20, 345, 12):
        d.line((660, y, 660, y + 5), fill=(150, 130, 180), width=2)
    _qr(d, 700, 60, 8, 29, 36)
    d.text((712, 300), "No. 0048-2291", font=font("mono-boldoblique", 18), fill=0)
    out.append("No. 0048-2291")
    return im, out


@scene
def spreadsheet_merged_header():
    """A spreadsheet's screenshot: gridlines, a header cell merged across three columns
    (B1:D1), right-aligned numbers."""
    im, d = canvas(820, 330)
    xs = [20, 200, 340, 480, 620, 760]
    ys = [20, 60, 100, 140, 180, 220]
    grey = (200, 200, 200)
    for y in ys:
        d.line((20, y, 760, y), fill=grey)
    for x in xs:
        d.line((x, 20, x, 220), fill=grey)
    d.rectangle((201, 21, 619, 59), fill=(255, 255, 255))   # B1:D1 merged
    f, fb = font("lib-sans", 17), font("lib-sans-bold", 17)
    d.text((30, 30), "Region", font=fb, fill=0)
    w = d.textlength("Q1 2026", font=fb)
    d.text((410 - w / 2, 30), "Q1 2026", font=fb, fill=0)
    d.text((630, 30), "Total", font=fb, fill=0)
    rows = [("", "Jan", "Feb", "Mar", ""), ("North", "1,204", "1,318", "1,297", "3,819"),
            ("South", "988", "1,041", "1,120", "3,149"),
            ("West", "1,530", "1,472", "1,611", "4,613")]
    out = ["Region Q1 2026 Total"]
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            if not cell:
                continue
            face = fb if i == 0 else f
            x = xs[j] + 10 if j == 0 else xs[j + 1] - 10 - d.textlength(cell, font=face)
            d.text((x, ys[i + 1] + 10), cell, font=face, fill=0)
        out.append(" ".join(c for c in row if c))
    d.text((20, 250), "Sheet1   Sheet2   +", font=font("lib-sans", 15), fill=(80, 80, 80))
    out.append("Sheet1 Sheet2 +")
    return im, out


@scene
def squared_paper_shopping():
    """A shopping list written in an oblique face on squared paper, quantities after."""
    im, d = canvas(760, 380, (252, 252, 248))
    for k in range(0, 760, 20):
        d.line((k, 0, k, 380), fill=(200, 215, 235))
    for k in range(0, 380, 20):
        d.line((0, k, 760, k), fill=(200, 215, 235))
    lines = ["Saturday market", "apples 1.5 kg", "eggs x 12", "milk 2 L", "bread (rye)",
             "coffee 250 g"]
    return im, lines_at(d, lines, "cond-boldoblique", 26, 60, 30, 54, (20, 30, 110))


@scene
def japanese_receipt():
    """A shop receipt in Japanese: kana and kanji item names, yen amounts flush right,
    a total, tax included, and the change."""
    im, d = canvas(560, 600)
    f, fb = font("cjk-serif", 22), font("cjk-bold", 28)
    w = d.textlength("ありがとう商店", font=fb)
    d.text((280 - w / 2, 24), "ありがとう商店", font=fb, fill=0)
    out = ["ありがとう商店"]
    rows = [("おにぎり", "¥150"), ("お茶", "¥130"), ("サンドイッチ", "¥380"),
            ("チョコレート", "¥210"), ("合計", "¥870"), ("お預り", "¥1,000"), ("お釣り", "¥130")]
    for i, (name, price) in enumerate(rows):
        y = 100 + i * 56 + (20 if i >= 4 else 0)
        d.text((40, y), name, font=f, fill=0)
        d.text((520 - d.textlength(price, font=f), y), price, font=f, fill=0)
        out.append(f"{name} {price}")
    d.line((40, 318, 520, 318), fill=0, width=1)
    d.text((40, 540), "(税込) 2026年12月6日", font=f, fill=0)
    out.append("(税込) 2026年12月6日")
    return im, out


@scene
def sign_vertical_and_horizontal():
    """A shop's sign: a vertical column of Chinese at the left, a name and opening hours
    set horizontally beside it."""
    im, d = canvas(820, 520, (170, 30, 30))
    f = font("zenhei", 52)
    for i, ch in enumerate("正宗老店"):
        d.text((40, 40 + i * 110), ch, font=f, fill=(250, 220, 140))
    d.line((140, 30, 140, 490), fill=(250, 220, 140), width=3)
    d.text((190, 70), "王记面馆", font=font("zenhei", 72), fill=(255, 255, 255))
    d.text((190, 190), "Wang's Noodles", font=font("sans-boldoblique", 40), fill=(255, 255, 255))
    d.text((190, 300), "营业时间 10:00-22:00", font=font("zenhei", 32), fill=(250, 220, 140))
    d.text((190, 370), "电话 021-6234 5678", font=font("zenhei", 32), fill=(250, 220, 140))
    return im, ["正宗老店", "王记面馆", "Wang's Noodles", "营业时间 10:00-22:00",
                "电话 021-6234 5678"]


@scene
def chinese_form_full_width():
    """A registration form: labels ending in full-width colons, full-width brackets."""
    im, d = canvas(760, 420)
    d.text((250, 24), "会员登记表", font=font("cjk-bold", 34), fill=0)
    f = font("cjk", 24)
    lines = ["姓名：张三", "电话（手机）：13800138000", "地址：上海市浦东新区（东门）",
             "备注（选填）：无"]
    out = ["会员登记表"]
    for i, t in enumerate(lines):
        d.text((50, 100 + i * 72), t, font=f, fill=0)
        d.line((50, 100 + i * 72 + 38, 700, 100 + i * 72 + 38), fill=(160, 160, 160))
        out.append(t)
    return im, out


@scene
def thermostat_screen():
    """A room thermostat's screen: light digits on dark, °C, %, a mode line."""
    im, d = canvas(640, 400, (22, 28, 36))
    d.text((60, 50), "21.5 °C", font=font("sans-boldoblique", 80), fill=(240, 240, 240))
    d.text((60, 190), "Set 22.0 °C   Humidity 45 %", font=font("lib-sans", 24),
           fill=(160, 200, 240))
    d.text((60, 250), "Mode: Heat  Fan: Auto", font=font("lib-sans", 24), fill=(160, 200, 240))
    d.text((60, 320), "Mon 07:42", font=font("mono-boldoblique", 22), fill=(120, 140, 160))
    return im, ["21.5 °C", "Set 22.0 °C Humidity 45 %", "Mode: Heat Fan: Auto", "Mon 07:42"]


@scene
def pharmacy_hours():
    """A pharmacy's door sign: days and hours with en dashes, a note in brackets."""
    im, d = canvas(700, 420, (235, 250, 240))
    d.text((40, 30), "Apotheke am Markt", font=font("lib-serif-bold", 36), fill=(0, 110, 60))
    rows = [("Mon – Fri", "8:00 – 18:30"), ("Sat", "9:00 – 13:00"), ("Sun", "closed")]
    out = ["Apotheke am Markt"]
    out += table(d, rows, (40, 260), "serif", 24, 110, 50)
    note = "(Emergency service: see door)"
    d.text((40, 290), note, font=font("lib-serif-italic", 20), fill=0)
    out.append(note)
    return im, out


def main(argv=None) -> None:
    compare(SCENES, "user36", "a user's own folder (round 36)", __file__, argv)


if __name__ == "__main__":
    main()
