"""OCR of a user's own folder, round 47: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user47.py [--only NAME ...]
        [--degrade thumbnail|phone] [--skiff-only]

Kinds no earlier benchmark draws, each with its truth in reading order (lines as the
renderer set them): a restaurant menu (Liberation Serif: dishes in two columns, each with a
dotted leader to its price, read a column at a time; the leaders are no text a reader
keeps); a medicine box's small print (Liberation Sans 13 px: dosage units "mg/mL", "µg", a
storage range in °C); a spreadsheet screenshot (Liberation Sans 14 px in a grid of rules:
column letters, row numbers, a header row, negative amounts in parentheses, a total); a
note in a slanted, unsteady hand (DejaVu Sans Oblique, each letter on its own baseline and
turned a little, blue ink on lined paper); a bilingual road sign (Noto Sans CJK, white on
green: Chinese place names over English ones, distances); a utility meter (a photo's dark
face with a white-on-black register of digits read as one number, "kWh", a serial
number). RapidOCR as its users run it (``limit_type=max, 960``, its own dictionary).
Scored as ``bench_ocr_user41.py`` scores (``user_scenes.score_scenes``); writes
``results/ocr-user47[-KIND].md``.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_probes import FONTS, canvas, font, normal  # noqa: E402
from bench_ocr_user40 import signs  # noqa: E402
from bench_ocr_user44 import _right  # noqa: E402

FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("lib-serif-bold", "truetype/liberation2/LiberationSerif-Bold.ttf")
FONTS.setdefault("oblique", "truetype/dejavu/DejaVuSans-Oblique.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


def _leader(d, key, price, f, x0, x1, y, fill=(0, 0, 0)):
    """``key`` at ``x0``, ``price`` flush right at ``x1``, a row of dots between them."""
    d.text((x0, y), key, font=f, fill=fill)
    _right(d, price, f, x1, y, fill)
    a, b = x0 + d.textlength(key, font=f) + 8, x1 - d.textlength(price, font=f) - 8
    step = d.textlength(".", font=f) * 1.6
    for k in range(int((b - a) // step)):
        d.text((a + k * step, y), ".", font=f, fill=fill)


@scene
def restaurant_menu():
    """A restaurant menu: a title, two columns of dishes, each with a dotted leader to its
    price (read a column at a time, the leaders left out), a footnote."""
    im, d = canvas(900, 430, (252, 248, 238))
    d.text((330, 18), "Trattoria Lucia", font=font("lib-serif-bold", 34), fill=(90, 20, 20))
    out = ["Trattoria Lucia"]
    f, fh = font("lib-serif", 19), font("lib-serif-bold", 22)
    d.text((40, 84), "Starters", font=fh, fill=0)
    d.text((480, 84), "Mains", font=fh, fill=0)
    left = [("Minestrone", "6.50"), ("Bruschetta al pomodoro", "7.20"),
            ("Carpaccio di manzo", "12.90"), ("Insalata caprese", "9.80")]
    right = [("Spaghetti carbonara", "13.50"), ("Risotto ai funghi", "14.80"),
             ("Saltimbocca alla romana", "19.90"), ("Branzino al forno", "22.40")]
    for i, ((k1, v1), (k2, v2)) in enumerate(zip(left, right, strict=True)):
        y = 130 + i * 50
        _leader(d, k1, v1, f, 40, 420, y)
        _leader(d, k2, v2, f, 480, 860, y)
    # read as a reader reads a menu: a column at a time
    out += ["Starters", *(f"{k} {v}" for k, v in left), "Mains",
            *(f"{k} {v}" for k, v in right)]
    d.text((40, 370), "Prices in EUR incl. VAT. Bread and service 2.50 per person.",
           font=font("lib-serif", 16), fill=(80, 80, 80))
    out.append("Prices in EUR incl. VAT. Bread and service 2.50 per person.")
    return im, out


@scene
def medicine_box():
    """A medicine box's side panel in small print: the name, strengths with mg/mL and µg,
    dosage, storage in °C, a batch and expiry."""
    im, d = canvas(620, 330, (255, 255, 255))
    d.rectangle((0, 0, 620, 46), fill=(0, 110, 160))
    d.text((20, 10), "Amoxicillin 250 mg/5 mL", font=font("lib-sans-bold", 22),
           fill=(255, 255, 255))
    out = ["Amoxicillin 250 mg/5 mL"]
    f = font("lib-sans", 13)
    rows = ["Powder for oral suspension. 100 mL after reconstitution.",
            "Each 5 mL contains 250 mg amoxicillin (as trihydrate).",
            "Children: 20 mg/kg per day in 3 divided doses.",
            "Contains 2.5 mg/mL sodium benzoate and 12 µg/mL aspartame.",
            "Store the powder below 25 °C. After mixing store at 2-8 °C",
            "and use within 14 days. Shake well before use.",
            "Read the package leaflet before use."]
    for i, t in enumerate(rows):
        d.text((20, 62 + i * 26), t, font=f, fill=0)
    out += rows
    d.text((20, 262), "Lot 6K21B  EXP 09/2028  PZN 10482719", font=font("lib-sans-bold", 13),
           fill=0)
    out.append("Lot 6K21B EXP 09/2028 PZN 10482719")
    d.text((20, 292), "Rx only", font=font("lib-sans-bold", 16), fill=(170, 0, 0))
    out.append("Rx only")
    return im, out


@scene
def spreadsheet():
    """A spreadsheet screenshot: column letters, row numbers, gridlines, a header row,
    amounts with negative ones in parentheses, a total in bold."""
    im, d = canvas(760, 330, (255, 255, 255))
    f, fb = font("lib-sans", 14), font("lib-sans-bold", 14)
    cols = [0, 40, 250, 390, 530, 700]
    d.rectangle((0, 0, 760, 24), fill=(235, 235, 235))
    d.rectangle((0, 0, 40, 330), fill=(235, 235, 235))
    for k, letter in enumerate("ABCD"):
        x0, x1 = cols[k + 1], cols[k + 2]
        d.text(((x0 + x1) / 2 - 4, 4), letter, font=f, fill=(90, 90, 90))
    out = ["A B C D"]  # the sheet's column letters and row numbers are on the screen too
    rows = [("Account", "Q1", "Q2", "Q3"),
            ("Revenue", "48,200.00", "51,730.50", "49,115.25"),
            ("Cost of sales", "(21,400.00)", "(22,980.75)", "(21,760.10)"),
            ("Marketing", "(3,250.00)", "(4,100.00)", "(2,875.40)"),
            ("Refunds", "(615.20)", "(1,042.00)", "(388.90)"),
            ("Other income", "1,120.00", "0.00", "945.60"),
            ("Net", "24,054.80", "23,607.75", "25,036.45")]
    for i, row in enumerate(rows):
        y0 = 24 + i * 40
        d.text((16, y0 + 12), str(i + 1), font=f, fill=(90, 90, 90))
        bold = i in (0, len(rows) - 1)
        for k, t in enumerate(row):
            fk = fb if bold else f
            if k == 0:
                d.text((cols[1] + 8, y0 + 12), t, font=fk, fill=0)
            else:
                _right(d, t, fk, cols[k + 2] - 10, y0 + 12,
                       (200, 0, 0) if t.startswith("(") else (0, 0, 0))
        out.append(f"{i + 1} " + " ".join(row))
    for x in cols[1:]:
        d.line((x, 0, x, 24 + len(rows) * 40), fill=(200, 200, 200))
    for i in range(len(rows) + 1):
        d.line((0, 24 + i * 40, 760, 24 + i * 40), fill=(200, 200, 200))
    return im, out


def _hand(im, text, path, px, x, y, rng, ink=(20, 40, 150)):
    """``text`` drawn a letter at a time in a slanted face, each letter a little off the
    baseline and turned up to 4 degrees (a hand, not a printer)."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(path, px)
    for ch in text:
        w = face.getlength(ch)
        if ch != " ":
            tile = Image.new("L", (int(w) + px, 2 * px), 0)
            ImageDraw.Draw(tile).text((px // 2, px // 3), ch, font=face, fill=255)
            tile = tile.rotate(rng.uniform(-4, 4), Image.BICUBIC)
            im.paste(Image.new("RGB", tile.size, ink),
                     (int(x - px // 2), int(y - px // 3 + rng.uniform(-1.5, 1.5))), tile)
        x += w * rng.uniform(0.97, 1.06)
    return x


@scene
def handwritten_note():
    """A note on lined paper in a slanted, unsteady hand (DejaVu Sans Oblique, each letter
    drawn on its own, blue ink)."""
    im, d = canvas(640, 360, (250, 250, 240))
    for k in range(8):
        d.line((0, 62 + k * 40, 640, 62 + k * 40), fill=(180, 200, 230))
    d.line((52, 0, 52, 360), fill=(230, 160, 160))
    rng = random.Random(47)
    path = f"/usr/share/fonts/{FONTS['oblique']}"
    lines = ["Tuesday 8 Dec", "Call the plumber before 10", "Pick up Mia at 15:30",
             "Buy milk, eggs, 2 lemons", "Pay rent (850) by Friday",
             "Dentist moved to 14 Jan", "Water the plants!"]
    for k, t in enumerate(lines):
        _hand(im, t, path, 24, 66, 34 + k * 40 + (4 if k else 0), rng)
    return im, lines


@scene
def road_sign():
    """A bilingual road sign: white on green, Chinese place names over English ones, the
    distances beside them, a route number on a blue plate."""
    im, d = canvas(760, 420, (0, 110, 70))
    d.rectangle((8, 8, 752, 412), outline=(255, 255, 255), width=4)
    out = []
    fz, fe, fd = font("cjk-bold", 40), font("lib-sans-bold", 24), font("lib-sans-bold", 36)
    rows = [("机场", "Airport", "12 km"), ("市中心", "City Centre", "5 km"),
            ("火车南站", "South Railway Station", "8 km")]
    for i, (zh, en, km) in enumerate(rows):
        y = 30 + i * 120
        d.text((40, y), zh, font=fz, fill=(255, 255, 255))
        d.text((40, y + 54), en, font=fe, fill=(255, 255, 255))
        _right(d, km, fd, 720, y + 24, (255, 255, 255))
        out += [f"{zh} {km}", en]
    return im, out


@scene
def utility_meter():
    """A utility meter as a photo of its face: a maker's line, a register of six digits
    white on black with the last one red, "kWh", a serial number and a rating."""
    im, d = canvas(640, 420, (196, 198, 192))
    d.rounded_rectangle((30, 30, 610, 390), radius=24, fill=(236, 236, 230),
                        outline=(90, 90, 90), width=3)
    d.text((60, 52), "ELSTRA  Type D3-1", font=font("lib-sans-bold", 22), fill=(40, 40, 40))
    out = ["ELSTRA Type D3-1"]
    digits, fr = "045273", font("lib-sans-bold", 46)
    for k, ch in enumerate(digits):
        x = 120 + k * 56
        d.rectangle((x, 110, x + 48, 176), fill=(170, 20, 20) if k == 5 else (20, 20, 20))
        w = d.textlength(ch, font=fr)
        d.text((x + (48 - w) / 2, 116), ch, font=fr, fill=(255, 255, 255))
    d.text((470, 128), "kWh", font=font("lib-sans-bold", 30), fill=(20, 20, 20))
    out.append(f"{digits} kWh")
    f = font("lib-sans", 18)
    rows = ["Nr. 1 EMH 0074 8823", "230 V  10(60) A  50 Hz", "1000 imp/kWh  Class B"]
    for i, t in enumerate(rows):
        d.text((60, 214 + i * 42), t, font=f, fill=(30, 30, 30))
        out.append(" ".join(t.split()))
    d.text((60, 344), "Property of Stadtwerke Kiel", font=font("lib-sans", 15),
           fill=(80, 80, 80))
    out.append("Property of Stadtwerke Kiel")
    # a photo's light falling off towards one corner
    import numpy as np
    from PIL import Image

    a = np.asarray(im).astype(np.float32)
    yy, xx = np.mgrid[0:a.shape[0], 0:a.shape[1]]
    shade = 1.0 - 0.22 * np.hypot(xx / a.shape[1], yy / a.shape[0]) / math.sqrt(2)
    im = Image.fromarray(np.clip(a * shade[..., None], 0, 255).astype(np.uint8))
    return im, out


def main(argv=None) -> None:
    from user_scenes import scene_main

    scene_main(47, __file__, __doc__, SCENES, lambda t: normal(signs(t)), argv)


if __name__ == "__main__":
    main()
