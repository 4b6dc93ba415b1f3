"""OCR of a user's own folder, round 41: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user41.py [--only NAME ...]
        [--degrade thumbnail|phone]

Kinds no earlier benchmark draws, each seeded and with its truth in reading order (lines as
the renderer set them): a boarding pass (small grey labels over their values, airport codes
in a large bold face with an arrow between, a seat "23A", a gate "B12", times); a
nutrition-facts panel (heavy black rules, "Total Fat 8g 10%", "Vitamin D 2mcg 10%",
indented sub-rows, "<1g"); a bilingual Chinese/English product label (each line in
Chinese with its English under it, a full-width colon, "500 mL", "2026-11-14"); a card
statement (dates "03 Nov", amounts with a minus in a column flush right, a credit "+"
and a total "−1,206.45"); a title slide (a title in a 64-px face, a subtitle, a footer
with "©" and a page number). Faces: Liberation Sans/Serif/Mono, DejaVu Sans/Sans Bold,
Noto Sans CJK (Debian's fonts-liberation2, fonts-dejavu, fonts-noto-cjk). RapidOCR as its
users run it (``limit_type=max, 960``, its own dictionary). Scored as
``bench_ocr_user40.py`` scores (character accuracy and exact lines, a number's sign "−"
folded to "-"); writes ``results/ocr-user41[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_everyday import table  # noqa: E402
from bench_ocr_probes import FONTS, canvas, font, lines_at, normal  # noqa: E402
from bench_ocr_user40 import signs  # noqa: E402

FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("lib-mono", "truetype/liberation2/LiberationMono-Regular.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


@scene
def boarding_pass():
    """A boarding pass: the airline, the passenger, the airport codes large with an arrow
    between, then rows of small grey labels over their values."""
    im, d = canvas(920, 400, (255, 255, 255))
    d.rectangle((0, 0, 920, 70), fill=(0, 45, 100))
    d.text((30, 18), "NORDAIR  BOARDING PASS", font=font("lib-sans-bold", 28),
           fill=(255, 255, 255))
    out = ["NORDAIR BOARDING PASS"]
    out += lines_at(d, ["Passenger", "MUELLER/ANNA MS"], "lib-sans", 18, 30, 90, 26,
                    (110, 110, 110))
    big = font("sans-bold", 52)
    d.text((30, 150), "HAM", font=big, fill=(0, 0, 0))
    d.text((180, 150), "\u2192", font=big, fill=(0, 0, 0))
    d.text((270, 150), "LHR", font=big, fill=(0, 0, 0))
    out.append("HAM \u2192 LHR")
    grey, ink = (110, 110, 110), (0, 0, 0)
    cols = (30, 210, 390, 540, 690)
    labels = ("Flight", "Date", "Gate", "Seat", "Boarding")
    values = ("NA 2468", "14NOV", "B12", "23A", "07:35")
    for y0, row, size, fill in ((250, labels, 16, grey), (276, values, 26, ink)):
        f = font("lib-sans" if fill == grey else "lib-sans-bold", size)
        for x, t in zip(cols, row, strict=True):
            d.text((x, y0), t, font=f, fill=fill)
    out += [" ".join(labels), " ".join(values)]
    d.text((30, 340), "Gate closes 20 min before departure", font=font("lib-sans", 16),
           fill=grey)
    out.append("Gate closes 20 min before departure")
    return im, out


@scene
def nutrition_facts():
    """A nutrition-facts panel: a frame, heavy black rules, bold nutrient names with their
    amount beside and the daily value flush right, indented sub-rows."""
    im, d = canvas(520, 640, (255, 255, 255))
    d.rectangle((20, 20, 500, 620), outline=(0, 0, 0), width=3)
    d.text((34, 28), "Nutrition Facts", font=font("lib-sans-bold", 40), fill=(0, 0, 0))
    out = ["Nutrition Facts"]
    out += lines_at(d, ["8 servings per container", "Serving size 2/3 cup (55g)"],
                    "lib-sans", 20, 34, 82, 28)
    d.rectangle((34, 144, 486, 156), fill=(0, 0, 0))
    d.text((34, 166), "Calories", font=font("lib-sans-bold", 30), fill=(0, 0, 0))
    f30 = font("lib-sans-bold", 36)
    d.text((486 - d.textlength("230", font=f30), 160), "230", font=f30, fill=(0, 0, 0))
    out.append("Calories 230")
    d.rectangle((34, 210, 486, 216), fill=(0, 0, 0))
    d.text((486 - d.textlength("% Daily Value*", font=font("lib-sans-bold", 16)), 222),
           "% Daily Value*", font=font("lib-sans-bold", 16), fill=(0, 0, 0))
    out.append("% Daily Value*")
    rows = [("Total Fat", "8g", "10%", 0), ("Saturated Fat", "1g", "5%", 1),
            ("Trans Fat", "0g", "", 1), ("Sodium", "160mg", "7%", 0),
            ("Total Carbohydrate", "37g", "13%", 0), ("Dietary Fiber", "4g", "14%", 1),
            ("Total Sugars", "12g", "", 1), ("Protein", "3g", "", 0),
            ("Vitamin D", "2mcg", "10%", 0), ("Iron", "<1mg", "4%", 0)]
    fb, fr = font("lib-sans-bold", 18), font("lib-sans", 18)
    y = 252
    for name, amount, dv, sub in rows:
        d.line((34, y - 4, 486, y - 4), fill=(0, 0, 0), width=1)
        x = 34 + 20 * sub
        f = fr if sub else fb
        d.text((x, y), name, font=f, fill=(0, 0, 0))
        d.text((x + d.textlength(name + " ", font=f), y), amount, font=fr, fill=(0, 0, 0))
        if dv:
            d.text((486 - d.textlength(dv, font=fb), y), dv, font=fb, fill=(0, 0, 0))
        out.append(" ".join(t for t in (name, amount, dv) if t))
        y += 34
    return im, out


@scene
def bilingual_label():
    """A bilingual product label: each Chinese line with its English beneath, a full-width
    colon, a volume and dates (Noto Sans CJK and Liberation Sans)."""
    im, d = canvas(720, 520, (246, 250, 240))
    d.rectangle((16, 16, 704, 504), outline=(40, 110, 60), width=4)
    d.text((40, 34), "有机绿茶", font=font("cjk-bold", 44), fill=(40, 110, 60))
    d.text((40, 94), "Organic Green Tea", font=font("lib-sans-bold", 26), fill=(40, 110, 60))
    out = ["有机绿茶", "Organic Green Tea"]
    pairs = [("净含量：500 mL", "Net volume: 500 mL"),
             ("配料：水、绿茶、维生素C", "Ingredients: water, green tea, vitamin C"),
             ("生产日期：2026-11-14", "Production date: 2026-11-14"),
             ("产地：浙江杭州", "Origin: Hangzhou, Zhejiang")]
    y = 160
    for zh, en in pairs:
        d.text((40, y), zh, font=font("cjk", 24), fill=(20, 20, 20))
        d.text((40, y + 36), en, font=font("lib-sans", 18), fill=(70, 70, 70))
        out += [zh, en]
        y += 82
    return im, out


@scene
def card_statement():
    """A credit card statement: dates "03 Nov", merchants, amounts flush right with a
    minus sign, a refund with "+", and the balance due."""
    im, d = canvas(860, 470, (255, 255, 255))
    d.text((30, 24), "VISA Classic  **** 4821", font=font("lib-sans-bold", 26), fill=(0, 0, 0))
    out = ["VISA Classic **** 4821"]
    rows = [("03 Nov", "SPAR Markt Kiel", "\u221232.18"),
            ("05 Nov", "Deutsche Bahn 7741", "\u2212189.90"),
            ("09 Nov", "Refund Zalando SE", "+59.95"),
            ("12 Nov", "Shell 0413 Hamburg", "\u221271.02"),
            ("18 Nov", "Apotheke am Markt", "\u22128.45"),
            ("24 Nov", "Hotel Adlon Berlin", "\u2212964.85")]
    out += table(d, rows, (30, 150, 820), "lib-mono", 20, 90, 44, right=(2,))
    d.line((30, 360, 830, 360), fill=(0, 0, 0), width=2)
    out += table(d, [("Balance due", "\u22121,206.45")], (30, 820), "lib-sans-bold", 22, 376,
                 0, right=(1,))
    return im, out


@scene
def title_slide():
    """A title slide: a 64-px title, a subtitle, the speaker and a footer with "©" and a
    page number."""
    im, d = canvas(1280, 720, (18, 42, 74))
    d.text((90, 220), "Winter Roadmap 2027", font=font("lib-sans-bold", 72),
           fill=(255, 255, 255))
    out = ["Winter Roadmap 2027"]
    out += lines_at(d, ["Platform, pricing and the next three releases"], "lib-sans", 34, 92,
                    330, 0, (190, 210, 235))
    out += lines_at(d, ["Dr. Maren Koch, Head of Product"], "lib-sans", 26, 92, 430, 0,
                    (255, 200, 80))
    d.text((90, 660), "\u00a9 2026 Nordlicht AG", font=font("lib-sans", 18), fill=(150, 170, 200))
    d.text((1160, 660), "1 / 24", font=font("lib-sans", 18), fill=(150, 170, 200))
    out.append("\u00a9 2026 Nordlicht AG 1 / 24")
    return im, out


def main(argv=None) -> None:
    from user_scenes import scene_main

    scene_main(41, __file__, __doc__, SCENES, lambda t: normal(signs(t)), argv)

if __name__ == "__main__":
    main()
