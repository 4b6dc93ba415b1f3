"""OCR of everyday documents full of numbers: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_everyday.py [--only NAME ...]
        [--degrade thumbnail|phone]

Round 27's scenes, drawn here and not used by any test: an invoice with quantity and
price columns, a train timetable, shelf price tags, a bank statement in a monospaced face,
a nutrition label, number plates (European and Chinese), a form with ticked and crossed
check boxes, a Chinese receipt and a Chinese timetable, a meter reading with a thin space,
a match score, a page with "- 2 -" at its foot, a to-do list of ticks and crosses, a
payslip, a pharmacy label with doses, a bus timetable grid, a Chinese bank statement, a
café's price list with decimal commas. Each is read by skiff and by RapidOCR
(``limit_type=max, 960``) with the readers of ``bench_ocr_layout.py``; character accuracy
per scene counts a run of spaces as one (so a lost space between two numbers counts) and
drops spaces between CJK characters. ``--degrade`` passes every scene on as a thumbnail
(half size, JPEG 40) or a phone photo (``bench_ocr_probes.degrade``). Writes
``results/ocr-everyday[-KIND].md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_probes import DEGRADE, canvas, degrade, font, normal  # noqa: E402

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


def table(d, rows, columns, face, size, y0, step, right=(), fill=(0, 0, 0)):
    """``rows`` of cells drawn at the x of ``columns`` (a cell of a column in ``right`` is
    set flush right at that x); the truth is each row's cells joined by one space."""
    f = font(face, size)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            x = columns[j] - (d.textlength(cell, font=f) if j in right else 0)
            d.text((x, y0 + i * step), cell, font=f, fill=fill)
    return [" ".join(c for c in row if c) for row in rows]


@scene
def invoice_columns():
    im, d = canvas(760, 330)
    rows = [("Description", "Qty", "Unit price", "Amount"),
            ("Coffee beans 1kg", "2", "12.50", "25.00"),
            ("Paper filters", "10", "0.35", "3.50"),
            ("Milk frother", "1", "49.90", "49.90"),
            ("Delivery", "1", "4.95", "4.95"),
            ("Total", "", "", "83.35")]
    return im, table(d, rows, (30, 400, 560, 720), "sans", 17, 30, 46, right=(1, 2, 3))


@scene
def train_timetable():
    im, d = canvas(700, 300, (16, 32, 80))
    rows = [("Time", "Train", "Destination", "Platform"),
            ("08:15", "ICE 578", "Berlin Hbf", "3"),
            ("08:42", "RE 4", "Hamburg-Altona", "12"),
            ("09:05", "S 21", "Airport", "1"),
            ("09:30", "IC 2021", "Frankfurt (Main)", "7")]
    return im, table(d, rows, (30, 140, 300, 660), "sans-bold", 20, 30, 52, right=(3,),
                     fill=(255, 220, 60))


@scene
def shelf_price_tags():
    im, d = canvas(720, 240, (250, 250, 250))
    truths = []
    for k, (name, price, unit) in enumerate([("Bananas", "1.29", "per kg 1.29"),
                                             ("Oat milk 1L", "2.49", "per L 2.49"),
                                             ("Eggs 10 pcs", "3.19", "each 0.32")]):
        x = 20 + k * 235
        d.rectangle((x, 20, x + 220, 210), fill=(255, 236, 0), outline=(200, 0, 0), width=3)
        d.text((x + 12, 30), name, font=font("sans-bold", 18), fill=0)
        d.text((x + 12, 70), price, font=font("sans-bold", 64), fill=(200, 0, 0))
        d.text((x + 12, 170), unit, font=font("sans", 14), fill=0)
        truths += [name, price, unit]
    return im, truths


@scene
def bank_statement_mono():
    im, d = canvas(820, 300)
    rows = [("Date", "Description", "Amount", "Balance"),
            ("2024-03-01", "Opening balance", "", "1,204.17"),
            ("2024-03-02", "Card REWE 4411", "-23.40", "1,180.77"),
            ("2024-03-05", "Salary ACME GmbH", "2,950.00", "4,130.77"),
            ("2024-03-07", "Rent March", "-1,150.00", "2,980.77")]
    return im, table(d, rows, (20, 160, 610, 790), "mono", 15, 30, 44, right=(2, 3))


@scene
def nutrition_label():
    im, d = canvas(460, 420)
    d.rectangle((10, 10, 450, 410), outline=0, width=3)
    d.text((24, 22), "Nutrition Facts", font=font("sans-bold", 26), fill=0)
    d.line((24, 62, 436, 62), fill=0, width=6)
    rows = [("Per 100 g", "", ""), ("Energy", "1046 kJ / 250 kcal", ""),
            ("Fat", "9.0 g", "13%"), ("of which saturates", "1.2 g", "6%"),
            ("Carbohydrate", "30 g", "11%"), ("of which sugars", "4.5 g", "5%"),
            ("Protein", "11 g", "22%"), ("Salt", "0.75 g", "13%")]
    f = font("sans", 15)
    truths = ["Nutrition Facts"]
    for i, (name, value, pct) in enumerate(rows):
        y = 76 + i * 40
        d.text((24, y), name, font=f, fill=0)
        if value:
            d.text((420 - d.textlength(value, font=f) - (70 if pct else 0), y), value,
                   font=f, fill=0)
        if pct:
            d.text((436 - d.textlength(pct, font=f), y), pct, font=f, fill=0)
        truths.append(" ".join(c for c in (name, value, pct) if c))
        d.line((24, y + 30, 436, y + 30), fill=(120, 120, 120), width=1)
    return im, truths


@scene
def number_plates():
    im, d = canvas(760, 200, (90, 90, 90))
    d.rounded_rectangle((20, 40, 360, 130), 10, fill=(250, 250, 250), outline=0, width=4)
    d.rectangle((24, 44, 60, 126), fill=(0, 51, 153))
    d.text((72, 56), "B MW 1234", font=font("sans-bold", 42), fill=0)
    d.rounded_rectangle((400, 40, 740, 130), 10, fill=(0, 60, 170), outline=(250, 250, 250),
                        width=4)
    d.text((420, 50), "粤B 12345", font=font("cjk-bold", 52), fill=(250, 250, 250))
    return im, ["B MW 1234", "粤B 12345"]


@scene
def check_box_form():
    im, d = canvas(620, 260)
    f = font("sans", 17)
    truths = ["Preferences"]  # a box reads as its state before its label (round 28)
    d.text((20, 16), "Preferences", font=font("sans-bold", 20), fill=0)
    for i, (mark, label) in enumerate([("✓", "Email me the invoice"),
                                       ("✗", "Share my data with partners"),
                                       ("✓", "Keep me signed in for 30 days")]):
        y = 64 + i * 52
        d.rectangle((24, y, 50, y + 26), outline=0, width=2)
        d.text((28, y - 1), mark, font=font("sans", 22), fill=0)
        d.text((66, y + 2), label, font=f, fill=0)
        truths.append(("\u2611 " if mark == "✓" else "\u2612 ") + label)
    return im, truths


@scene
def chinese_receipt():
    im, d = canvas(560, 330, (252, 252, 248))
    rows = [("商品", "数量", "单价", "金额"), ("苹果", "2", "3.50", "7.00"),
            ("牛奶 1L", "1", "12.80", "12.80"), ("面包", "3", "4.20", "12.60"),
            ("合计", "", "", "32.40")]
    return im, table(d, rows, (30, 260, 400, 530), "cjk", 20, 30, 58, right=(1, 2, 3))


@scene
def chinese_timetable():
    im, d = canvas(620, 280, (10, 10, 10))
    rows = [("车次", "终点站", "开点", "站台"), ("G102", "上海虹桥", "08:00", "5"),
            ("D3125", "杭州东", "08:36", "12"), ("K528", "广州", "09:12", "3")]
    return im, table(d, rows, (30, 170, 420, 580), "cjk-bold", 24, 30, 60, right=(3,),
                     fill=(255, 80, 40))


@scene
def meter_reading():
    im, d = canvas(560, 200)
    f = font("sans", 20)
    d.text((20, 20), "Meter reading 12 345 kWh", font=f, fill=0)
    d.text((20, 70), "Previous 11 980 kWh", font=f, fill=0)
    d.text((20, 120), "Used 365 kWh x 0.32 = 116.80", font=f, fill=0)
    return im, ["Meter reading 12 345 kWh", "Previous 11 980 kWh",
                "Used 365 kWh x 0.32 = 116.80"]


@scene
def match_score():
    im, d = canvas(640, 160, (0, 70, 30))
    d.text((30, 40), "HOME 2 - 1 AWAY", font=font("sans-bold", 54), fill=(255, 255, 255))
    return im, ["HOME 2 - 1 AWAY"]


@scene
def page_with_a_footer():
    im, d = canvas(700, 520)
    body = [f"Section {i + 1}. The results of the survey are given in table {i + 2}."
            for i in range(8)]
    f = font("lib-serif", 17)
    for i, line in enumerate(body):
        d.text((40, 30 + i * 34), line, font=f, fill=0)
    w = d.textlength("- 2 -", font=f)
    d.text((350 - w / 2, 470), "- 2 -", font=f, fill=0)
    return im, [*body, "- 2 -"]


@scene
def todo_ticks_and_crosses():
    im, d = canvas(420, 240)
    items = [("✓", "Book flights"), ("✓", "Renew passport"), ("✗", "Hotel in Lyon"),
             ("✓", "Travel insurance")]
    f = font("sans", 19)
    for i, (mark, text) in enumerate(items):
        d.text((24, 20 + i * 50), f"{mark} {text}", font=f, fill=0)
    return im, [f"{m} {t}" for m, t in items]


@scene
def payslip():
    im, d = canvas(700, 300)
    rows = [("Gross pay", "4,250.00"), ("Income tax", "-812.40"),
            ("Social security", "-845.75"), ("Net pay", "2,591.85"),
            ("Hours 160 Rate 26.56", "")]
    return im, table(d, rows, (30, 660), "lib-sans", 18, 30, 50, right=(1,))


@scene
def pharmacy_label():
    im, d = canvas(560, 230, (255, 255, 245))
    lines = ["Ibuprofen 400 mg", "Take 1 tablet 3 times a day", "Max 6 tablets in 24 hours",
             "Qty 20 Exp 11/2026 Lot 4471"]
    for i, t in enumerate(lines):
        d.text((20, 16 + i * 50), t, font=font("sans" if i else "sans-bold", 20), fill=0)
    return im, lines


@scene
def bus_timetable_grid():
    im, d = canvas(640, 260)
    f = font("lib-sans", 16)
    lines = ["Mon-Fri 06:15 06:45 07:15 07:45 08:15 08:45",
             "Saturday 07:30 08:30 09:30 10:30 11:30 12:30",
             "Sunday 09:10 11:10 13:10 15:10 17:10 19:10"]
    for i, line in enumerate(lines):
        name, *times = line.split()
        d.text((20, 30 + i * 60), name, font=f, fill=0)
        for j, t in enumerate(times):
            d.text((130 + j * 80, 30 + i * 60), t, font=f, fill=0)
    return im, lines


@scene
def chinese_bank_statement():
    im, d = canvas(760, 250)
    rows = [("日期", "摘要", "支出", "余额"), ("2024-05-01", "工资", "", "12,680.00"),
            ("2024-05-03", "超市购物", "-236.50", "12,443.50"),
            ("2024-05-08", "房租", "-3,500.00", "8,943.50")]
    return im, table(d, rows, (20, 200, 560, 740), "cjk", 18, 30, 50, right=(2, 3))


@scene
def euro_price_list():
    im, d = canvas(520, 230, (255, 250, 240))
    rows = [("Espresso", "€ 2,20"), ("Cappuccino", "€ 3,40"), ("Croissant", "€ 1,90"),
            ("Orange juice 0,3 l", "€ 3,80")]
    return im, table(d, rows, (24, 490), "serif", 20, 24, 50, right=(1,))


def main(argv=None) -> None:
    compare(SCENES, "everyday", "everyday documents full of numbers", __file__, argv)


def compare(scenes, name, title, script, argv=None) -> None:
    """Read ``scenes`` (functions drawing ``(image, truth lines)``) with skiff and with
    RapidOCR, print and write ``results/ocr-NAME[-KIND].md`` (``script``'s command line)."""
    from bench_ocr_layout import read_rapidocr, read_skiff
    from results_file import write_keeping_earlier

    from skiff.kernels.ocr.synth import char_accuracy

    ap = argparse.ArgumentParser(description=f"OCR of {title}: skiff against RapidOCR 3.10")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", nargs="*", help="scene names (default: all)")
    ap.add_argument("--degrade", choices=DEGRADE)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    a.out = a.out or str(HERE / "results" / (f"ocr-{name}-{a.degrade}.md" if a.degrade
                                             else f"ocr-{name}.md"))
    drawn = [(s.__name__, *s()) for s in scenes if not a.only or s.__name__ in a.only]
    if a.degrade:
        drawn = [(name, degrade(im, a.degrade, k), lines)
                 for k, (name, im, lines) in enumerate(drawn)]
    images = [np.asarray(im.convert("RGB")) for _, im, _ in drawn]
    truths = [normal("\n".join(lines)) for _, _, lines in drawn]
    got, seconds, cpu = {}, {}, {}
    for method, read in (("skiff", read_skiff), ("rapidocr-960", read_rapidocr)):
        c0 = time.process_time()
        texts, seconds[method] = read(images, a.threads)
        cpu[method] = time.process_time() - c0  # the process's CPU, warm-up image included
        got[method] = [normal(t) for t in texts]
        print(f"{method}: {seconds[method]:.2f} s, {cpu[method]:.2f} CPU s", flush=True)
    acc = {m: [char_accuracy(t, truth) for t, truth in zip(got[m], truths, strict=True)]
           for m in got}
    rows, misses = [], []
    for k, (scene_name, _, _) in enumerate(drawn):
        s, r = acc["skiff"][k], acc["rapidocr-960"][k]
        rows.append(f"| {scene_name.replace('_', ' ')} | {s:.3f} | {r:.3f} |")
        print(f"{scene_name:28s} skiff {s:.3f}  RapidOCR {r:.3f}", flush=True)
        if s < 1.0:
            misses.append(f"- {scene_name.replace('_', ' ')} ({s:.3f} / {r:.3f}): skiff "
                          f"{got['skiff'][k]!r}; RapidOCR {got['rapidocr-960'][k]!r}")
    mean = {m: float(np.mean(v)) for m, v in acc.items()}
    print(f"mean: skiff {mean['skiff']:.3f}, RapidOCR {mean['rapidocr-960']:.3f}")
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    only = f" --only {' '.join(a.only)}" if a.only else ""
    deg = f" --degrade {a.degrade}" if a.degrade else ""
    text = "\n".join([
        f"# OCR of {title}: skiff and RapidOCR", "",
        f"Command: `OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/{Path(script).name} "
        f"--threads {a.threads}{only}{deg}`  ",
        f"Machine: 2 CPUs, {a.threads} threads per method; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end {load}.",
        "",
        f"{len(drawn)} scenes (see the benchmark's docstring), read by skiff and by RapidOCR "
        "3.10 (`limit_type=max, 960`). Character accuracy counts a run of spaces as one "
        "and drops spaces between CJK characters; the order of lines counts.",
        "",
        f"Mean character accuracy: skiff **{mean['skiff']:.3f}**, RapidOCR "
        f"**{mean['rapidocr-960']:.3f}**; seconds (after a warm-up image): skiff "
        f"{seconds['skiff']:.2f}, RapidOCR {seconds['rapidocr-960']:.2f}; CPU seconds of the "
        f"process (the warm-up image and the models' loading included): skiff "
        f"{cpu['skiff']:.2f}, RapidOCR {cpu['rapidocr-960']:.2f}.",
        "",
        "| scene | skiff | RapidOCR |", "|---|---|---|", *rows, "",
        "Scenes skiff reads under 1.000:", "", *(misses or ["- none"]), ""])
    write_keeping_earlier(a.out, text)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
