"""OCR of things met on errands: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_errands.py [--only NAME ...]
        [--degrade thumbnail|phone]

Round 28's scenes, drawn here and used by no test: a shipping label with a barcode, a
menu with dotted leaders, a boarding pass, a road sign, a medicine box, a screenshot of
code, a subtitle over a video frame, mixed Chinese and English product packaging, a note in
a brush face, a parking ticket turned a quarter, shelf price tags side by side, a
pharmacy's opening hours shot at an angle, a small Wi-Fi card. Read and scored as
``bench_ocr_everyday.py`` reads its scenes (character accuracy, a run of spaces one,
spaces between CJK characters dropped, the order of lines counting); writes
``results/ocr-errands[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_probes import blobs, canvas, font  # noqa: E402

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


def _barcode(d, x, y, w, h, seed):
    rng = np.random.default_rng(seed)
    at = x
    while at < x + w:
        bar = int(rng.integers(1, 4))
        d.rectangle((at, y, at + bar - 1, y + h), fill=0)
        at += bar + int(rng.integers(1, 4))


@scene
def shipping_label():
    im, d = canvas(640, 420)
    d.rectangle((8, 8, 631, 411), outline=0, width=3)
    truths = []
    for y, (text, face, size) in zip((24, 50, 76, 102), [
            ("FROM: Nordic Parts GmbH", "sans-bold", 16),
            ("Hafenstrasse 12, 20457 Hamburg", "sans", 16),
            ("TO: Maria Lopez", "sans-bold", 22),
            ("48 Elm Street, Apt 5B", "sans", 22)]):
        d.text((24, y if size == 16 else y + 8 * (y > 70)), text, font=font(face, size), fill=0)
        truths.append(text)
    d.text((24, 146), "Springfield, IL 62704 USA", font=font("sans", 22), fill=0)
    truths.append("Springfield, IL 62704 USA")
    _barcode(d, 24, 200, 420, 110, 3)
    d.text((24, 318), "1Z 999 AA1 01 2345 6784", font=font("mono", 20), fill=0)
    truths.append("1Z 999 AA1 01 2345 6784")
    d.text((24, 362), "Weight: 2.4 kg   Ref: ORD-58213", font=font("sans", 16), fill=0)
    truths.append("Weight: 2.4 kg Ref: ORD-58213")
    return im, truths


@scene
def menu_dotted_leaders():
    im, d = canvas(560, 300, (252, 246, 232))
    d.text((190, 16), "BREAKFAST", font=font("serif", 26), fill=(60, 30, 10))
    truths = ["BREAKFAST"]
    f = font("serif", 18)
    for i, (item, price) in enumerate([("Scrambled eggs", "6.50"), ("Pancakes with syrup", "7.20"),
                                       ("Avocado toast", "8.90"), ("Fresh orange juice", "3.80"),
                                       ("Cappuccino", "3.10")]):
        y = 70 + 44 * i
        d.text((30, y), item, font=f, fill=(40, 20, 10))
        x = 30 + d.textlength(item, font=f) + 8
        pw = d.textlength(price, font=f)
        while x < 520 - pw - 10:
            d.text((x, y), ".", font=f, fill=(40, 20, 10))
            x += 8
        d.text((520 - pw, y), price, font=f, fill=(40, 20, 10))
        truths.append(f"{item} {price}")
    return im, truths


@scene
def boarding_pass():
    im, d = canvas(760, 300)
    d.rectangle((0, 0, 760, 54), fill=(0, 51, 102))
    d.text((20, 12), "BOARDING PASS", font=font("sans-bold", 26), fill=(255, 255, 255))
    truths = ["BOARDING PASS"]
    rows = [(("PASSENGER", 20), ("FLIGHT", 360), ("DATE", 560)),
            (("SMITH/JOHN MR", 20), ("LH 2034", 360), ("14MAR", 560)),
            (("FROM", 20), ("TO", 360), ("GATE", 560)),
            (("FRA Frankfurt", 20), ("MUC Munich", 360), ("B44", 560)),
            (("BOARDING 07:35", 20), ("SEAT 23C", 360), ("GROUP 3", 560))]
    for i, row in enumerate(rows):
        small = i in (0, 2)
        f = font("sans", 13) if small else font("sans-bold", 20)
        y = 70 + 44 * i - (6 if small else 0)
        for text, x in row:
            d.text((x, y), text, font=f, fill=(90, 90, 90) if small else 0)
        truths.append(" ".join(t for t, _ in row))
    return im, truths


@scene
def road_sign():
    im = blobs(11, (8, 6), (640, 420), 12)
    from PIL import ImageDraw

    d = ImageDraw.Draw(im)
    d.rounded_rectangle((70, 60, 570, 360), 18, fill=(0, 110, 60), outline=(255, 255, 255),
                        width=6)
    truths = []
    for i, (place, km) in enumerate([("Lyon", "42"), ("Grenoble", "118"), ("Geneve", "151")]):
        y = 90 + 88 * i
        d.text((110, y), place, font=font("sans-bold", 48), fill=(255, 255, 255))
        kw = d.textlength(km, font=font("sans-bold", 48))
        d.text((530 - kw, y), km, font=font("sans-bold", 48), fill=(255, 255, 255))
        truths.append(f"{place} {km}")
    return im, truths


@scene
def medicine_box():
    im, d = canvas(600, 340, (255, 255, 255))
    d.rectangle((0, 0, 600, 80), fill=(0, 120, 200))
    d.text((24, 14), "Ibuprofen 400 mg", font=font("sans-bold", 36), fill=(255, 255, 255))
    truths = ["Ibuprofen 400 mg"]
    for i, text in enumerate(["Film-coated tablets", "20 tablets",
                              "For oral use. Read the package leaflet before use.",
                              "Keep out of the sight and reach of children.",
                              "Lot: B2417   EXP: 09/2027"]):
        d.text((24, 100 + 40 * i), text, font=font("sans-bold" if i == 1 else "sans", 18),
               fill=(30, 30, 30))
        truths.append(" ".join(text.split()))
    return im, truths


@scene
def code_screenshot():
    im, d = canvas(620, 260, (30, 30, 36))
    lines = ["def total(items):",
             "    s = 0",
             "    for price, qty in items:",
             "        s += price * qty",
             "    return round(s, 2)",
             "",
             "print(total([(2.5, 4), (0.99, 3)]))"]
    colours = [(86, 156, 214), (212, 212, 212), (197, 134, 192), (212, 212, 212),
               (197, 134, 192), (0, 0, 0), (220, 220, 170)]
    for i, (t, c) in enumerate(zip(lines, colours)):
        d.text((16, 14 + 32 * i), t, font=font("mono", 18), fill=c)
    return im, [" ".join(t.split()) for t in lines if t]


@scene
def video_subtitle():
    im = blobs(5, (10, 6), (854, 480), 20)
    from PIL import ImageDraw

    d = ImageDraw.Draw(im)
    truths = []
    for i, t in enumerate(["I told you we'd make it", "before the last train left."]):
        f = font("sans-bold", 28)
        w = d.textlength(t, font=f)
        x, y = (854 - w) / 2, 380 + 38 * i
        d.text((x, y), t, font=f, fill=(255, 255, 255), stroke_width=2, stroke_fill=(0, 0, 0))
        truths.append(t)
    return im, truths


@scene
def chinese_english_packaging():
    im, d = canvas(560, 360, (250, 240, 220))
    d.text((30, 20), "有机燕麦片", font=font("cjk-bold", 40), fill=(120, 60, 0))
    d.text((30, 76), "Organic Rolled Oats", font=font("sans-bold", 24), fill=(120, 60, 0))
    truths = ["有机燕麦片", "Organic Rolled Oats"]
    for i, t in enumerate(["净含量: 500克 Net Wt: 500 g", "配料: 100% 燕麦 Ingredients: 100% oats",
                           "保质期: 12个月 Best before: see base",
                           "产地: 澳大利亚 Made in Australia"]):
        d.text((30, 140 + 44 * i), t, font=font("cjk", 18), fill=(40, 30, 20))
        truths.append(t)
    return im, truths


@scene
def brush_note():
    im, d = canvas(520, 260, (255, 253, 208))
    truths = []
    for i, t in enumerate(["明天下午三点开会", "记得带上合同和发票", "电话 138 0013 8000"]):
        d.text((30, 30 + 70 * i), t, font=font("brush", 34), fill=(20, 20, 120))
        truths.append(t)
    return im, truths


@scene
def parking_ticket_turned():
    im, d = canvas(360, 220, (255, 255, 255))
    truths = []
    for i, (t, face, size) in enumerate([("CITY PARKING", "sans-bold", 22),
                                         ("Zone 4 - Bay 117", "sans", 18),
                                         ("Valid until 16:45", "sans", 18),
                                         ("Paid EUR 3.50", "sans-bold", 18)]):
        d.text((20, 20 + 46 * i), t, font=font(face, size), fill=0)
        truths.append(t)
    return im.rotate(90, expand=True), truths


@scene
def shelf_tags_side_by_side():
    im, d = canvas(760, 260, (236, 236, 236))
    truths = []
    for k, (name, price, unit) in enumerate([("Tomatoes", "2.79", "per kg 2.79"),
                                             ("Greek yogurt", "1.49", "500 g 2.98/kg")]):
        x = 30 + 370 * k
        d.rectangle((x, 20, x + 340, 230), fill=(255, 255, 255), outline=(0, 90, 170), width=4)
        d.text((x + 16, 34), name, font=font("sans-bold", 22), fill=0)
        d.text((x + 16, 80), price, font=font("sans-bold", 72), fill=(0, 90, 170))
        d.text((x + 16, 190), unit, font=font("sans", 16), fill=0)
        truths += [name, price, unit]
    return im, truths


@scene
def opening_hours_at_an_angle():
    import cv2
    from PIL import Image

    im, d = canvas(480, 300, (255, 255, 255))
    truths = []
    for i, t in enumerate(["Opening hours", "Mon - Fri 8:00 - 18:30", "Sat 9:00 - 13:00",
                           "Sun closed"]):
        d.text((30, 30 + 60 * i), t, font=font("sans-bold" if not i else "sans", 24), fill=0)
        truths.append(t)
    a = np.asarray(im)
    src = np.float32([[0, 0], [480, 0], [480, 300], [0, 300]])
    dst = np.float32([[30, 20], [470, 0], [480, 300], [0, 270]])
    warped = cv2.warpPerspective(a, cv2.getPerspectiveTransform(src, dst), (500, 310),
                                 borderValue=(200, 200, 200))
    return Image.fromarray(warped), truths


@scene
def small_wifi_card():
    im, d = canvas(240, 100, (255, 255, 255))
    truths = []
    for i, t in enumerate(["WiFi: Cafe_Guest", "Password: latte2024!"]):
        d.text((10, 18 + 32 * i), t, font=font("sans", 13), fill=0)
        truths.append(t)
    return im, truths


def main(argv=None) -> None:
    from bench_ocr_everyday import compare

    compare(SCENES, "errands", "things met on errands", __file__, argv)


if __name__ == "__main__":
    main()
