"""OCR of a user's own folder, round 43: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user43.py [--only NAME ...]
        [--degrade thumbnail|phone] [--skiff-only]

Kinds no earlier benchmark draws, each with its truth in reading order (lines as the
renderer set them): a tea house's menu in traditional Chinese with English names under
the dishes and prices flush right ("淨" in "淨素", AR PL UKai and Liberation Sans); a
Japanese receipt (kana and kanji, "¥1,280", a tax line, Noto Sans CJK); a contact card and
to-do list with a telephone "☎", an envelope "✉", heavy checks "✔" and check boxes "☐"/"☑"
(DejaVu Sans). RapidOCR as its users run it (``limit_type=max, 960``, its own dictionary).
Scored as ``bench_ocr_user41.py`` scores (``user_scenes.score_scenes``); writes
``results/ocr-user43[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_probes import FONTS, canvas, font, normal  # noqa: E402
from bench_ocr_user40 import signs  # noqa: E402

FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


def _right(d, text, face, size, x1, y, fill=(0, 0, 0)):
    f = font(face, size)
    d.text((x1 - d.textlength(text, font=f), y), text, font=f, fill=fill)


@scene
def tea_house_menu():
    """A traditional Chinese menu: each dish in AR PL UKai, its English name under it in
    Liberation Sans, its price flush right."""
    im, d = canvas(760, 520, (252, 248, 236))
    d.text((40, 24), "茶館菜單", font=font("brush", 40), fill=(110, 20, 20))
    out = ["茶館菜單"]
    dishes = [("淨素湯麵", "Plain noodle soup", "NT$120"),
              ("鳳梨蝦球", "Pineapple prawns", "NT$280"),
              ("蔥油餅", "Scallion pancake", "NT$80"),
              ("凍頂烏龍茶", "Dong Ding oolong tea", "NT$150")]
    for i, (zh, en, price) in enumerate(dishes):
        y = 100 + i * 100
        d.text((40, y), zh, font=font("brush", 30), fill=(20, 20, 20))
        _right(d, price, "lib-sans-bold", 24, 720, y + 4)
        d.text((40, y + 44), en, font=font("lib-sans", 20), fill=(90, 90, 90))
        out += [f"{zh} {price}", en]
    return im, out


@scene
def japanese_receipt():
    """A Japanese shop receipt: its name, a date, items with prices flush right, the tax
    and the total."""
    im, d = canvas(560, 520)
    d.text((150, 24), "さくら書店 渋谷店", font=font("cjk", 28), fill=0)
    out = ["さくら書店 渋谷店"]
    d.text((40, 80), "2026年12月7日 14:32", font=font("cjk", 20), fill=0)
    out.append("2026年12月7日 14:32")
    rows = [("文庫本 夏の庭", "¥1,280"), ("ノート A5", "¥350"), ("ボールペン 黒", "¥180"),
            ("小計", "¥1,810"), ("消費税 10%", "¥181"), ("合計", "¥1,991")]
    for i, (item, price) in enumerate(rows):
        y = 140 + i * 52
        d.text((40, y), item, font=font("cjk", 22), fill=0)
        _right(d, price, "cjk", 22, 520, y)
        out.append(f"{item} {price}")
    return im, out


@scene
def contact_card_and_todo():
    """A contact card with a telephone and an envelope before its number and address, and
    a to-do list with heavy checks and check boxes."""
    im, d = canvas(760, 470)
    f = font("sans", 24)
    lines = ["Lena Fischer", "☎ 030 2345 6789", "✉ lena.fischer@example.de",
             "Tasks this week", "✔ Book the venue", "✔ Send the invitations",
             "☐ Order the flowers", "☑ Pay the deposit"]
    for i, t in enumerate(lines):
        d.text((50, 30 + i * 52), t, font=font("sans-bold", 26) if i in (0, 3) else f, fill=0)
    return im, lines


def main(argv=None) -> None:
    from user_scenes import scene_main

    scene_main(43, __file__, __doc__, SCENES, lambda t: normal(signs(t)), argv)

if __name__ == "__main__":
    main()
