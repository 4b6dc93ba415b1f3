"""OCR of a user's own folder, round 34: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user34.py [--only NAME ...]
        [--degrade thumbnail|phone]

Kinds no earlier benchmark draws, each seeded and with its truth in reading order:
full-width digits and Latin inside Chinese and Japanese lines; an invoice table with
right-aligned amounts and a total; a form with filled underlines and ticked boxes; italic
"handwriting" on ruled paper with a margin line; a book page photographed with its lines
curved toward the spine; a menu with dotted leaders in a bold-italic serif; a price list
with currencies and percentages; a ticket with a barcode beside its text; math-like text
(x², ≤, ±, α); URLs, e-mail addresses and paths; a dark-mode terminal; a DSEG14 display.
Faces the tests seldom or never use: DejaVu Math TeX Gyre, DejaVu Sans Mono Bold, DejaVu
Serif Italic, DejaVu Sans Condensed Bold, Liberation Mono Bold, Liberation Serif Bold
Italic, DSEG14 Classic. Read and scored as ``bench_ocr_everyday.py`` reads its scenes
(character accuracy, a run of spaces one, spaces between CJK characters dropped, the order
of lines counting); writes ``results/ocr-user34[-KIND].md``.
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

FONTS.setdefault("math", "truetype/dejavu/DejaVuMathTeXGyre.ttf")
FONTS.setdefault("mono-bold", "truetype/dejavu/DejaVuSansMono-Bold.ttf")
FONTS.setdefault("serif-italic", "truetype/dejavu/DejaVuSerif-Italic.ttf")
FONTS.setdefault("cond-bold", "truetype/dejavu/DejaVuSansCondensed-Bold.ttf")
FONTS.setdefault("lib-mono-bold", "truetype/liberation2/LiberationMono-Bold.ttf")
FONTS.setdefault("lib-serif-bolditalic", "truetype/liberation2/LiberationSerif-BoldItalic.ttf")
FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("seg14", "truetype/dseg/DSEG14Classic-Regular.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


@scene
def full_width_in_chinese():
    im, d = canvas(760, 260)
    lines = ["订单号：１２３４５６", "金额：１２８元，已付款", "ＡＢＣ科技有限公司",
             "第２页，共３页"]
    return im, lines_at(d, lines, "cjk", 28, 30, 30, 56)


@scene
def full_width_in_japanese():
    im, d = canvas(760, 200, (255, 253, 248))
    lines = ["会員番号：０４７１", "ポイント残高：３５０点", "ＳＨＯＰ　ＴＯＫＹＯ店"]
    return im, lines_at(d, lines, "cjk-serif", 26, 30, 30, 56)


@scene
def invoice_right_aligned():
    im, d = canvas(900, 420)
    d.text((40, 30), "INVOICE 2026-0412", font=font("cond-bold", 30), fill=0)
    rows = [("Item", "Qty", "Unit", "Amount"), ("Pump housing", "2", "84.50", "169.00"),
            ("Seal kit", "10", "3.20", "32.00"), ("Impeller 120 mm", "1", "212.75", "212.75"),
            ("Freight", "1", "18.00", "18.00")]
    out = ["INVOICE 2026-0412"]
    d.line((40, 125, 860, 125), fill=(120, 120, 120))
    out += table(d, rows, (40, 520, 690, 860), "lib-sans", 20, 95, 44, right=(1, 2, 3))
    d.line((40, 320, 860, 320), fill=0, width=2)
    out += table(d, [("Total", "431.75")], (520, 860), "lib-sans-bold", 22, 335, 40,
                 right=(1,))
    return im, out


@scene
def form_underlines_and_boxes():
    im, d = canvas(900, 360)
    f = font("lib-sans", 20)
    out = []
    for i, (label, value) in enumerate((("Full name:", "Maria Keller"),
                                        ("Date of birth:", "14.03.1988"),
                                        ("City:", "Basel"))):
        y = 30 + i * 60
        d.text((40, y), label, font=f, fill=0)
        x0 = 60 + d.textlength(label, font=f)
        d.line((x0, y + 26, 600, y + 26), fill=0, width=1)
        d.text((x0 + 10, y - 2), value, font=font("serif-italic", 22), fill=(20, 30, 120))
        out.append(f"{label} {value}")
    y = 230
    d.text((40, y), "Member:", font=f, fill=0)
    for j, (tick, lab) in enumerate(((True, "Yes"), (False, "No"))):
        x = 170 + j * 130
        d.rectangle((x, y + 2, x + 20, y + 22), outline=0, width=2)
        if tick:
            d.line((x + 4, y + 12, x + 9, y + 18), fill=0, width=3)
            d.line((x + 9, y + 18, x + 18, y + 4), fill=0, width=3)
        d.text((x + 30, y), lab, font=f, fill=0)
    out.append("Member: ☑ Yes ☐ No")
    return im, out


@scene
def italic_on_ruled_paper():
    im, d = canvas(900, 420, (252, 250, 238))
    for k in range(9):
        d.line((0, 40 + k * 44, 900, 40 + k * 44), fill=(150, 180, 230), width=1)
    d.line((80, 0, 80, 420), fill=(230, 120, 120), width=2)
    lines = ["Shopping for Saturday:", "two loaves of bread", "milk, eggs and butter",
             "call Jonas about the bike", "return library books by 9th"]
    out = []
    for i, t in enumerate(lines):
        d.text((100, 40 + (i + 1) * 44 - 30), t, font=font("lib-serif-bolditalic", 26),
               fill=(25, 35, 110))
        out.append(t)
    return im, out


@scene
def curved_book_page():
    """A page photographed open: each line bends down toward the spine on the left."""
    from PIL import Image

    im, d = canvas(1000, 560, (248, 244, 232))
    lines = ["The river had risen in the night, and by", "morning the lower fields were under",
             "water. Nobody in the village could remember", "a flood so early in the year, and",
             "the old men stood on the bridge and argued", "about the weather of their youth."]
    out = lines_at(d, lines, "lib-serif", 28, 60, 60, 62, (30, 30, 30))
    a = np.asarray(im)
    h, w = a.shape[:2]
    xs = np.arange(w)
    shift = (22 * (1 - xs / w) ** 2).astype(int)       # 22 px down at the spine, 0 at the edge
    bent = np.empty_like(a)
    bent[:] = (248, 244, 232)
    for x in range(w):
        s = shift[x]
        bent[s:, x] = a[:h - s, x] if s else a[:, x]
    return Image.fromarray(bent), out


@scene
def menu_dotted_leaders_italic():
    im, d = canvas(760, 360, (255, 250, 240))
    d.text((250, 20), "Desserts", font=font("lib-serif-bolditalic", 36), fill=(90, 30, 20))
    f = font("lib-serif-bolditalic", 24)
    items = [("Apple strudel", "7.50"), ("Crème brûlée", "8.00"), ("Lemon tart", "6.90"),
             ("Cheese plate", "12.40")]
    out = ["Desserts"]
    for i, (name, price) in enumerate(items):
        y = 100 + i * 56
        d.text((40, y), name, font=f, fill=0)
        x0 = 50 + d.textlength(name, font=f)
        x1 = 700 - d.textlength(price, font=f)
        d.text((x0, y), "." * int((x1 - x0 - 10) / d.textlength(".", font=f)), font=f, fill=0)
        d.text((x1, y), price, font=f, fill=0)
        out.append(f"{name} {price}")
    return im, out


@scene
def price_list_currency_percent():
    im, d = canvas(900, 330)
    rows = [("Coffee beans 1 kg", "€18.90", "-15%"), ("Green tea 100 g", "£4.25", "+5%"),
            ("Matcha 30 g", "¥1,280", "0%"), ("Cocoa 250 g", "CHF 7.95", "-2.5%"),
            ("Honey 500 g", "$11.60", "+12.5%")]
    d.text((30, 20), "Price changes from 1 January", font=font("cond-bold", 26), fill=0)
    return im, ["Price changes from 1 January",
                *table(d, rows, (30, 640, 860), "lib-sans", 22, 80, 46, right=(1, 2))]


@scene
def ticket_with_barcode():
    im, d = canvas(900, 300, (250, 250, 245))
    rng = np.random.default_rng(34)
    x = 30
    while x < 230:
        w = int(rng.integers(1, 5))
        d.rectangle((x, 40, x + w - 1, 250), fill=0)
        x += w + int(rng.integers(1, 4))
    lines = ["ADMIT ONE", "Stadium Nord, Gate 7", "Row K  Seat 21", "Sat 17 Jan 2027 19:30"]
    return im, lines_at(d, lines, "lib-mono-bold", 24, 280, 50, 52)


@scene
def math_like_text():
    im, d = canvas(860, 330)
    lines = ["x² + y² ≤ 1", "a = 3.5 ± 0.2 cm", "α ≥ 0.05 and β ≠ 0", "E = mc²",
             "f(x) → 0 as x → ∞"]
    return im, lines_at(d, lines, "math", 32, 40, 25, 60)


@scene
def urls_emails_paths():
    im, d = canvas(1100, 320)
    lines = ["https://docs.example.org/v2/install.html#linux",
             "mailto: help-desk@north-pumps.co.uk",
             "C:\\Users\\anna\\Documents\\report_2026.pdf",
             "/usr/local/lib/python3.12/site-packages",
             "ftp://files.example.net/pub/data_v3.tar.gz"]
    return im, lines_at(d, lines, "mono", 22, 30, 30, 56)


@scene
def dark_terminal():
    im, d = canvas(1000, 340, (18, 18, 22))
    rows = [((90, 220, 120), "$ git status --short"), ((230, 230, 230), " M src/reader.py"),
            ((230, 230, 230), "?? notes/todo.md"), ((90, 220, 120), "$ make test -j2"),
            ((240, 90, 90), "FAILED tests/test_io.py::test_roundtrip"),
            ((230, 200, 90), "1 failed, 212 passed in 8.41s")]
    out = []
    for i, (c, t) in enumerate(rows):
        d.text((24, 20 + i * 50), t, font=font("mono-bold", 22), fill=c)
        out.append(t.strip())
    return im, out


@scene
def display_fourteen_segment():
    im, d = canvas(760, 200, (12, 24, 12))
    d.text((40, 55), "ERR 42", font=font("seg14", 72), fill=(120, 255, 120))
    return im, ["ERR 42"]


def main(argv=None) -> None:
    compare(SCENES, "user34", "a user's own folder (round 34)", __file__, argv)


if __name__ == "__main__":
    main()
