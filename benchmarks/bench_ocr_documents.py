"""OCR of document fields: skiff and RapidOCR 3.10, line by line, spaces counted.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_documents.py [--no-write]

writes benchmarks/results/ocr-fields.md (``--out FILE`` elsewhere).

Renders what a document user hands to OCR, each in several faces and sizes: an invoice
with its grid, a bank statement, an amounts column, dates, a certificate, a web form, a
Chinese ID card (fields a gap apart: "民族  汉"), a Chinese invoice (fapiao) and form, the
same amounts in monospaced faces (Liberation Mono's "," and "." at the left of a cell),
a C listing with lone braces in a frame, a page number "- 1 -" at the foot of an A4 page
shown at 0.44, and ticks ("✓ Paid"). Each line of the truth counts as read when an output
line equals it with runs of spaces as one (so "民族汉" for "民族 汉" and "3, 450" for
"3,450" count as misses); the table gives each group's share of lines read exactly and
its character accuracy, spaces included.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

T, N = "/usr/share/fonts/truetype/", "/usr/share/fonts/opentype/noto/"
LATIN = [T + "dejavu/DejaVuSans.ttf", T + "liberation2/LiberationSans-Regular.ttf",
         T + "liberation2/LiberationSerif-Regular.ttf"]
MONO = [T + "liberation2/LiberationMono-Regular.ttf", T + "dejavu/DejaVuSansMono.ttf"]
CJK = [(N + "NotoSansCJK-Regular.ttc", 2), (N + "NotoSerifCJK-Regular.ttc", 2),
       (T + "wqy/wqy-zenhei.ttc", 0), (T + "arphic/ukai.ttc", 0)]

# a scene: rows of (x in em, text) cells; a row's truth is its cells joined by a space
INVOICE = [[(0, "INVOICE")], [(0, "Invoice No: INV-2024-00123"), (18, "Date: 2024-03-15")],
           [(0, "Item"), (12, "Qty"), (16, "Unit Price"), (24, "Amount")],
           [(0, "Widget A"), (12, "2"), (16, "$12.50"), (24, "$25.00")],
           [(0, "Service fee"), (12, "1"), (16, "$1,209.56"), (24, "$1,209.56")],
           [(16, "Subtotal"), (24, "$1,234.56")], [(16, "Total"), (24, "$1,481.47")]]
STATEMENT = [[(0, "03/01"), (7, "Opening balance"), (34, "12,450.00")],
             [(0, "03/04"), (7, "POS AMAZON MKTPL"), (22, "-45.99"), (34, "12,404.01")],
             [(0, "03/09"), (7, "SALARY ACME CORP"), (28, "3,200.00"), (34, "15,604.01")],
             [(0, "03/22"), (7, "Transfer to 1234-5678"), (22, "-1,000.00"), (34, "14,404.01")]]
AMOUNTS = [[(0, "1,234,567")], [(0, "$3,450,000.00")], [(0, "987,654,321")],
           [(0, "12,345.67")], [(0, "USD 1,000,000.00")], [(0, "(1,234.56)")]]
DATES = [[(0, "2024-03-15"), (10, "15/03/2024"), (20, "Mar 15, 2024")],
         [(0, "Issued: 1 January 2025"), (16, "Expires: 31 Dec 2030")]]
CERT = [[(6, "CERTIFICATE OF COMPLETION")], [(8, "This is to certify that")],
        [(10, "John A. Smith")], [(0, "Date: March 15, 2024"), (22, "No. CERT-00042")]]
FORM = [[(0, "Name"), (8, "Jane Doe")], [(0, "Phone"), (8, "+1 (555) 013-2479")],
        [(0, "Email"), (8, "jane.doe@example.com")], [(0, "Amount"), (8, "1,250.00 USD")]]
IDCARD = [[(0, "姓名"), (3, "张三")], [(0, "性别"), (3, "男"), (7, "民族"), (10, "汉")],
          [(0, "住址"), (3, "北京市海淀区中关村大街1号")],
          [(0, "公民身份号码"), (7, "110101199001011234")]]
FAPIAO = [[(0, "发票号码：12345678"), (12, "开票日期：2024年03月15日")],
          [(0, "办公用品"), (8, "10"), (12, "12.80"), (16, "128.00")],
          [(0, "价税合计（小写）¥285.89")]]
CNFORM = [[(0, "申请人"), (5, "李四")], [(0, "联系电话"), (5, "138-0013-8000")],
          [(0, "金额"), (5, "¥1,280.00元")], [(0, "日期"), (5, "2024年3月15日")]]
CODE = ["int main(void) {", "    for (int i = 0; i < n; i++) {", "        s += a[i];", "    }",
        "    return s;", "}"]
TICKS = ["✓ Paid", "Approved ✓", "✓"]


def _face(path, size, index=0):
    from PIL import ImageFont

    return ImageFont.truetype(path, size, index=index) if os.path.exists(path) else None


def _rows(rows, face, size, boxes=False):
    from PIL import Image, ImageDraw

    width, pitch = size * 42 + 60, size * 2
    img = Image.new("RGB", (width, pitch * len(rows) + 60), "white")
    draw = ImageDraw.Draw(img)
    for i, row in enumerate(rows):
        y = 30 + i * pitch
        for j, (em, text) in enumerate(row):
            x = 30 + em * size
            draw.text((x, y), text, font=face, fill=(20, 20, 20))
            if boxes:  # the cell's frame, as a printed grid has
                right = 30 + row[j + 1][0] * size - size * 0.4 if j + 1 < len(row) else width - 20
                draw.rectangle([x - size * 0.4, y - size * 0.45, right, y + size * 1.55],
                               outline=(60, 60, 60), width=max(1, size // 12))
    return img, [" ".join(text for _, text in row) for row in rows]


def _listing(face, size):
    from PIL import Image, ImageDraw

    pitch = int(size * 1.5)
    img = Image.new("RGB", (size * 22, pitch * len(CODE) + 40), (30, 30, 30))
    draw = ImageDraw.Draw(img)
    draw.rectangle([6, 6, img.width - 7, img.height - 7], outline=(128, 128, 128), width=2)
    for i, line in enumerate(CODE):
        draw.text((20, 20 + i * pitch), line, font=face, fill=(220, 220, 220))
    return img, [line.strip() for line in CODE]


def _page_number(face, size):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (1654, 2339), "white")
    draw = ImageDraw.Draw(img)
    body = [f"Line {i + 1} of the body text of this page." for i in range(16)]
    for i, line in enumerate(body):
        draw.text((160, 200 + i * int(size * 1.8)), line, font=face, fill=0)
    width = draw.textlength("- 1 -", font=face)
    draw.text((827 - width / 2, 2339 - 180), "- 1 -", font=face, fill=0)
    return img.resize((728, 1029), Image.LANCZOS), body + ["- 1 -"]  # as printed


def scenes():
    """``(group, image, truth lines)`` of every drawn scene."""
    for path in LATIN:
        for size in (16, 24):
            face = _face(path, size)
            for group, rows, boxes in (("invoice", INVOICE, True), ("statement", STATEMENT, False),
                                       ("amounts", AMOUNTS, False), ("dates", DATES, False),
                                       ("certificate", CERT, False), ("form", FORM, True)):
                yield (group, *_rows(rows, face, size, boxes))
    for path, index in CJK:
        for size in (16, 24):
            face = _face(path, size, index)
            if face is None:
                continue
            for group, rows, boxes in (("id card", IDCARD, False), ("fapiao", FAPIAO, True),
                                       ("cn form", CNFORM, True)):
                yield (group, *_rows(rows, face, size, boxes))
    for path in MONO:
        for size in (11, 14):
            face = _face(path, size)
            yield ("mono amounts", *_rows(AMOUNTS + STATEMENT, face, size))
            yield ("listing", *_listing(_face(path, size + 3), size + 3))
    for path in LATIN:
        yield ("page number", *_page_number(_face(path, 24), 24))
    for path, index in ((LATIN[0], 0), (CJK[0][0], 2)):
        for size in (16, 22):
            yield (("ticks", *_rows([[(0, t)] for t in TICKS], _face(path, size, index), size)))


def main(argv=None) -> None:
    from bench_ocr_layout import read_rapidocr, read_skiff

    from skiff.kernels.ocr.synth import char_accuracy

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(HERE / "results" / "ocr-fields.md"))
    ap.add_argument("--no-write", action="store_true", help="print only")
    a = ap.parse_args(argv)
    load = os.getloadavg()[0]
    took = {}
    drawn = list(scenes())
    images = [np.asarray(im) for _, im, _ in drawn]
    score: dict = {}
    for name, read in (("skiff", read_skiff), ("RapidOCR", read_rapidocr)):
        texts, seconds = read(images, a.threads)
        took[name] = seconds
        print(f"{name}: {seconds:.1f} s", flush=True)
        for (group, _, truth), text in zip(drawn, texts, strict=True):
            got = {" ".join(line.split()) for line in text.splitlines()}
            exact = sum(line in got for line in truth) / len(truth)
            chars = char_accuracy(" ".join(" ".join(text.split()).split()),
                                  " ".join(" ".join(truth).split()))
            score.setdefault(group, {}).setdefault(name, []).append((exact, chars))
    rows = ["| group | scenes | skiff lines exact | RapidOCR lines exact | skiff chars | "
            "RapidOCR chars |", "|---|---|---|---|---|---|"]
    for group, by in score.items():
        s, r = np.mean(by["skiff"], axis=0), np.mean(by["RapidOCR"], axis=0)
        rows.append(f"| {group} | {len(by['skiff'])} | {s[0]:.3f} | {r[0]:.3f} | {s[1]:.3f} | "
                    f"{r[1]:.3f} |")
    allx = {m: np.mean([v for by in score.values() for v in by[m]], axis=0)
            for m in ("skiff", "RapidOCR")}
    rows.append(f"| all | {len(drawn)} | {allx['skiff'][0]:.3f} | {allx['RapidOCR'][0]:.3f} | "
                f"{allx['skiff'][1]:.3f} | {allx['RapidOCR'][1]:.3f} |")
    rows += ["", f"Reading time, {a.threads} thread(s) each, in one process: skiff "
             f"{took['skiff']:.1f} s, RapidOCR {took['RapidOCR']:.1f} s (**"
             f"{took['RapidOCR'] / took['skiff']:.2f}x**); load average {load:.2f} before the run "
             f"on {os.cpu_count()} cores (shared with other work: the ratio is the figure to "
             f"read). RapidOCR returns a box per run of text, not per line, so its exact-line "
             f"share is not like for like; the character accuracy is."]
    print("\n".join(rows))
    if not a.no_write:
        Path(a.out).write_text("# OCR of document fields\n\n`OPENBLAS_NUM_THREADS=1 "
                               ".venv/bin/python benchmarks/bench_ocr_documents.py`\n\n"
                               + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
