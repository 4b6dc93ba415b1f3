"""OCR of office documents: skiff and RapidOCR 3.10 on characters and reading order.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_office.py [--dir D] [--no-write]

writes benchmarks/results/ocr-office.md (``--out FILE`` elsewhere). The documents are drawn
here by a seeded generator (``draw(folder, seed)``), as an office user hands them over: a
two-page invoice PDF with a table (vector text), a scanned letter (grey paper, turned 1-3
degrees, a coffee ring, JPEG 60), a supermarket receipt photo (narrow, long, faded thermal
print, perspective), a Chinese/English form with check boxes, a spreadsheet screenshot, a
slide with white text on a dark gradient, a page with an 8-px footnote, and a three-column
newsletter. The truth is what was drawn, in the order a person reads it (a check box as
its state, "☐" or "☑", before its label; a drawn bullet as "•").

Two figures a document: **chars**, the character accuracy of the whole text (runs of
white space as one space, lines joined by a space), and **order**, the share of the truth's
words that the output reads *in order*: the longest common subsequence of the two word
sequences over the words the output has at all (so a misread word costs chars, not order;
a column read across, or a table read down, costs order). RapidOCR's text is its boxes in
the order it returns them, one a line, as its users paste ``"\\n".join(result.txts)``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

T, N = "/usr/share/fonts/truetype/", "/usr/share/fonts/opentype/noto/"
SANS, SERIF = T + "dejavu/DejaVuSans.ttf", T + "liberation2/LiberationSerif-Regular.ttf"
SANS_B = T + "dejavu/DejaVuSans-Bold.ttf"
LSANS = T + "liberation2/LiberationSans-Regular.ttf"
MONO = T + "liberation2/LiberationMono-Regular.ttf"
CJK = (N + "NotoSansCJK-Regular.ttc", 2)

WORDS = ("the of and to in is for on that with as by this we are from be at or it our an "
         "will have your which all has more their about can new been report office team "
         "service customer market quarter review project budget meeting result plan staff "
         "order policy update please thank note account delivery schedule").split()


def _face(path, size, index=0):
    from PIL import ImageFont

    return ImageFont.truetype(path, size, index=index)


def _sentences(rng, n_words):
    words = [WORDS[i] for i in rng.integers(0, len(WORDS), n_words)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def _wrap(rng, face, width, n_lines):
    """``n_lines`` of prose words that fit ``width`` px in ``face``."""
    lines = []
    for _ in range(n_lines):
        line = ""
        while True:
            w = WORDS[int(rng.integers(0, len(WORDS)))]
            cand = (line + " " + w).strip()
            if face.getlength(cand) > width:
                break
            line = cand
        lines.append(line)
    return lines


def invoice_pdf(path, rng):
    """Two A4 pages of vector text: a header, a table of 30 items, totals on page 2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    items = ["Printer paper A4", "Toner cartridge", "Desk lamp", "Office chair",
             "USB cable", "Stapler", "Notebook", "Whiteboard marker", "Monitor stand",
             "Keyboard", "Mouse pad", "Envelope pack"]
    rows = []
    for i in range(30):
        qty, unit = int(rng.integers(1, 20)), int(rng.integers(100, 9000)) / 100
        rows.append([f"{i + 1}", items[i % len(items)], f"{qty}", f"{unit:.2f}",
                     f"{qty * unit:.2f}"])
    total = sum(float(r[4]) for r in rows)
    cols = [0.08, 0.14, 0.56, 0.68, 0.84]
    pages_truth = []
    with PdfPages(path) as pdf:
        for page, chunk in enumerate((rows[:18], rows[18:])):
            fig = plt.figure(figsize=(8.27, 11.69))
            truth = []
            y = 0.93
            if page == 0:
                fig.text(0.08, y, "ACME Office Supplies Ltd", fontsize=16, weight="bold")
                fig.text(0.62, y, "INVOICE INV-20417", fontsize=14)
                truth += ["ACME Office Supplies Ltd INVOICE INV-20417"]
                y -= 0.035
                fig.text(0.08, y, "12 Harbour Road, Leeds LS1 4AB", fontsize=10)
                fig.text(0.62, y, "Date: 2026-11-28", fontsize=10)
                truth += ["12 Harbour Road, Leeds LS1 4AB Date: 2026-11-28"]
                y -= 0.05
            else:
                fig.text(0.08, y, "INVOICE INV-20417 (continued)", fontsize=12)
                truth += ["INVOICE INV-20417 (continued)"]
                y -= 0.05
            head = ["No", "Description", "Qty", "Unit", "Amount"]
            for x, h in zip(cols, head):
                fig.text(x, y, h, fontsize=10, weight="bold")
            truth.append(" ".join(head))
            fig.add_artist(plt.Line2D([0.07, 0.93], [y - 0.008, y - 0.008], color="k", lw=0.8))
            for r in chunk:
                y -= 0.03
                for x, c in zip(cols, r):
                    fig.text(x, y, c, fontsize=10)
                truth.append(" ".join(r))
                fig.add_artist(plt.Line2D([0.07, 0.93], [y - 0.008, y - 0.008],
                                          color="0.6", lw=0.5))
            if page == 1:
                y -= 0.05
                fig.text(0.68, y, "Total GBP", fontsize=11, weight="bold")
                fig.text(0.84, y, f"{total:.2f}", fontsize=11, weight="bold")
                truth.append(f"Total GBP {total:.2f}")
            fig.text(0.45, 0.04, f"Page {page + 1} of 2", fontsize=9)
            truth.append(f"Page {page + 1} of 2")
            pdf.savefig(fig)
            plt.close(fig)
            pages_truth.append(truth)
    return pages_truth


def letter(rng):
    """A scanned letter: grey paper, turned 1-3 degrees, a coffee ring, JPEG 60."""
    from PIL import Image, ImageDraw, ImageFilter

    w, h, size = 1240, 1500, 24
    face = _face(SERIF, size)
    img = Image.new("L", (w, h), 255)
    d = ImageDraw.Draw(img)
    truth = ["Northfield Housing Association", "27 Mill Lane, Bristol BS2 8QT",
             "14 November 2026", "Dear Ms Patel,"]
    y = 120
    for i, t in enumerate(truth):
        d.text((110, y), t, font=_face(SERIF, 30) if i == 0 else face, fill=0)
        y += 60 if i in (1, 2) else 44
    body = _wrap(rng, face, w - 240, 14)
    for t in body:
        d.text((110, y), t, font=face, fill=0)
        y += 38
    y += 40
    for t in ("Yours sincerely,", "Daniel Hughes", "Tenancy Officer"):
        d.text((110, y), t, font=face, fill=0)
        y += 44
    truth += body + ["Yours sincerely,", "Daniel Hughes", "Tenancy Officer"]
    a = np.asarray(img, np.float32)
    # coffee ring: a blurred brown annulus multiplied in
    yy, xx = np.mgrid[0:h, 0:w]
    cx, cy, r = 900, 700, 170
    ring = np.exp(-((np.hypot(xx - cx, yy - cy) - r) ** 2) / (2 * 9.0 ** 2))
    stain = 1 - 0.35 * ring - 0.08 * (np.hypot(xx - cx, yy - cy) < r)
    paper = 222 + rng.normal(0, 6, (h, w))
    a = a / 255 * paper * stain
    img = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).convert("RGB")
    angle = float(rng.choice([-1, 1]) * rng.uniform(1, 3))
    img = img.rotate(angle, resample=Image.BICUBIC, expand=True, fillcolor=(60, 60, 60))
    img = img.filter(ImageFilter.GaussianBlur(0.6))
    return img, truth, "jpeg60"


def receipt(rng):
    """A supermarket receipt photo: narrow and long, faded thermal print, in perspective."""
    import cv2
    from PIL import Image, ImageDraw

    size, w = 20, 400
    face = _face(MONO, size)
    items = [("MILK 2L", 1.45), ("BREAD WHOLEMEAL", 1.10), ("BANANAS", 0.98),
             ("CHEDDAR 400G", 3.25), ("EGGS X12", 2.79), ("COFFEE BEANS", 5.49),
             ("TOMATOES", 1.20), ("PASTA 500G", 0.89), ("OLIVE OIL", 6.75),
             ("YOGHURT", 1.35), ("APPLES", 2.10), ("RICE 1KG", 1.99)]
    rng.shuffle(items)
    lines = [("c", "FRESHWAY SUPERMARKET"), ("c", "High St, Oxford"),
             ("c", "VAT No 284 1173 55"), ("l", "")]
    for name, p in items:
        lines.append(("r", (name, f"{p:.2f}")))
    total = sum(p for _, p in items)
    lines += [("l", ""), ("r", ("TOTAL", f"{total:.2f}")), ("r", ("CARD", f"{total:.2f}")),
              ("l", ""), ("c", "28/11/2026 17:42"), ("c", "THANK YOU")]
    h = 70 + 30 * len(lines) + 40
    img = Image.new("L", (w, h), 255)
    d = ImageDraw.Draw(img)
    truth = []
    y = 50
    for kind, t in lines:
        if kind == "c" and t:
            d.text(((w - face.getlength(t)) / 2, y), t, font=face, fill=0)
            truth.append(t)
        elif kind == "r":
            d.text((24, y), t[0], font=face, fill=0)
            d.text((w - 24 - face.getlength(t[1]), y), t[1], font=face, fill=0)
            truth.append(f"{t[0]} {t[1]}")
        y += 30
    a = np.asarray(img, np.float32) / 255
    fade = np.linspace(0.25, 0.75, h)[:, None] * (0.85 + 0.3 * rng.random((1, w)))
    a = 1 - (1 - a) * (1 - np.clip(fade, 0, 0.8))
    a = (a * 245).astype(np.uint8)
    # on a dark table, in perspective
    canvas = np.full((h + 160, w + 260), 70, np.uint8)
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    dst = np.float32([[150, 60], [w + 110, 90], [w + 140, h + 110], [120, h + 80]])
    m = cv2.getPerspectiveTransform(src, dst)
    out = cv2.warpPerspective(a, m, canvas.shape[::-1], borderValue=70)
    mask = cv2.warpPerspective(np.ones_like(a), m, canvas.shape[::-1], borderValue=0)
    canvas = np.where(mask > 0, out, canvas)
    canvas = np.clip(canvas + rng.normal(0, 4, canvas.shape), 0, 255).astype(np.uint8)
    return Image.fromarray(canvas).convert("RGB"), truth, "jpeg85"


def form(rng):
    """A bilingual Chinese/English form with check boxes, one ticked in each group."""
    from PIL import Image, ImageDraw

    w, h = 1100, 640
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    f, fb = _face(CJK[0], 24, CJK[1]), _face(CJK[0], 32, CJK[1])
    title = "入境登记表 Arrival Registration Form"
    d.text(((w - fb.getlength(title)) / 2, 40), title, font=fb, fill=0)
    truth = [title]
    rows = [("姓名 Name:", "王小明 WANG Xiaoming"), ("护照号码 Passport No:", "E12345678"),
            ("出生日期 Date of Birth:", "1990-05-17")]
    y = 130
    for lab, val in rows:
        d.text((60, y), lab, font=f, fill=0)
        x = 60 + f.getlength(lab) + 20
        d.text((x, y), val, font=f, fill=(20, 40, 140))
        d.line([(x - 6, y + 34), (w - 60, y + 34)], fill=0, width=1)
        truth.append(f"{lab} {val}")
        y += 70
    groups = [("性别 Sex:", ["男 Male", "女 Female"]),
              ("入境目的 Purpose:", ["旅游 Tourism", "商务 Business", "学习 Study"])]
    for lab, opts in groups:
        d.text((60, y), lab, font=f, fill=0)
        x = 60 + f.getlength(lab) + 30
        tick = int(rng.integers(0, len(opts)))
        parts = [lab]
        for i, o in enumerate(opts):
            d.rectangle([x, y + 6, x + 22, y + 28], outline=0, width=2)
            if i == tick:
                d.line([(x + 4, y + 17), (x + 10, y + 24), (x + 19, y + 9)], fill=0, width=3)
            d.text((x + 32, y), o, font=f, fill=0)
            parts.append(("\u2611 " if i == tick else "\u2610 ") + o)
            x += 32 + f.getlength(o) + 40
        truth.append(" ".join(parts))
        y += 70
    d.text((60, y + 20), "签名 Signature:", font=f, fill=0)
    truth.append("签名 Signature:")
    return img, truth, "png"


def spreadsheet(rng):
    """A spreadsheet screenshot: column letters, row numbers, grid, a grey header row."""
    from PIL import Image, ImageDraw

    f = _face(LSANS, 15)
    widths = [44, 150, 90, 90, 90, 110]
    x0 = np.cumsum([0] + widths)
    rows_n, rh = 14, 24
    img = Image.new("RGB", (int(x0[-1]) + 1, rh * (rows_n + 2) + 1), "white")
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, x0[-1], rh], fill=(235, 235, 235))
    d.rectangle([0, 0, widths[0], img.height], fill=(235, 235, 235))
    regions = ["North", "South", "East", "West", "Central"]
    header = ["Region", "Q1", "Q2", "Q3", "Total"]
    data = [header]
    for _ in range(rows_n - 1):
        q = rng.integers(1000, 99999, 3)
        data.append([regions[int(rng.integers(0, 5))], *(f"{v:,}" for v in q),
                     f"{int(q.sum()):,}"])
    truth = []
    for c, letter_ in enumerate("ABCDE"):
        cx = (x0[c + 1] + x0[c + 2]) / 2
        d.text((cx - f.getlength(letter_) / 2, 4), letter_, font=f, fill=(60, 60, 60))
    truth.append("A B C D E")
    for r, row in enumerate(data):
        y = rh * (r + 1)
        d.text((widths[0] / 2 - f.getlength(str(r + 1)) / 2, y + 4), str(r + 1), font=f,
               fill=(60, 60, 60))
        for c, cell in enumerate(row):
            if c == 0 or r == 0:
                x = x0[c + 1] + 4
            else:
                x = x0[c + 2] - 4 - f.getlength(cell)
            d.text((x, y + 4), cell, font=_face(SANS_B, 14) if r == 0 else f, fill=0)
        truth.append(" ".join([str(r + 1)] + row))
    for x in x0:
        d.line([(x, 0), (x, img.height)], fill=(200, 200, 200))
    for r in range(rows_n + 2):
        d.line([(0, r * rh), (img.width, r * rh)], fill=(200, 200, 200))
    return img, truth, "png"


def slide(rng):
    """A slide: white text on a dark blue gradient."""
    from PIL import Image, ImageDraw

    w, h = 1280, 720
    g = np.linspace(0, 1, w)[None, :] * 0.5 + np.linspace(0, 1, h)[:, None] * 0.5
    a = np.stack([10 + 30 * g, 20 + 40 * g, 60 + 80 * g], -1)
    img = Image.fromarray(a.astype(np.uint8))
    d = ImageDraw.Draw(img)
    title = "Quarterly Results 2026"
    d.text((80, 70), title, font=_face(SANS_B, 54), fill="white")
    truth = [title]
    bullets = ["Revenue up 12% to 4.8 million", "New offices in Lyon and Porto",
               "Customer churn down to 3.1%", "Hiring 25 engineers in Q1",
               "Next review: 15 January 2027"]
    f = _face(SANS, 32)
    for i, b in enumerate(bullets):
        y = 220 + 70 * i
        d.ellipse([84, y + 14, 96, y + 26], fill=(250, 200, 60))
        d.text((120, y), b, font=f, fill="white")
        truth.append("\u2022 " + b)
    d.text((1080, 660), "Page 3", font=_face(SANS, 20), fill=(200, 200, 220))
    truth.append("Page 3")
    return img, truth, "png"


def footnote(rng):
    """A page of body text with a footnote in 8-px print under a rule."""
    from PIL import Image, ImageDraw

    w, h = 1000, 900
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    f = _face(SERIF, 22)
    body = _wrap(rng, f, w - 160, 12)
    body[3] = body[3] + "1"
    y = 60
    for t in body:
        d.text((80, y), t, font=f, fill=0)
        y += 34
    d.line([(80, 760), (380, 760)], fill=0, width=1)
    fn = _face(SERIF, 8)
    notes = ["1 See the annual report 2025, table 4, for the figures by region.",
             "Source: Office for National Statistics, release of 12 March 2026."]
    for i, t in enumerate(notes):
        d.text((80, 772 + 12 * i), t, font=fn, fill=0)
    return img, body + notes, "png"


def newsletter(rng):
    """A three-column newsletter: a masthead across, then columns read top to bottom."""
    from PIL import Image, ImageDraw

    w, h = 1400, 1000
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    head = "The Riverside Bulletin"
    d.text((60, 40), head, font=_face(SERIF, 56), fill=0)
    sub = "Issue 42 November 2026"
    d.text((60, 115), sub, font=_face(SANS, 22), fill=(80, 80, 80))
    d.line([(60, 155), (w - 60, 155)], fill=0, width=3)
    truth = [head, sub]
    f, fh = _face(SERIF, 20), _face(SANS_B, 24)
    colw, gap = 400, 40
    heads = ["Garden Club News", "Council Meeting", "Library Hours"]
    for c in range(3):
        x = 60 + c * (colw + gap)
        d.text((x, 180), heads[c], font=fh, fill=0)
        truth.append(heads[c])
        lines = _wrap(rng, f, colw, 24)
        for i, t in enumerate(lines):
            d.text((x, 225 + 30 * i), t, font=f, fill=0)
        truth += lines
    return img, truth, "png"


DOCS = [letter, receipt, form, spreadsheet, slide, footnote, newsletter]


def draw(folder, seed=0):
    """Write the documents into ``folder``; returns [(file, [truth lines a page])]."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = [(folder / "invoice.pdf", invoice_pdf(folder / "invoice.pdf", rng))]
    for make in DOCS:
        img, truth, kind = make(rng)
        if kind.startswith("jpeg"):
            p = folder / f"{make.__name__}.jpg"
            img.save(p, quality=int(kind[4:]))
        else:
            p = folder / f"{make.__name__}.png"
            img.save(p)
        out.append((p, [truth]))
    return out


def pages_of(path, dpi=200):
    """RGB arrays of a file's pages, as a RapidOCR user makes them (pypdfium2 for a PDF)."""
    from PIL import Image

    if str(path).endswith(".pdf"):
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(str(path))
        return [np.asarray(doc[i].render(scale=dpi / 72).to_pil().convert("RGB"))
                for i in range(len(doc))]
    return [np.asarray(Image.open(path).convert("RGB"))]


def order_score(text, truth):
    """The share of the truth's words found in ``text`` that are read in the truth's order:
    LCS of the word sequences over the size of their multiset intersection."""
    a, b = text.split(), truth.split()
    common = sum((Counter(a) & Counter(b)).values())
    if not common:
        return 0.0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            cur[j + 1] = prev[j] + 1 if x == y else max(prev[j + 1], cur[j])
        prev = cur
    return prev[-1] / common


def read_skiff(files, threads):
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", threads=threads)
    pipe(pages_of(files[0])[0])
    t0 = time.perf_counter()
    texts = [r.text for r in pipe.run([str(f) for f in files])]
    return texts, time.perf_counter() - t0


def read_rapidocr(files, threads):
    from rapidocr import RapidOCR

    engine = RapidOCR(params={
        "Det.limit_type": "max", "Det.limit_side_len": 960,
        "EngineConfig.onnxruntime.intra_op_num_threads": threads,
        "EngineConfig.onnxruntime.inter_op_num_threads": 1, "Global.log_level": "error"})
    engine(pages_of(files[0])[0][..., ::-1].copy())
    t0 = time.perf_counter()
    texts = []
    for f in files:
        for img in pages_of(f):
            out = engine(img[..., ::-1].copy())  # RapidOCR takes BGR arrays
            texts.append("\n".join(out.txts) if out.txts else "")
    return texts, time.perf_counter() - t0


def score(texts, drawn):
    from skiff.kernels.ocr.synth import char_accuracy

    truths = [(f"{Path(f).stem}" + (f" p{i + 1}" if len(pages) > 1 else ""), "\n".join(t))
              for f, pages in drawn for i, t in enumerate(pages)]
    rows = []
    for text, (name, truth) in zip(texts, truths):
        # a drawn bullet is "•" whichever round dot an engine writes for it
        flat, tflat = " ".join(text.replace("\u25cf", "\u2022").split()), " ".join(truth.split())
        rows.append((name, char_accuracy(flat, tflat), order_score(flat, tflat)))
    return rows


def main(argv=None) -> None:
    from results_file import machine_line, publish

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=None, help="where the documents are drawn (a temp dir)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results" / "ocr-office.md"))
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    import tempfile

    folder = a.dir or tempfile.mkdtemp(prefix="ocr-office-")
    drawn = draw(folder, a.seed)
    files = [f for f, _ in drawn]
    load = os.getloadavg()[0]
    res, took = {}, {}
    for name, read in (("skiff", read_skiff), ("RapidOCR", read_rapidocr)):
        texts, took[name] = read(files, a.threads)
        res[name] = score(texts, drawn)
        if a.dir:
            for (doc, *_), t in zip(res[name], texts):
                Path(folder, f"{doc.replace(' ', '_')}.{name}.txt").write_text(t)
    lines = ["# OCR of office documents (skiff vs RapidOCR 3.10, limit_type=max 960)", "",
             f"`benchmarks/bench_ocr_office.py --seed {a.seed}`", "", machine_line(a.threads),
             "",
             "| document | skiff chars | RapidOCR chars | skiff order | RapidOCR order |",
             "|---|---|---|---|---|"]
    for s, r in zip(res["skiff"], res["RapidOCR"]):
        lines.append(f"| {s[0]} | {s[1]:.3f} | {r[1]:.3f} | {s[2]:.3f} | {r[2]:.3f} |")
    ms, mr = np.mean([s[1:] for s in res["skiff"]], 0), np.mean([r[1:] for r in res["RapidOCR"]], 0)
    lines.append(f"| mean | {ms[0]:.3f} | {mr[0]:.3f} | {ms[1]:.3f} | {mr[1]:.3f} |")
    lines += ["", f"Reading time, {a.threads} thread(s) each: skiff {took['skiff']:.1f} s, "
              f"RapidOCR {took['RapidOCR']:.1f} s; load average {load:.2f} before the run."]
    if a.no_write:
        print("\n".join(lines))
    else:
        publish(a.out, lines)


if __name__ == "__main__":
    main()
