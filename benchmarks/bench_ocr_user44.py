"""OCR of a user's own folder, round 44: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user44.py [--only NAME ...]
        [--degrade thumbnail|phone] [--skiff-only]

Kinds no earlier benchmark draws, each with its truth in reading order (lines as the
renderer set them): an invoice table (Liberation Sans: a header row, four rows of an item,
a quantity, a unit price and a totals column flush right, then the subtotal, the VAT and the
total); a bilingual train ticket (Noto Sans CJK SC and Liberation Sans: stations in Chinese
with their names in English under them, a train number, a date, a seat, a fare), and the
same ticket in Liberation Mono and WenQuanYi Zen Hei; a chat
app's screenshot, light and dark (DejaVu Sans: a contact's name, bubbles left and right
with times beside them); a price tag with its old price struck through (DejaVu Sans Bold);
a business card with a QR code beside its text (Liberation Serif/Sans: the code is drawn
as a seeded module grid with its three finder squares, no text); a product label in
Chinese with Latin words and numbers in it (Noto Serif CJK SC and Noto Sans CJK SC, no
Korean). RapidOCR as its users run it (``limit_type=max, 960``, its own dictionary).
Scored as ``bench_ocr_user41.py`` scores (``user_scenes.score_scenes``); writes
``results/ocr-user44[-KIND].md``.
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
FONTS.setdefault("lib-serif", "truetype/liberation2/LiberationSerif-Regular.ttf")
FONTS.setdefault("lib-serif-bold", "truetype/liberation2/LiberationSerif-Bold.ttf")
FONTS.setdefault("lib-mono", "truetype/liberation2/LiberationMono-Regular.ttf")
FONTS.setdefault("lib-mono-bold", "truetype/liberation2/LiberationMono-Bold.ttf")

SCENES = []
SC = 2  # the face index of Noto Sans/Serif CJK SC in their .ttc files


def scene(fn):
    SCENES.append(fn)
    return fn


def sc(size, serif=False, bold=False):
    """Noto Sans (or Serif) CJK SC at ``size``."""
    from PIL import ImageFont

    name = "NotoSerifCJK" if serif else "NotoSansCJK"
    path = f"/usr/share/fonts/opentype/noto/{name}-{'Bold' if bold else 'Regular'}.ttc"
    return ImageFont.truetype(path, size, index=SC)


def _right(d, text, f, x1, y, fill=(0, 0, 0)):
    d.text((x1 - d.textlength(text, font=f), y), text, font=f, fill=fill)


@scene
def invoice_table():
    """An invoice: a header row, four item rows with a totals column flush right, then
    the subtotal, VAT and total under the column."""
    im, d = canvas(860, 520)
    f, fb = font("lib-sans", 20), font("lib-sans-bold", 20)
    d.text((40, 24), "INVOICE No. 2026-0412", font=font("lib-sans-bold", 28), fill=0)
    out = ["INVOICE No. 2026-0412"]
    cols = (40, 430, 600, 820)
    y = 100
    for x, t in zip(cols[:1], ["Description"], strict=True):
        d.text((x, y), t, font=fb, fill=0)
    _right(d, "Qty", fb, cols[1] + 40, y)
    _right(d, "Unit price", fb, cols[2] + 60, y)
    _right(d, "Amount", fb, cols[3], y)
    out.append("Description Qty Unit price Amount")
    d.line((40, y + 32, 820, y + 32), fill=0, width=2)
    rows = [("Website design", "1", "1,200.00", "1,200.00"),
            ("Hosting (12 months)", "12", "15.00", "180.00"),
            ("Logo revisions", "3", "85.50", "256.50"),
            ("Domain renewal", "2", "19.99", "39.98")]
    for i, (desc, q, unit, amt) in enumerate(rows):
        y = 150 + i * 46
        d.text((cols[0], y), desc, font=f, fill=0)
        _right(d, q, f, cols[1] + 40, y)
        _right(d, unit, f, cols[2] + 60, y)
        _right(d, amt, f, cols[3], y)
        out.append(f"{desc} {q} {unit} {amt}")
    d.line((560, 340, 820, 340), fill=0, width=1)
    for i, (k, v) in enumerate([("Subtotal", "1,676.48"), ("VAT 19%", "318.53"),
                                ("Total EUR", "1,995.01")]):
        y = 356 + i * 44
        d.text((560, y), k, font=fb if i == 2 else f, fill=0)
        _right(d, v, fb if i == 2 else f, cols[3], y)
        out.append(f"{k} {v}")
    return im, out


def _ticket(latin, bold, cjk):
    """A bilingual ticket in the faces given (functions of a size)."""
    im, d = canvas(820, 420, (232, 244, 250))
    d.text((40, 24), "E12345678", font=latin(20), fill=(200, 30, 30))
    out = ["E12345678"]
    d.text((60, 80), "北京南站", font=cjk(40), fill=0)
    d.text((320, 92), "G1", font=bold(30), fill=0)
    d.text((540, 80), "上海虹桥站", font=cjk(40), fill=0)
    out.append("北京南站 G1 上海虹桥站")
    d.text((60, 136), "Beijingnan", font=latin(22), fill=0)
    d.text((540, 136), "Shanghaihongqiao", font=latin(22), fill=0)
    out.append("Beijingnan Shanghaihongqiao")
    d.text((60, 200), "2026年12月08日 09:00开", font=cjk(26), fill=0)
    d.text((480, 200), "05车 12F号", font=cjk(26), fill=0)
    out += ["2026年12月08日 09:00开 05车 12F号"]
    d.text((60, 252), "¥553.0元", font=cjk(26), fill=0)
    d.text((480, 252), "二等座", font=cjk(26), fill=0)
    out.append("¥553.0元 二等座")
    d.text((60, 320), "仅供报销使用 Reimbursement only", font=cjk(20), fill=(60, 60, 60))
    out.append("仅供报销使用 Reimbursement only")
    return im, out


@scene
def train_ticket():
    """A bilingual train ticket: the stations in Chinese with English under them, the
    train number between, the date and time, carriage and seat, the fare (Noto Sans CJK SC,
    Liberation Sans)."""
    return _ticket(lambda n: font("lib-sans", n), lambda n: font("lib-sans-bold", n), sc)


@scene
def train_ticket_mono():
    """The same ticket in Liberation Mono and WenQuanYi Zen Hei (round 44: read column by
    column, each station a block)."""
    return _ticket(lambda n: font("lib-mono", n), lambda n: font("lib-mono-bold", n),
                   lambda n: font("zenhei", n))


def _chat(dark):
    bg, other, mine = ((18, 18, 18), (48, 48, 52), (10, 110, 230)) if dark else \
        ((255, 255, 255), (233, 233, 235), (0, 122, 255))
    ink_other = (240, 240, 240) if dark else (0, 0, 0)
    grey = (150, 150, 150) if dark else (120, 120, 120)
    im, d = canvas(540, 700, bg)
    f, small = font("sans", 20), font("sans", 14)
    d.rectangle((0, 0, 540, 70), fill=(30, 30, 32) if dark else (246, 246, 248))
    d.text((200, 22), "Maria Lopez", font=font("sans-bold", 22), fill=ink_other)
    out = ["Maria Lopez"]
    msgs = [(False, ["Are we still on for", "lunch tomorrow?"], "12:41"),
            (True, ["Yes! 12:30 at the", "usual place?"], "12:43"),
            (False, ["Perfect, see you there"], "12:44"),
            (True, ["I'll book a table for 4"], "12:45")]
    y = 100
    for mine_side, lines, t in msgs:
        w = max(d.textlength(s, font=f) for s in lines) + 32
        h = 30 * len(lines) + 20
        x0 = 540 - 20 - w if mine_side else 20
        d.rounded_rectangle((x0, y, x0 + w, y + h), radius=16, fill=mine if mine_side else other)
        for k, s in enumerate(lines):
            d.text((x0 + 16, y + 10 + 30 * k), s, font=f,
                   fill=(255, 255, 255) if mine_side else ink_other)
        out += lines
        tx = x0 + w - d.textlength(t, font=small) if mine_side else x0
        d.text((tx, y + h + 6), t, font=small, fill=grey)
        out.append(t)
        y += h + 50
    return im, out


@scene
def chat_light():
    """A chat app's screenshot, light theme."""
    return _chat(False)


@scene
def chat_dark():
    """The same chat, dark theme."""
    return _chat(True)


@scene
def price_tag():
    """A shelf price tag: the product, its old price struck through, the new price large,
    the saving in a red box."""
    im, d = canvas(480, 360, (255, 250, 205))
    d.text((30, 24), "Merino Wool Scarf", font=font("sans-bold", 28), fill=0)
    d.text((30, 68), "Art. 40 1177 23", font=font("sans", 18), fill=(80, 80, 80))
    old = font("sans", 30)
    d.text((30, 120), "€49.99", font=old, fill=(90, 90, 90))
    w = d.textlength("€49.99", font=old)
    d.line((26, 140, 34 + w, 136), fill=(200, 0, 0), width=3)
    d.text((30, 170), "€29.99", font=font("sans-bold", 72), fill=(200, 0, 0))
    d.rectangle((330, 120, 450, 170), fill=(200, 0, 0))
    d.text((346, 126), "-40%", font=font("sans-bold", 32), fill=(255, 255, 255))
    return im, ["Merino Wool Scarf", "Art. 40 1177 23", "€49.99 -40%", "€29.99"]


def _qr(im, x, y, text="https://datenwerk.de/vcard/jberger", cell=5):
    """A QR code of ``text`` (OpenCV's encoder, its quiet zone included) pasted at
    ``(x, y)``, ``cell`` pixels a module."""
    import cv2
    from PIL import Image

    q = cv2.QRCodeEncoder.create().encode(text)
    im.paste(Image.fromarray(q).resize((q.shape[1] * cell, q.shape[0] * cell),
                                       Image.NEAREST).convert("RGB"), (x, y))


@scene
def business_card():
    """A business card: a name, a title, contact lines, a QR code to the right."""
    im, d = canvas(700, 400)
    d.text((40, 40), "Dr. Jonas Berger", font=font("lib-serif-bold", 34), fill=(20, 30, 60))
    d.text((40, 88), "Senior Data Engineer", font=font("lib-serif", 22), fill=(80, 80, 80))
    f = font("lib-sans", 20)
    lines = ["+49 89 1234 5678", "j.berger@datenwerk.de", "www.datenwerk.de",
             "Leopoldstr. 21, 80802 München"]
    for i, t in enumerate(lines):
        d.text((40, 170 + i * 40), t, font=f, fill=0)
    _qr(im, 470, 110)
    return im, ["Dr. Jonas Berger", "Senior Data Engineer", *lines]


@scene
def product_label():
    """A Chinese product label with Latin words and numbers inside its lines (Noto Serif
    CJK SC for the name, Noto Sans CJK SC for the rest)."""
    im, d = canvas(640, 440, (250, 250, 244))
    d.text((40, 24), "有机绿茶", font=sc(44, serif=True), fill=(20, 90, 40))
    d.text((240, 40), "Organic Green Tea", font=font("lib-sans", 24), fill=(20, 90, 40))
    out = ["有机绿茶 Organic Green Tea"]
    rows = ["净含量：100g", "产地：浙江杭州", "规格：2g×50袋", "保质期：18个月",
            "生产日期：2026-10-01", "执行标准：GB/T 14456.2"]
    for i, t in enumerate(rows):
        d.text((40, 110 + i * 48), t, font=sc(24), fill=0)
    return im, out + rows


def main(argv=None) -> None:
    from user_scenes import scene_main

    scene_main(44, __file__, __doc__, SCENES, lambda t: normal(signs(t)), argv)


if __name__ == "__main__":
    main()
