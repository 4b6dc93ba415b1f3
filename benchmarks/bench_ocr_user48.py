"""OCR of a user's own folder, round 48: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user48.py [--only NAME ...]
        [--degrade thumbnail|phone] [--skiff-only]

Kinds no earlier benchmark draws, each with its truth in reading order (lines as the
renderer set them), in faces the other benchmarks seldom use: a boarding pass (DejaVu Sans
Condensed: labels over values in a grid of gate, boarding time, seat and group, a
passenger's name written SURNAME/GIVEN); an invoice with a VAT table and an IBAN (DejaVu
Serif Condensed: net, rate, VAT and gross per rate, the IBAN in groups of four); a
nutrition-facts label (DejaVu Sans Condensed Bold between black rules: grams, milligrams,
micrograms and per cent daily values flush right); a faded thermal parking ticket
(Liberation Mono in grey that fades across the slip); a whiteboard photo (DejaVu Sans
Bold in blue, red and green marker under uneven light with a glare patch); a product label
with an EAN-13 barcode and its digits under it (DejaVu Sans Mono); a book page whose outer
edge curls away (DejaVu Serif: the lines bend down and darken towards the edge, a running
head and a page number); a shop receipt in Chinese and English (WenQuanYi Zen Hei:
item names in both scripts, quantities, prices, a total, the payment). RapidOCR as its
users run it (``limit_type=max, 960``, its own dictionary). Scored as
``bench_ocr_user41.py`` scores (``user_scenes.score_scenes``); writes
``results/ocr-user48[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_probes import FONTS, canvas, font, normal  # noqa: E402
from bench_ocr_user40 import signs  # noqa: E402
from bench_ocr_user44 import _right  # noqa: E402

FONTS.setdefault("cond", "truetype/dejavu/DejaVuSansCondensed.ttf")
FONTS.setdefault("cond-bold", "truetype/dejavu/DejaVuSansCondensed-Bold.ttf")
FONTS.setdefault("serif-cond", "truetype/dejavu/DejaVuSerifCondensed.ttf")
FONTS.setdefault("serif-cond-bold", "truetype/dejavu/DejaVuSerifCondensed-Bold.ttf")
FONTS.setdefault("lib-mono", "truetype/liberation2/LiberationMono-Regular.ttf")
FONTS.setdefault("lib-mono-bold", "truetype/liberation2/LiberationMono-Bold.ttf")
FONTS.setdefault("mono-bold", "truetype/dejavu/DejaVuSansMono-Bold.ttf")
FONTS.setdefault("sans-bold", "truetype/dejavu/DejaVuSans-Bold.ttf")
FONTS.setdefault("serif-bold", "truetype/dejavu/DejaVuSerif-Bold.ttf")
FONTS.setdefault("serif-italic", "truetype/dejavu/DejaVuSerif-Italic.ttf")
FONTS.setdefault("zenhei", "truetype/wqy/wqy-zenhei.ttc")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


def _shade(im, fn):
    """``im`` with each pixel scaled by ``fn(yy, xx)`` (a light falling off, a fade)."""
    from PIL import Image

    a = np.asarray(im).astype(np.float32)
    yy, xx = np.mgrid[0:a.shape[0], 0:a.shape[1]].astype(np.float32)
    return Image.fromarray(np.clip(fn(a, yy, xx), 0, 255).astype(np.uint8))


@scene
def boarding_pass():
    """A boarding pass: the airline's band, labels in small grey capitals over their values,
    a grid of gate, boarding time, seat and group in large bold, a sequence number."""
    im, d = canvas(820, 380, (255, 255, 255))
    d.rectangle((0, 0, 820, 56), fill=(10, 40, 100))
    d.text((24, 12), "NORDAIR", font=font("cond-bold", 28), fill=(255, 255, 255))
    _right(d, "BOARDING PASS", font("cond-bold", 22), 796, 17, (255, 255, 255))
    out = ["NORDAIR BOARDING PASS"]
    fl, fv, fb = font("cond", 13), font("cond-bold", 20), font("cond-bold", 34)
    grid = [(76, fv, [("PASSENGER", "NOVAK/JANA MS"), ("FLIGHT", "NR 2817"),
                      ("DATE", "14 JAN 2027")]),
            (150, fv, [("FROM", "Oslo OSL"), ("TO", "Lisbon LIS"), ("CLASS", "Economy")]),
            (236, fb, [("GATE", "B42"), ("BOARDING", "07:35"), ("SEAT", "23A"),
                       ("GROUP", "3")])]
    for y, fv_, cells in grid:
        xs = [24, 320, 560] if len(cells) == 3 else [24, 220, 440, 640]
        for x, (label, value) in zip(xs, cells, strict=True):
            d.text((x, y), label, font=fl, fill=(110, 110, 110))
            d.text((x, y + 20), value, font=fv_, fill=(0, 0, 0))
        out += [" ".join(c[0] for c in cells), " ".join(c[1] for c in cells)]
    d.line((0, 318, 820, 318), fill=(180, 180, 180), width=2)
    d.text((24, 334), "Gate closes 20 minutes before departure.  SEQ 088", font=fl,
           fill=(60, 60, 60))
    out.append("Gate closes 20 minutes before departure. SEQ 088")
    return im, out


@scene
def vat_invoice():
    """An invoice's foot: items with a VAT code, a VAT table by rate (net, VAT, gross), a
    total, the IBAN and BIC to pay to."""
    im, d = canvas(820, 470, (255, 255, 255))
    f, fb = font("serif-cond", 15), font("serif-cond-bold", 15)
    d.text((30, 20), "Invoice 2026-0417", font=font("serif-cond-bold", 24), fill=0)
    _right(d, "Date 03.12.2026", f, 790, 28)
    out = ["Invoice 2026-0417 Date 03.12.2026"]
    cols = [30, 470, 560, 790]
    head = ("Description", "Qty", "VAT", "Amount")
    rows = [("Printer paper A4, 80 g/m²", "10", "A", "54.90"),
            ("Toner cartridge TN-2420", "2", "A", "139.80"),
            ("Coffee beans 1 kg", "3", "B", "41.70")]
    y = 74
    for k, row in enumerate([head, *rows]):
        fk = fb if k == 0 else f
        d.text((cols[0], y), row[0], font=fk, fill=0)
        d.text((cols[1], y), row[1], font=fk, fill=0)
        d.text((cols[2], y), row[2], font=fk, fill=0)
        _right(d, row[3], fk, cols[3], y)
        out.append(" ".join(row))
        if k == 0:
            d.line((30, y + 24, 790, y + 24), fill=(0, 0, 0))
        y += 34
    y += 16
    d.line((30, y - 8, 790, y - 8), fill=(0, 0, 0))
    vat = [("VAT", "Rate", "Net", "VAT", "Gross"), ("A", "19%", "163.03", "30.97", "194.00"),
           ("B", "7%", "38.97", "2.73", "41.70")]
    vcols = [330, 400, 520, 640, 790]
    for k, row in enumerate(vat):
        fk = fb if k == 0 else f
        for x, t in zip(vcols, row, strict=True):
            _right(d, t, fk, x, y)
        out.append(" ".join(row))
        y += 30
    d.text((470, y + 8), "Total EUR", font=font("serif-cond-bold", 18), fill=0)
    _right(d, "235.70", font("serif-cond-bold", 18), 790, y + 8)
    out.append("Total EUR 235.70")
    y += 60
    for t in ["Please pay within 14 days to:", "IBAN DE89 3704 0044 0532 0130 00",
              "BIC COBADEFFXXX  Commerzbank Köln"]:
        d.text((30, y), t, font=f, fill=0)
        out.append(" ".join(t.split()))
        y += 26
    return im, out


@scene
def nutrition_facts():
    """A nutrition-facts label: heavy rules, a serving size, calories in large bold, the
    nutrients with their amounts in g, mg and mcg and their % daily values flush right."""
    im, d = canvas(420, 560, (255, 255, 255))
    d.rectangle((10, 10, 410, 550), outline=(0, 0, 0), width=2)
    d.text((20, 16), "Nutrition Facts", font=font("cond-bold", 36), fill=0)
    out = ["Nutrition Facts"]
    f, fb = font("cond", 15), font("cond-bold", 15)
    d.text((20, 62), "8 servings per container", font=f, fill=0)
    d.text((20, 84), "Serving size", font=fb, fill=0)
    _right(d, "2/3 cup (55g)", fb, 400, 84)
    out += ["8 servings per container", "Serving size 2/3 cup (55g)"]
    d.rectangle((20, 108, 400, 118), fill=0)
    d.text((20, 126), "Calories", font=font("cond-bold", 28), fill=0)
    _right(d, "230", font("cond-bold", 36), 400, 120)
    out.append("Calories 230")
    d.rectangle((20, 168, 400, 173), fill=0)
    _right(d, "% Daily Value*", fb, 400, 178)
    out.append("% Daily Value*")
    rows = [("Total Fat 8g", "10%", True, 0), ("Saturated Fat 1g", "5%", False, 16),
            ("Trans Fat 0g", "", False, 16), ("Cholesterol 0mg", "0%", True, 0),
            ("Sodium 160mg", "7%", True, 0), ("Total Carbohydrate 37g", "13%", True, 0),
            ("Dietary Fiber 4g", "14%", False, 16), ("Total Sugars 12g", "", False, 16),
            ("Protein 3g", "", True, 0)]
    y = 204
    for name, dv, bold, indent in rows:
        d.line((20 + indent, y - 4, 400, y - 4), fill=0)
        key, amount = name.rsplit(" ", 1)
        d.text((20 + indent, y), key, font=fb if bold else f, fill=0)
        d.text((20 + indent + d.textlength(key + " ", font=fb if bold else f), y), amount,
               font=f, fill=0)
        if dv:
            _right(d, dv, fb, 400, y)
        out.append(f"{name} {dv}".strip())
        y += 26
    d.rectangle((20, y - 4, 400, y + 5), fill=0)
    y += 12
    for name, dv in [("Vitamin D 2mcg", "10%"), ("Calcium 260mg", "20%"),
                     ("Iron 8mg", "45%")]:
        d.text((20, y), name, font=f, fill=0)
        _right(d, dv, f, 400, y)
        out.append(f"{name} {dv}")
        y += 24
    return im, out


@scene
def parking_ticket():
    """A thermal parking ticket: monospaced grey print on a warm slip that fades from one
    side to the other, an entry and exit time, a duration, an amount, a masked card."""
    im, d = canvas(420, 470, (246, 243, 236))
    f, fb = font("lib-mono", 17), font("lib-mono-bold", 22)
    d.text((86, 20), "CITY PARKING P3", font=fb, fill=(60, 60, 60))
    out = ["CITY PARKING P3"]
    rows = ["Ticket       004821", "Entry  07.12.26 08:14", "Exit   07.12.26 11:52",
            "Duration   3h 38min", "Rate   EUR 2.00/h", "Amount    EUR 7.50",
            "Paid   VISA ****4417", "Auth   A93F21"]
    for i, t in enumerate(rows):
        d.text((30, 72 + i * 36), t, font=f, fill=(70, 70, 70))
        out.append(" ".join(t.split()))
    d.text((120, 382), "Thank you!", font=fb, fill=(70, 70, 70))
    out.append("Thank you!")
    d.text((96, 424), "Keep ticket visible", font=font("lib-mono", 15), fill=(90, 90, 90))
    out.append("Keep ticket visible")
    # the thermal print fades: ink lightens towards the right and bottom, unevenly
    ground = np.array([246, 243, 236], np.float32)
    fade = lambda a, yy, xx: ground - (ground - a) * (  # noqa: E731
        1.0 - 0.6 * (xx / a.shape[1]) * (0.6 + 0.4 * yy / a.shape[0]))[..., None]
    return _shade(im, fade), out


@scene
def whiteboard():
    """A whiteboard photo: marker in blue, red and green, a title underlined, an arrow
    written "->", under light brighter on the left with a glare patch."""
    im, d = canvas(880, 460, (238, 240, 236))
    fb, f = font("sans-bold", 34), font("sans-bold", 24)
    d.text((40, 30), "Sprint 14 review", font=fb, fill=(20, 50, 160))
    d.line((40, 78, 360, 80), fill=(20, 50, 160), width=4)
    out = ["Sprint 14 review"]
    rows = [("Login time 2.4 s -> 0.9 s", (20, 50, 160)),
            ("Crash rate 1.8% -> 0.3%", (20, 50, 160)),
            ("Open bugs: 37 (12 critical)", (190, 30, 30)),
            ("Next: offline mode, iPad", (20, 130, 60)),
            ("Demo Fri 15:00 room 4B", (20, 130, 60))]
    for i, (t, ink) in enumerate(rows):
        d.text((60, 110 + i * 62), t, font=f, fill=ink)
        out.append(t)

    def light(a, yy, xx):
        h, w = a.shape[:2]
        gain = 0.78 + 0.25 * (1.0 - xx / w) - 0.08 * yy / h
        glare = 60.0 * np.exp(-(((xx - 0.72 * w) / 90) ** 2 + ((yy - 0.3 * h) / 60) ** 2))
        return a * gain[..., None] + glare[..., None]

    return _shade(im, light), out


def _ean13(digits: str) -> str:
    """The 95 modules (``1`` bar, ``0`` space) of the EAN-13 code for 13 ``digits``."""
    L = ["0001101", "0011001", "0010011", "0111101", "0100011", "0110001", "0101111",
         "0111011", "0110111", "0001011"]
    R = [c.translate(str.maketrans("01", "10")) for c in L]
    G = [r[::-1] for r in R]
    parity = ["LLLLLL", "LLGLGG", "LLGGLG", "LLGGGL", "LGLLGG", "LGGLLG", "LGGGLL", "LGLGLG",
              "LGLGGL", "LGGLGL"][int(digits[0])]
    left = "".join((L if p == "L" else G)[int(c)] for p, c in zip(parity, digits[1:7],
                                                                   strict=True))
    return "101" + left + "01010" + "".join(R[int(c)] for c in digits[7:]) + "101"


@scene
def product_label():
    """A product label: a name, a volume, ingredients, a best-before date, an EAN-13
    barcode (bars drawn from the digits) with its digits under it."""
    im, d = canvas(560, 420, (250, 250, 246))
    d.text((24, 18), "Oat Drink Barista", font=font("sans-bold", 28), fill=(30, 60, 30))
    out = ["Oat Drink Barista"]
    f = font("cond", 15)
    rows = ["1 L  Organic  Vegan", "Ingredients: water, oats 10%, rapeseed oil,",
            "calcium carbonate, sea salt, vitamin D2.", "Best before: 12.03.2027",
            "Shake before use. Once opened keep at 4 °C."]
    for i, t in enumerate(rows):
        d.text((24, 64 + i * 26), t, font=f, fill=(20, 20, 20))
        out.append(" ".join(t.split()))
    code = "4006381333931"
    mods, x0, m = _ean13(code), 60, 3
    for k, b in enumerate(mods):
        if b == "1":
            long = k < 3 or 45 <= k < 50 or k >= 92
            d.rectangle((x0 + k * m, 220, x0 + k * m + m - 1, 340 + (12 if long else 0)),
                        fill=0)
    fm = font("mono-bold", 22)
    d.text((x0 - 22, 340), code[0], font=fm, fill=0)
    d.text((x0 + 3 * m + 8, 340), code[1:7], font=fm, fill=0)
    d.text((x0 + 50 * m + 8, 340), code[7:], font=fm, fill=0)
    out.append(f"{code[0]} {code[1:7]} {code[7:]}")
    return im, out


@scene
def book_page_curl():
    """A book page photographed open: a running head, a paragraph in DejaVu Serif, a page
    number; towards the outer edge the page curls, bending each line down and darkening."""
    im, d = canvas(760, 520, (248, 245, 236))
    fi = font("serif-italic", 14)
    d.text((300, 24), "The Long Winter", font=fi, fill=(80, 80, 80))
    out = ["The Long Winter"]
    f = font("serif-cond", 18)
    rows = ["The snow came early that year, and by the", "second week of October the road to",
            "the village was closed. Anna counted the", "sacks of flour twice: fourteen,",
            "enough for four months if they were", "careful. Her brother said nothing; he",
            "split wood until his hands bled and", "then split some more. On the night of",
            "the first storm they heard the wolves."]
    for i, t in enumerate(rows):
        d.text((60, 70 + i * 44), t, font=f, fill=(25, 25, 25))
        out.append(t)
    d.text((370, 478), "217", font=font("serif-cond", 15), fill=(60, 60, 60))
    out.append("217")
    from PIL import Image

    a = np.asarray(im).astype(np.float32)
    h, w = a.shape[:2]
    x0 = 0.62 * w
    s = np.clip((np.arange(w) - x0) / (w - x0), 0, None)
    shift = 26.0 * s ** 2 * (0.4 + 0.6 * np.linspace(0, 1, h))[:, None]  # rows bend down
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    src = np.clip(yy - shift, 0, h - 1)
    y0 = np.floor(src).astype(int)
    y1 = np.minimum(y0 + 1, h - 1)
    t = (src - y0)[..., None]
    xi = xx.astype(int)
    out_a = a[y0, xi] * (1 - t) + a[y1, xi] * t
    out_a *= (1.0 - 0.35 * s ** 1.5)[None, :, None]  # the curl turns away from the light
    return Image.fromarray(np.clip(out_a, 0, 255).astype(np.uint8)), out


@scene
def cn_en_receipt():
    """A supermarket receipt in Chinese and English (WenQuanYi Zen Hei): the shop's name
    in both, items named in both scripts with a quantity and an amount, a total, WeChat Pay."""
    im, d = canvas(520, 500, (255, 255, 255))
    fz, f = font("zenhei", 26), font("zenhei", 17)
    d.text((150, 16), "华联超市", font=fz, fill=0)
    d.text((150, 50), "HUALIAN MARKET", font=f, fill=0)
    out = ["华联超市", "HUALIAN MARKET"]
    d.text((24, 86), "收银员 Cashier 018    2026-12-05 18:42", font=f, fill=0)
    out.append("收银员 Cashier 018 2026-12-05 18:42")
    d.line((24, 116, 496, 116), fill=0)
    rows = [("牛奶 Milk", "2 x 6.50", "13.00"), ("苹果 Apple", "1.2kg", "10.80"),
            ("面包 Bread", "1 x 8.90", "8.90"), ("鸡蛋 Eggs (10)", "1 x 12.50", "12.50"),
            ("酸奶 Yogurt", "4 x 3.20", "12.80")]
    for i, (name, qty, amt) in enumerate(rows):
        y = 128 + i * 36
        d.text((24, y), name, font=f, fill=0)
        d.text((260, y), qty, font=f, fill=0)
        _right(d, amt, f, 496, y)
        out.append(f"{name} {qty} {amt}")
    y = 128 + len(rows) * 36 + 8
    d.line((24, y, 496, y), fill=0)
    for t, v in [("合计 Total", "58.00"), ("微信支付 WeChat Pay", "58.00"),
                 ("找零 Change", "0.00")]:
        y += 14
        d.text((24, y), t, font=fz if t.startswith("合计") else f, fill=0)
        _right(d, v, fz if t.startswith("合计") else f, 496, y)
        out.append(f"{t} {v}")
        y += 24
    d.text((120, y + 20), "谢谢惠顾 Thank you", font=f, fill=0)
    out.append("谢谢惠顾 Thank you")
    return im, out


def main(argv=None) -> None:
    from user_scenes import scene_main

    scene_main(48, __file__, __doc__, SCENES, lambda t: normal(signs(t)), argv)


if __name__ == "__main__":
    main()
