"""OCR of a user's own folder, round 46: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user46.py [--only NAME ...]
        [--degrade thumbnail|phone] [--skiff-only]

Kinds no earlier benchmark draws, each with its truth in reading order (lines as the
renderer set them): a boarding pass (Liberation Sans and Bold: a flight, a gate, a seat, a
boarding time, a booking code of letters and digits); a payslip (Liberation Serif: earnings
and deductions in two columns of amounts, a net pay); a lab result table (DejaVu Sans
Condensed: test, value, unit, reference range, a flag "H"/"L"); a parking ticket (DejaVu
Sans Mono: entry and exit times, the duration, the fee); a medicine leaflet in small print
(DejaVu Serif 15 px: dosage lines with mg, a warning). RapidOCR as its users run it
(``limit_type=max, 960``, its own dictionary). Scored as ``bench_ocr_user41.py`` scores
(``user_scenes.score_scenes``); writes ``results/ocr-user46[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_probes import FONTS, canvas, font, normal  # noqa: E402
from bench_ocr_user40 import signs  # noqa: E402
from bench_ocr_user44 import _right  # noqa: E402

FONTS.setdefault("lib-sans", "truetype/liberation2/LiberationSans-Regular.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("lib-serif", "truetype/liberation2/LiberationSerif-Regular.ttf")
FONTS.setdefault("lib-serif-bold", "truetype/liberation2/LiberationSerif-Bold.ttf")
FONTS.setdefault("mono-bold", "truetype/dejavu/DejaVuSansMono-Bold.ttf")
FONTS.setdefault("condensed-bold", "truetype/dejavu/DejaVuSansCondensed-Bold.ttf")
FONTS.setdefault("serif-dv", "truetype/dejavu/DejaVuSerif.ttf")
FONTS.setdefault("serif-dv-bold", "truetype/dejavu/DejaVuSerif-Bold.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


@scene
def boarding_pass():
    """A boarding pass: the airline, the passenger, a flight, from and to, gate, seat,
    boarding time and a booking code."""
    im, d = canvas(820, 360, (246, 250, 255))
    d.rectangle((0, 0, 820, 60), fill=(20, 60, 130))
    d.text((30, 14), "NORDAIR  BOARDING PASS", font=font("lib-sans-bold", 28),
           fill=(255, 255, 255))
    out = ["NORDAIR BOARDING PASS"]
    f, fb = font("lib-sans", 18), font("lib-sans-bold", 26)
    cols = [(30, "Passenger", "WEBER/ANNA MS"), (330, "Flight", "NA 2417"),
            (520, "Date", "14DEC")]
    for x, k, _ in cols:
        d.text((x, 80), k, font=f, fill=(90, 90, 90))
    for x, _, v in cols:
        d.text((x, 104), v, font=fb, fill=0)
    out += [" ".join(k for _, k, _ in cols), " ".join(v for _, _, v in cols)]
    cols = [(30, "From", "HAMBURG HAM"), (330, "To", "OSLO OSL"), (520, "Gate", "B12"),
            (660, "Seat", "23F")]
    for x, k, _ in cols:
        d.text((x, 160), k, font=f, fill=(90, 90, 90))
    for x, _, v in cols:
        d.text((x, 184), v, font=fb, fill=0)
    out += [" ".join(k for _, k, _ in cols), " ".join(v for _, _, v in cols)]
    d.text((30, 250), "Boarding 06:45  Gate closes 07:05", font=font("lib-sans-bold", 22),
           fill=(170, 20, 20))
    out.append("Boarding 06:45 Gate closes 07:05")
    d.text((30, 300), "Booking ref: K7QX2M  Seq 041", font=f, fill=0)
    out.append("Booking ref: K7QX2M Seq 041")
    return im, out


@scene
def payslip():
    """A payslip: employer, period, earnings and deductions with amounts flush right, the
    net pay."""
    im, d = canvas(800, 520)
    d.text((40, 20), "Payslip December 2026", font=font("lib-serif-bold", 28), fill=0)
    out = ["Payslip December 2026"]
    f, fb = font("lib-serif", 20), font("lib-serif-bold", 20)
    d.text((40, 64), "Employee No. 10482  Tax class 1", font=f, fill=0)
    out.append("Employee No. 10482 Tax class 1")
    rows = [("Basic salary", "4,200.00"), ("Overtime 6.5 h", "243.75"),
            ("Gross pay", "4,443.75"), ("Income tax", "-812.40"),
            ("Pension 9.3%", "-413.27"), ("Health insurance", "-362.17")]
    for i, (k, v) in enumerate(rows):
        y = 120 + i * 42
        bold = k.startswith("Gross")
        d.text((40, y), k, font=fb if bold else f, fill=0)
        _right(d, v, fb if bold else f, 740, y)
        out.append(f"{k} {v}")
    d.line((40, 390, 740, 390), fill=0, width=2)
    d.text((40, 410), "Net pay", font=font("lib-serif-bold", 24), fill=0)
    _right(d, "EUR 2,855.91", font("lib-serif-bold", 24), 740, 410)
    out.append("Net pay EUR 2,855.91")
    d.text((40, 466), "Paid to IBAN DE44 5001 0517 5407 3249 31", font=f, fill=(60, 60, 60))
    out.append("Paid to IBAN DE44 5001 0517 5407 3249 31")
    return im, out


@scene
def lab_results():
    """A lab result table: test, value, unit, reference range, a flag."""
    im, d = canvas(860, 430)
    d.text((30, 20), "Laboratory report  Sample 26-118-07", font=font("condensed-bold", 24),
           fill=0)
    out = ["Laboratory report Sample 26-118-07"]
    f, fb = font("condensed", 19), font("condensed-bold", 19)
    head = [(30, "Test"), (330, "Result"), (450, "Unit"), (580, "Reference"), (760, "Flag")]
    for x, t in head:
        d.text((x, 74), t, font=fb, fill=0)
    out.append(" ".join(t for _, t in head))
    rows = [("Haemoglobin", "13.2", "g/dL", "12.0-16.0", ""),
            ("Leukocytes", "11.8", "10^9/L", "4.0-10.0", "H"),
            ("Platelets", "245", "10^9/L", "150-400", ""),
            ("Potassium", "3.3", "mmol/L", "3.5-5.1", "L"),
            ("CRP", "<5", "mg/L", "0-5", ""),
            ("TSH", "2.41", "mU/L", "0.27-4.20", "")]
    for i, row in enumerate(rows):
        y = 116 + i * 44
        for (x, _), t in zip(head, row, strict=True):
            if t:
                d.text((x, y), t, font=fb if t in ("H", "L") else f,
                       fill=(190, 0, 0) if t in ("H", "L") else 0)
        out.append(" ".join(t for t in row if t))
    d.text((30, 390), "Validated 05.12.2026 09:12 by Dr. K. Jansen", font=f,
           fill=(70, 70, 70))
    out.append("Validated 05.12.2026 09:12 by Dr. K. Jansen")
    return im, out


@scene
def parking_ticket():
    """A parking ticket from a machine: the car park, entry, exit, duration, fee, VAT."""
    im, d = canvas(440, 520, (255, 255, 244))
    f, fb = font("mono", 19), font("mono-bold", 22)
    d.text((70, 20), "CITY PARK P3", font=fb, fill=0)
    out = ["CITY PARK P3"]
    rows = ["Ticket 0048213", "Entry 06.12.26 08:14", "Exit  06.12.26 11:52",
            "Duration 3 h 38 min", "Rate 2.50/h", "Fee EUR 10.00", "incl. VAT 19% 1.60"]
    for i, t in enumerate(rows):
        d.text((30, 80 + i * 46), t, font=f, fill=0)
        out.append(" ".join(t.split()))
    d.text((30, 430), "Max. stay 24 h", font=f, fill=(90, 90, 90))
    out.append("Max. stay 24 h")
    return im, out


@scene
def medicine_leaflet():
    """A medicine leaflet in small print (DejaVu Serif 15 px): the name, dosage lines with
    mg and a warning."""
    im, d = canvas(720, 330)
    d.text((24, 16), "Ibuprofen 400 mg film-coated tablets", font=font("serif-dv-bold", 18),
           fill=0)
    out = ["Ibuprofen 400 mg film-coated tablets"]
    f = font("serif-dv", 15)
    rows = ["Adults and adolescents from 40 kg: 1 tablet every 6 to 8 hours.",
            "Do not take more than 3 tablets (1200 mg) in 24 hours.",
            "Take with water during or after a meal.",
            "Do not use for longer than 4 days for fever or 5 days for pain.",
            "Store below 25 °C in the original package.",
            "Keep out of the sight and reach of children."]
    for i, t in enumerate(rows):
        d.text((24, 58 + i * 30), t, font=f, fill=0)
    out += rows
    d.text((24, 250), "WARNING: may cause stomach bleeding.", font=font("serif-dv-bold", 15),
           fill=(170, 0, 0))
    out.append("WARNING: may cause stomach bleeding.")
    d.text((24, 290), "PZN 01234567  Lot A2611  EXP 11/2028", font=f, fill=(60, 60, 60))
    out.append("PZN 01234567 Lot A2611 EXP 11/2028")
    return im, out


def main(argv=None) -> None:
    from user_scenes import scene_main

    scene_main(46, __file__, __doc__, SCENES, lambda t: normal(signs(t)), argv)


if __name__ == "__main__":
    main()
