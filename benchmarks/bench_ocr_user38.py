"""OCR of a user's own folder, round 38: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user38.py [--only NAME ...]
        [--degrade thumbnail|phone]

Kinds no earlier benchmark draws, each seeded and with its truth in reading order: a
pharmacy's dosage label ("1-0-1", mg, ml, a hyphen between digits that is no en dash); a
parking ticket in thermal print (entry, exit, a duration with an en dash between times); a
regional train's timetable whose cells hold "–" for a train that does not stop; a dark
editor screenshot of Python with syntax colours ("->", "!=", "# comment"); a chat
screenshot whose bubbles end in symbols (☺ ✓ ♥ ☀, all in the recognizer's dictionary); a
shopping list whose words wobble off the line as a hand writes; a Chinese invoice (发票)
with a red seal stamped below its last line (the seal's words are text too); a bilingual
street sign (Chinese over English); a product label with a barcode and its digits; a
calendar page of one week, a framed column a day (read day by day). Faces the tests
seldom use: DejaVu Sans Mono Oblique, Liberation Mono Italic, DejaVu Sans Condensed
Oblique, Liberation Sans Italic, DejaVu Serif Condensed Italic, Noto Sans CJK Bold.
Read and scored as ``bench_ocr_everyday.py`` reads its scenes
(character accuracy, a run of spaces one, spaces between CJK characters dropped, the order
of lines counting); writes ``results/ocr-user38[-KIND].md``.
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
FONTS.setdefault("lib-sans-italic", "truetype/liberation2/LiberationSans-Italic.ttf")
FONTS.setdefault("mono-oblique", "truetype/dejavu/DejaVuSansMono-Oblique.ttf")
FONTS.setdefault("lib-mono", "truetype/liberation2/LiberationMono-Regular.ttf")
FONTS.setdefault("lib-mono-italic", "truetype/liberation2/LiberationMono-Italic.ttf")
FONTS.setdefault("cond-oblique", "truetype/dejavu/DejaVuSansCondensed-Oblique.ttf")
FONTS.setdefault("serif-cond-italic", "truetype/dejavu/DejaVuSerifCondensed-Italic.ttf")
FONTS.setdefault("cjk-bold", "opentype/noto/NotoSansCJK-Bold.ttc")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


@scene
def dosage_label():
    """A pharmacy's label stuck on a box: the patient, the drug and strength, a dosage
    scheme "1-0-1" (morning-noon-evening: hyphens between digits, no en dashes)."""
    im, d = canvas(760, 330, (255, 255, 255))
    d.rectangle((10, 10, 750, 320), outline=(0, 90, 60), width=3)
    d.rectangle((10, 10, 750, 56), fill=(0, 90, 60))
    d.text((26, 18), "Apotheke am Markt", font=font("lib-sans-bold", 24), fill=(255, 255, 255))
    out = ["Apotheke am Markt"]
    out += lines_at(d, ["Ibuprofen 400 mg, 20 tablets", "Take 1-0-1 after meals",
                        "Max. 1200 mg in 24 h", "Syrup: 5 ml 3x daily (children 6-12 y)",
                        "Dr. K. Weber 02.12.2026 Rx 448-2093"], "lib-sans", 22, 26, 76, 46)
    return im, out


@scene
def parking_ticket():
    """A parking ticket from a machine: thermal print, light and grainy, times and a fee."""
    rng = np.random.default_rng(38)
    im, d = canvas(460, 520, (246, 244, 238))
    lines = ["CITY CENTRE CAR PARK", "Ticket No. 0071 5532", "Entry 06.12.2026 08:12",
             "Exit 06.12.2026 10:47", "Duration 2 h 35 min", "Rate 08:00–18:00 EUR 2.40/h",
             "Amount paid EUR 7.20", "Thank you - drive safely"]
    f = font("lib-mono", 20)
    for i, t in enumerate(lines):
        d.text((24, 30 + i * 56), t, font=f, fill=(70, 70, 80))
    a = np.asarray(im).astype(float)
    a += rng.normal(0, 10, a.shape[:2])[..., None]  # the thermal paper's grain
    from PIL import Image

    return Image.fromarray(a.clip(0, 255).astype(np.uint8)), lines


@scene
def timetable_no_stop():
    """A regional train's timetable: stations down, trains across, "–" where one does not
    stop; flush-right times."""
    im, d = canvas(760, 330, (255, 255, 255))
    rows = [("Station", "RB 31", "RE 7", "RB 33"), ("Kiel Hbf", "06:02", "06:15", "06:40"),
            ("Preetz", "06:19", "–", "06:57"), ("Plön", "06:31", "06:38", "07:09"),
            ("Eutin", "06:50", "06:54", "07:28"), ("Lübeck Hbf", "07:31", "07:25", "08:09")]
    d.line((20, 66, 740, 66), fill=(0, 0, 0), width=2)
    return im, table(d, rows, (30, 400, 560, 720), "lib-sans", 22, 30, 50, right=(1, 2, 3))


@scene
def code_editor_dark():
    """An editor's dark theme: Python with keywords, strings and comments in colours."""
    im, d = canvas(900, 300, (30, 30, 36))
    f = font("mono-oblique", 20)
    lines = [[("def ", (200, 120, 220)), ("area(w: float, h: float) -> float:", (220, 220, 220))],
             [("    # width times height", (110, 160, 110))],
             [("    if w != h:", (220, 220, 220))],
             [("        return w * h", (220, 220, 220))],
             [("    return w ** 2  ", (220, 220, 220)), ("# a square", (110, 160, 110))],
             [("print(area(3.5, 2))", (220, 220, 220))]]
    out = []
    for i, parts in enumerate(lines):
        x = 20
        for text, colour in parts:
            d.text((x, 24 + i * 44), text, font=f, fill=colour)
            x += d.textlength(text, font=f)
        out.append("".join(t for t, _ in parts).strip())
    return im, out


@scene
def chat_with_symbols():
    """A chat screenshot whose messages end in symbols (☺ ✓ ♥ ☀), each in the recognizer's
    dictionary."""
    im, d = canvas(640, 420, (236, 229, 221))
    msgs = [("left", "See you at 7?", " ☺"), ("right", "Yes! Table for four", " ✓"),
            ("left", "Great, bring the cake", " ♥"), ("right", "Sunny tomorrow", " ☀")]
    f = font("sans", 22)
    out = []
    for i, (side, words, symbol) in enumerate(msgs):
        w = d.textlength(words + symbol, font=f) + 32
        x = 20 if side == "left" else 620 - w
        y = 30 + i * 92
        d.rounded_rectangle((x, y, x + w, y + 56), 14,
                            fill=(255, 255, 255) if side == "left" else (220, 248, 198))
        d.text((x + 16, y + 14), words + symbol, font=f, fill=(30, 30, 30))
        out.append(words + symbol)
    return im, out


@scene
def wobbly_shopping_list():
    """A shopping list written by hand: each word a little off the line and turned."""
    from PIL import Image

    rng = np.random.default_rng(138)
    im, d = canvas(620, 460, (250, 248, 240))
    lines = ["2 kg potatoes", "olive oil", "6 eggs", "basil + mint", "oat milk x2",
             "batteries AA"]
    f = font("cond-oblique", 28)
    for i, line in enumerate(lines):
        x = 60
        for word in line.split(" "):
            w = int(d.textlength(word, font=f)) + 12
            tile = Image.new("RGBA", (w, 48), (0, 0, 0, 0))
            from PIL import ImageDraw

            ImageDraw.Draw(tile).text((6, 6), word, font=f, fill=(30, 40, 120, 255))
            tile = tile.rotate(float(rng.uniform(-4, 4)), Image.BICUBIC, expand=True)
            im.paste(tile, (x, 30 + i * 66 + int(rng.integers(-4, 5))), tile)
            x += w + int(rng.integers(6, 14))
    return im, lines


@scene
def invoice_with_seal():
    """A Chinese invoice (发票): title, buyer, items, a red round seal stamped over the
    seller's line."""
    from PIL import Image, ImageDraw

    im, d = canvas(820, 520, (252, 250, 244))
    d.text((300, 24), "增值税普通发票", font=font("cjk-bold", 34), fill=(150, 60, 40))
    out = ["增值税普通发票"]
    out += lines_at(d, ["购买方：北京星河科技有限公司", "发票号码：04521876",
                        "开票日期：2026年12月06日"], "cjk", 22, 40, 100, 44)
    out += table(d, [("项目", "数量", "金额"), ("办公用品", "12", "356.00"),
                     ("打印纸", "5", "125.50"), ("合计", "", "481.50")],
                 (40, 480, 760), "cjk", 22, 250, 44, right=(1, 2))
    out += lines_at(d, ["销售方：上海文具批发中心"], "cjk", 22, 40, 440, 44)
    seal = Image.new("RGBA", (150, 150), (0, 0, 0, 0))
    s = ImageDraw.Draw(seal)
    s.ellipse((4, 4, 146, 146), outline=(210, 30, 30, 170), width=5)
    s.text((27, 100), "发票专用章", font=font("cjk", 19), fill=(210, 30, 30, 170))
    im.paste(seal, (520, 380), seal)
    return im, out + ["发票专用章"]


@scene
def bilingual_street_sign():
    """A street sign: Chinese name large, the English name under it, an arrow and a
    distance."""
    im, d = canvas(760, 300, (20, 70, 150))
    d.rectangle((10, 10, 750, 290), outline=(255, 255, 255), width=4)
    d.text((60, 40), "南京东路", font=font("cjk-bold", 72), fill=(255, 255, 255))
    d.text((60, 150), "Nanjing Road (E)", font=font("lib-sans-bold", 40), fill=(255, 255, 255))
    d.text((60, 220), "外滩 The Bund 300 m", font=font("cjk", 30), fill=(255, 255, 255))
    d.polygon([(640, 70), (700, 110), (640, 150)], fill=(255, 255, 255))
    return im, ["南京东路", "Nanjing Road (E)", "外滩 The Bund 300 m"]


@scene
def product_barcode_label():
    """A product's label: name, weight, best-before date, a barcode with its EAN-13
    digits spaced under the bars."""
    rng = np.random.default_rng(381)
    im, d = canvas(620, 400, (255, 255, 255))
    out = lines_at(d, ["Organic Rolled Oats", "Net wt. 500 g", "Best before 03/2027",
                       "Lot L2611-04"], "lib-sans-italic", 24, 30, 24, 40)
    x = 120
    while x < 480:
        w = int(rng.integers(2, 6))
        d.rectangle((x, 200, x + w - 1, 320), fill=(0, 0, 0))
        x += w + int(rng.integers(2, 5))
    d.text((92, 330), "4 006381 333931", font=font("lib-mono", 30), fill=(0, 0, 0))
    return im, out + ["4 006381 333931"]


@scene
def week_planner():
    """A week's calendar page: a framed column a day, its date and appointment read
    together, day by day."""
    im, d = canvas(980, 300, (255, 255, 255))
    days = [("Mon 7", "Dentist 9:30"), ("Tue 8", "Gym"), ("Wed 9", "Team call 14:00"),
            ("Thu 10", ""), ("Fri 11", "Pay rent")]
    f, g = font("serif-cond-italic", 24), font("lib-sans", 20)
    for i, (day, what) in enumerate(days):
        x = 20 + i * 192
        d.rectangle((x, 20, x + 182, 280), outline=(120, 120, 120), width=1)
        d.text((x + 12, 32), day, font=f, fill=(180, 30, 30))
        if what:
            d.text((x + 12, 100), what, font=g, fill=(0, 0, 0))
    return im, [t for day in days for t in day if t]


def main(argv=None) -> None:
    compare(SCENES, "user38", "a user's own folder (round 38)", __file__, argv)


if __name__ == "__main__":
    main()
