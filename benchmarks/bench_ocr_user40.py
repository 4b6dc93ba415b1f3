"""OCR of a user's own folder, round 40: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user40.py [--only NAME ...]
        [--degrade thumbnail|phone]

Kinds no earlier benchmark draws, each seeded and with its truth in reading order (lines as
the renderer set them): an invoice with a ruled table of amounts, a discount with a minus
sign "−" and a "€" total; a terminal screenshot in a monospaced face on a dark ground (a
prompt "~/skiff$", "ls -la"'s permissions, "__init__.py", a failed test's
"test_read_csv[utf-8]"); a code listing on a light ground (brackets, "->", underscores,
"==", a dict literal); a train ticket (a stub in a frame, "Hamburg Hbf → München Hbf",
times, car and seat); a product review card with symbols inside its lines ("★★★★☆ 4.2",
"✓ Verified purchase", "☎ 040 123 456"); a form whose fields are filled in an italic face
as a hand would, with check boxes drawn as squares. Faces: Liberation Sans/Serif/Mono,
DejaVu Sans/Sans Mono/Serif Italic (Debian's fonts-liberation2, fonts-dejavu). RapidOCR as
its users run it (``limit_type=max, 960``, its own dictionary). Scored as
``bench_ocr_user39.py`` scores (character accuracy and exact lines), a number's sign "−"
(U+2212) folded to "-" in the truth and the readings alike (skiff writes a sign "-" by
decision, round 40: `tests/kernels/ocr/test_dashes_sign_r40h3.py`); writes
``results/ocr-user40[-KIND].md``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_everyday import table  # noqa: E402
from bench_ocr_probes import FONTS, canvas, font, lines_at, normal  # noqa: E402

FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("lib-mono", "truetype/liberation2/LiberationMono-Regular.ttf")
FONTS.setdefault("mono-bold", "truetype/dejavu/DejaVuSansMono-Bold.ttf")
FONTS.setdefault("serif-italic", "truetype/dejavu/DejaVuSerif-Italic.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


@scene
def invoice_table():
    """An invoice: the seller, its number and date, a ruled table of items (quantity, unit
    price, amount), a discount with a minus sign "−" and the total in euros."""
    im, d = canvas(860, 560, (255, 255, 255))
    d.text((40, 30), "Nordlicht Druck GmbH", font=font("lib-sans-bold", 28), fill=(20, 40, 90))
    out = ["Nordlicht Druck GmbH"]
    out += lines_at(d, ["Invoice No. RE-2026-0412", "Date: 14.11.2026"], "lib-sans", 20, 40,
                    80, 30, (40, 40, 40))
    rows = [("Item", "Qty", "Unit price", "Amount"),
            ("Business cards (500)", "2", "39.00", "78.00"),
            ("Flyer A5, 4/4", "1", "64.50", "64.50"),
            ("Poster A2 matt", "3", "12.90", "38.70"),
            ("Express surcharge", "1", "15.00", "15.00")]
    d.line((40, 166, 820, 166), fill=(0, 0, 0), width=2)
    out += table(d, rows, (40, 470, 640, 820), "lib-sans", 20, 140, 42, right=(1, 2, 3))
    for i in range(2, len(rows) + 1):
        d.line((40, 140 + i * 42 - 8, 820, 140 + i * 42 - 8), fill=(200, 200, 200), width=1)
    out += table(d, [("Subtotal", "196.20"), ("Discount 5%", "\u22129.81"),
                     ("VAT 19%", "35.42"), ("Total", "\u20ac 221.81")],
                 (470, 820), "lib-sans", 20, 370, 40, right=(1,))
    return im, out


@scene
def terminal_screenshot():
    """A terminal's screenshot: light grey monospaced print on a near-black ground, a
    prompt with "~", a directory listing and a failed test run."""
    im, d = canvas(900, 400, (30, 30, 36))
    lines = ["user@box:~/skiff$ ls -la src/",
             "drwxr-xr-x 2 user user 4096 Nov 14 09:12 .",
             "-rw-r--r-- 1 user user 1843 Nov 14 09:10 __init__.py",
             "-rw-r--r-- 1 user user 5210 Nov 14 09:11 read_csv.py",
             "user@box:~/skiff$ python -m pytest -q tests/",
             "FAILED tests/test_io.py::test_read_csv[utf-8]",
             "E KeyError: 'col_name'",
             "1 failed, 41 passed in 2.31s"]
    return im, lines_at(d, lines, "mono", 18, 20, 20, 44, (220, 220, 220))


@scene
def code_listing():
    """A code listing on a light ground: a function with type hints, a list comprehension
    in brackets, a dict literal, "==" and the "__main__" guard (indentation as set)."""
    im, d = canvas(820, 380, (250, 250, 245))
    lines = ["def parse_row(row: dict[str, int]) -> list[int]:",
             "    keys = sorted(row)",
             "    return [row[k] * 2 for k in keys if k != \"_id\"]",
             "",
             "CONFIG = {\"max_rows\": 1000, \"sep\": \";\"}",
             "",
             "if __name__ == \"__main__\":",
             "    print(parse_row({\"a\": 1, \"b\": 2}))"]
    out = lines_at(d, lines, "lib-mono", 19, 24, 24, 40, (20, 20, 60))
    return im, [t.strip() for t in out if t.strip()]


@scene
def train_ticket():
    """A train ticket: a stub in a rounded frame, the route with an arrow, departure and
    arrival, car and seat, the class and the price."""
    im, d = canvas(880, 380, (236, 240, 244))
    d.rounded_rectangle((20, 20, 860, 360), radius=16, outline=(180, 20, 30), width=3,
                        fill=(255, 255, 255))
    d.text((50, 40), "ICE 1043", font=font("lib-sans-bold", 30), fill=(180, 20, 30))
    out = ["ICE 1043"]
    out += lines_at(d, ["Hamburg Hbf \u2192 M\u00fcnchen Hbf"], "sans", 26, 50, 96, 40)
    out += table(d, [("Departure 08:24", "Arrival 14:17"), ("Car 7", "Seat 42 (window)"),
                     ("2nd class", "1 adult")], (50, 460), "lib-sans", 22, 160, 44)
    out += table(d, [("Price EUR 89.90", "Valid 14.11.2026 only")], (50, 460), "lib-sans", 20,
                 300, 0)
    return im, out


@scene
def review_card():
    """A product review card: symbols inside lines (stars, a tick, a telephone, a bullet)."""
    im, d = canvas(760, 380, (255, 255, 255))
    d.text((30, 24), "Espresso Grinder X2", font=font("sans-bold", 28), fill=(20, 20, 20))
    out = ["Espresso Grinder X2"]
    out += lines_at(d, ["\u2605\u2605\u2605\u2605\u2606 4.2 (1,283 reviews)",
                        "\u2713 Verified purchase",
                        "\u2022 Grinds evenly, quiet motor",
                        "\u260e Support 040 123 456"], "sans", 22, 30, 90, 48, (40, 40, 40))
    out += lines_at(d, ["Price: 129.00 EUR"], "sans-bold", 24, 30, 300, 0, (180, 30, 30))
    return im, out


@scene
def filled_form():
    """A paper form filled in by hand: printed labels, the answers in an italic face in
    blue ink on the lines, check boxes drawn as squares (one ticked)."""
    im, d = canvas(820, 400, (255, 255, 255))
    d.text((30, 20), "Membership Application", font=font("lib-sans-bold", 26), fill=(0, 0, 0))
    out = ["Membership Application"]
    f, hand = font("lib-sans", 20), font("serif-italic", 24)
    fields = [("Name:", "Jana Lindqvist"), ("Street:", "Birkenweg 12"),
              ("City:", "24103 Kiel"), ("Phone:", "0431 55 20 19")]
    for i, (label, value) in enumerate(fields):
        y = 80 + i * 56
        d.text((30, y), label, font=f, fill=(0, 0, 0))
        d.line((150, y + 26, 600, y + 26), fill=(120, 120, 120), width=1)
        d.text((160, y - 4), value, font=hand, fill=(20, 40, 160))
        out.append(f"{label} {value}")
    y = 320
    d.text((30, y), "Plan:", font=f, fill=(0, 0, 0))
    words = [("Basic", False), ("Family", True), ("Student", False)]
    x, parts = 150, ["Plan:"]
    for word, ticked in words:
        d.rectangle((x, y + 2, x + 18, y + 20), outline=(0, 0, 0), width=2)
        if ticked:
            d.line((x + 3, y + 11, x + 8, y + 17), fill=(20, 40, 160), width=3)
            d.line((x + 8, y + 17, x + 17, y - 2), fill=(20, 40, 160), width=3)
        d.text((x + 28, y), word, font=f, fill=(0, 0, 0))
        parts += ["\u2611" if ticked else "\u2610", word]
        x += 160
    out.append(" ".join(parts))
    return im, out


def signs(text: str) -> str:
    """``text`` with a number's sign "−" (not after a letter or digit) written "-"."""
    return re.sub(r"(?<![\w\u2212])\u2212(?=\d)", "-", text)


def main(argv=None) -> None:
    from user_scenes import scene_main

    scene_main(40, __file__, __doc__, SCENES, lambda t: normal(signs(t)), argv)

if __name__ == "__main__":
    main()
