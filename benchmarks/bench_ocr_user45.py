"""OCR of a user's own folder, round 45: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user45.py [--only NAME ...]
        [--degrade thumbnail|phone] [--skiff-only]

Kinds no earlier benchmark draws, each with its truth in reading order (lines as the
renderer set them): a pharmacy label (Liberation Sans, dosage units "mg", "mL", "µg", a
Chinese line "×2/日" in Noto Sans CJK SC); a bank statement (Liberation Serif: a date, a
description, debits in parentheses, a running balance flush right); a restaurant bill
(DejaVu Sans Mono: items, a service percentage, a tip line, the total); a shipping label
(Liberation Sans Bold and DejaVu Sans Condensed: addresses, a drawn barcode, its tracking
number under it); a Chinese utility bill (WenQuanYi Zen Hei: numbers with "元" and "度",
readings, a unit price); a bus timetable (DejaVu Sans Condensed: stops down the side,
departure times in columns). RapidOCR as its users run it (``limit_type=max, 960``, its own
dictionary). Scored as ``bench_ocr_user41.py`` scores (``user_scenes.score_scenes``);
writes ``results/ocr-user45[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_probes import FONTS, canvas, font, normal  # noqa: E402
from bench_ocr_user40 import signs  # noqa: E402
from bench_ocr_user44 import _right, sc  # noqa: E402

FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("lib-serif", "truetype/liberation2/LiberationSerif-Regular.ttf")
FONTS.setdefault("lib-serif-bold", "truetype/liberation2/LiberationSerif-Bold.ttf")
FONTS.setdefault("mono-bold", "truetype/dejavu/DejaVuSansMono-Bold.ttf")
FONTS.setdefault("condensed-bold", "truetype/dejavu/DejaVuSansCondensed-Bold.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


@scene
def pharmacy_label():
    """A pharmacy label: the shop, the patient, three medicines with their doses in mg, mL
    and µg, and the Chinese instruction "×2/日"."""
    im, d = canvas(760, 460, (255, 255, 250))
    d.text((30, 20), "CITY PHARMACY", font=font("lib-sans-bold", 28), fill=(0, 70, 140))
    d.text((470, 28), "Rx 4471203", font=font("lib-sans", 20), fill=0)
    out = ["CITY PHARMACY Rx 4471203"]
    d.line((30, 66, 730, 66), fill=(0, 70, 140), width=2)
    f = font("lib-sans", 22)
    rows = ["Patient: Anna Weber", "Amoxicillin 500 mg capsules",
            "Paracetamol syrup 120 mg/5 mL", "Vitamin D3 25 µg daily",
            "Take 10 mL every 6 hours"]
    for i, t in enumerate(rows):
        d.text((30, 84 + i * 44), t, font=f, fill=0)
    out += rows
    d.text((30, 318), "用法：口服 1片×2/日", font=sc(24), fill=0)
    out.append("用法：口服 1片×2/日")
    d.text((30, 372), "Qty: 20  Refills: 2", font=font("lib-sans", 20), fill=(60, 60, 60))
    out.append("Qty: 20 Refills: 2")
    return im, out


@scene
def bank_statement():
    """A bank statement: a header row, dated rows with debits in parentheses and a running
    balance flush right, the closing balance."""
    im, d = canvas(900, 470)
    d.text((40, 22), "Statement 01 Nov - 30 Nov 2026", font=font("lib-serif-bold", 26), fill=0)
    out = ["Statement 01 Nov - 30 Nov 2026"]
    f, fb = font("lib-serif", 20), font("lib-serif-bold", 20)
    y = 86
    d.text((40, y), "Date", font=fb, fill=0)
    d.text((150, y), "Description", font=fb, fill=0)
    _right(d, "Amount", fb, 690, y)
    _right(d, "Balance", fb, 860, y)
    out.append("Date Description Amount Balance")
    d.line((40, y + 30, 860, y + 30), fill=0, width=1)
    rows = [("02 Nov", "Opening balance", "", "2,310.45"),
            ("04 Nov", "Salary ACME GmbH", "3,250.00", "5,560.45"),
            ("07 Nov", "Rent November", "(1,150.00)", "4,410.45"),
            ("12 Nov", "Card 4821 Rewe", "(86.37)", "4,324.08"),
            ("19 Nov", "Refund Zalando", "49.95", "4,374.03"),
            ("28 Nov", "Fee account", "(4.90)", "4,369.13")]
    for i, (dt, desc, amt, bal) in enumerate(rows):
        y = 132 + i * 42
        d.text((40, y), dt, font=f, fill=0)
        d.text((150, y), desc, font=f, fill=0)
        if amt:
            _right(d, amt, f, 690, y, fill=(180, 0, 0) if amt.startswith("(") else 0)
        _right(d, bal, f, 860, y)
        out.append(" ".join(t for t in (dt, desc, amt, bal) if t))
    d.text((560, 400), "Closing balance", font=fb, fill=0)
    _right(d, "4,369.13", fb, 860, 400)
    out.append("Closing balance 4,369.13")
    return im, out


@scene
def restaurant_bill():
    """A restaurant bill in a monospace face: items with their prices, the subtotal, a
    service percentage, a tip line and the total."""
    im, d = canvas(560, 560, (252, 252, 248))
    f, fb = font("mono", 20), font("mono-bold", 22)
    d.text((150, 20), "TRATTORIA ROMA", font=fb, fill=0)
    out = ["TRATTORIA ROMA"]
    d.text((130, 56), "Table 12  Guests 3", font=f, fill=0)
    out.append("Table 12 Guests 3")
    rows = [("2 Margherita", "19.00"), ("1 Lasagne", "13.50"), ("3 Espresso", "7.50"),
            ("1 Tiramisu", "6.80"), ("Subtotal", "46.80"), ("Service 10%", "4.68"),
            ("Tip 15%", "7.02")]
    for i, (k, v) in enumerate(rows):
        y = 110 + i * 40 + (16 if i >= 4 else 0)
        d.text((40, y), k, font=f, fill=0)
        _right(d, v, f, 520, y)
        out.append(f"{k} {v}")
    d.line((40, 268, 520, 268), fill=0, width=1)
    d.text((40, 430), "TOTAL EUR", font=fb, fill=0)
    _right(d, "58.50", fb, 520, 430)
    out.append("TOTAL EUR 58.50")
    d.text((120, 490), "Grazie! 06.12.2026 21:47", font=f, fill=(80, 80, 80))
    out.append("Grazie! 06.12.2026 21:47")
    return im, out


def _bars(d, x, y, h, seed=45, module=2, n=95):
    """A barcode-like pattern: ``n`` modules of seeded bars and spaces (runs of 1-4), guard
    bars at both ends; no text."""
    import numpy as np

    rng = np.random.default_rng(seed)
    runs = [1, 1, 1] + list(rng.integers(1, 5, n)) + [1, 1, 1]
    for k, r in enumerate(runs):
        if k % 2 == 0:
            d.rectangle((x, y, x + r * module - 1, y + h), fill=0)
        x += r * module
    return x


@scene
def shipping_label():
    """A shipping label: the sender, the receiver in larger print, a barcode and the
    tracking number under it, the weight."""
    im, d = canvas(640, 620)
    d.rectangle((10, 10, 630, 610), outline=0, width=3)
    f = font("condensed", 18)
    d.text((30, 26), "FROM: Nordlicht Versand GmbH", font=f, fill=0)
    d.text((30, 50), "Hafenstr. 7, 20457 Hamburg", font=f, fill=0)
    out = ["FROM: Nordlicht Versand GmbH", "Hafenstr. 7, 20457 Hamburg"]
    d.line((10, 90, 630, 90), fill=0, width=2)
    d.text((30, 104), "SHIP TO:", font=font("condensed-bold", 18), fill=0)
    out.append("SHIP TO:")
    big = font("lib-sans-bold", 28)
    for i, t in enumerate(["Lukas Meyer", "Am Rosengarten 14", "80331 München"]):
        d.text((50, 136 + i * 40), t, font=big, fill=0)
        out.append(t)
    d.line((10, 270, 630, 270), fill=0, width=2)
    _bars(d, 80, 296, 130)
    d.text((150, 440), "1Z 999 AA1 01 2345 6784", font=font("lib-sans-bold", 24), fill=0)
    out.append("1Z 999 AA1 01 2345 6784")
    d.line((10, 490, 630, 490), fill=0, width=2)
    d.text((30, 510), "Weight: 2.4 kg", font=font("lib-sans", 22), fill=0)
    d.text((360, 510), "Ref: ORD-58213", font=font("lib-sans", 22), fill=0)
    out.append("Weight: 2.4 kg Ref: ORD-58213")
    d.text((30, 556), "PKG 1/2", font=font("lib-sans-bold", 22), fill=0)
    out.append("PKG 1/2")
    return im, out


@scene
def utility_bill_cn():
    """A Chinese electricity bill (WenQuanYi Zen Hei): the account, meter readings, the
    units used in 度, the unit price in 元/度, the amount due in 元."""
    im, d = canvas(700, 500, (248, 252, 255))

    def z(n):
        return font("zenhei", n)

    d.text((40, 22), "国网浙江省电力有限公司", font=z(30), fill=(0, 90, 60))
    out = ["国网浙江省电力有限公司"]
    rows = ["户号：3301 2045 8876", "账期：2026年11月", "上期示数：12580",
            "本期示数：12815", "用电量：235度", "单价：0.538元/度", "应缴金额：126.43元"]
    for i, t in enumerate(rows):
        d.text((40, 84 + i * 46), t, font=z(24), fill=0)
    out += rows
    d.text((40, 420), "请于2026年12月20日前缴费", font=z(20), fill=(150, 0, 0))
    out.append("请于2026年12月20日前缴费")
    return im, out


@scene
def bus_timetable():
    """A bus timetable: the line and direction, stops down the left, departure times in
    four columns."""
    im, d = canvas(760, 420)
    d.text((30, 20), "Line 42 to Hauptbahnhof", font=font("condensed-bold", 26), fill=0)
    out = ["Line 42 to Hauptbahnhof"]
    f = font("condensed", 20)
    stops = ["Waldfriedhof", "Rathausplatz", "Uni Mensa", "Museum", "Hauptbahnhof"]
    first = [6 * 60 + 5, 6 * 60 + 35, 7 * 60 + 5, 7 * 60 + 35]
    mins = [0, 4, 9, 13, 19]
    for i, (stop, m) in enumerate(zip(stops, mins, strict=True)):
        y = 84 + i * 50
        d.text((30, y), stop, font=f, fill=0)
        times = [f"{(t + m) // 60:02d}:{(t + m) % 60:02d}" for t in first]
        for k, t in enumerate(times):
            _right(d, t, f, 350 + k * 110, y)
        out.append(" ".join([stop, *times]))
    d.text((30, 350), "Mo-Fr, not on public holidays", font=font("condensed", 18), fill=0)
    out.append("Mo-Fr, not on public holidays")
    return im, out


def main(argv=None) -> None:
    from user_scenes import scene_main

    scene_main(45, __file__, __doc__, SCENES, lambda t: normal(signs(t)), argv)


if __name__ == "__main__":
    main()
