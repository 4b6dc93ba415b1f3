"""OCR of scanned PDFs: skiff against RapidOCR 3.10 on pages scanned at 100 dpi, kept as JPEG
inside a PDF and rendered at 200 dpi, as a scanned document reaches a user.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_scans.py [--pages 24]
        [--threads 2]

Each page holds 8-12 Latin lines (the `synth` English pool and lines of a word and a number,
"Room 204: ...", "figure 10"), in one of DejaVu Sans / Serif and Liberation Sans / Serif /
Mono at 22-30 px on an 800 x 1000 page, saved by Pillow as a PDF (each page a JPEG inside,
100 dpi) and rendered by pypdfium2 at 200 dpi (`images.iter_pages`, what `%ocr file.pdf`
does); every method reads the same rendered pages in its own process with the same threads:
`skiff` (defaults), `skiff-no-gaps` (without `spacing.missed_spaces`, as before round 20)
and RapidOCR (`limit_type=max, 960`). Reported: character accuracy (spaces count: "line7"
for "line 7" is an error), the lines read exactly, the lines whose only error is a missing
or extra space, and seconds. Writes ``results/ocr-scans.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from results_file import machine_line, publish, run_workers  # noqa: E402

METHODS = ("skiff", "skiff-no-gaps", "rapidocr")
FACES = ("dejavu/DejaVuSans.ttf", "dejavu/DejaVuSerif.ttf",
         "liberation2/LiberationSans-Regular.ttf", "liberation2/LiberationSerif-Regular.ttf",
         "liberation2/LiberationMono-Regular.ttf")
WORDS = ("line", "item", "page", "Room", "section", "Step", "figure", "table", "Chapter",
         "order", "Invoice", "box", "unit", "Level", "floor", "gate", "row", "seat")


def scans(pages: int, folder: str) -> tuple[list[np.ndarray], list[list[str]]]:
    """The rendered pages of a scanned PDF written to ``folder``, and each page's lines."""
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr import synth
    from skiff.kernels.ocr.images import iter_pages

    faces = [f for f in (f"/usr/share/fonts/truetype/{p}" for p in FACES) if os.path.exists(f)]
    images, truth = [], []
    for i in range(pages):
        rng = random.Random(f"scan-{i}")
        font = ImageFont.truetype(rng.choice(faces), rng.randint(22, 30))
        page = Image.new("RGB", (800, 1000), "white")
        draw = ImageDraw.Draw(page)
        lines = []
        for j in range(rng.randint(8, 12)):
            if rng.random() < 0.5:
                text = rng.choice(synth.ENGLISH)
            else:
                text = f"{rng.choice(WORDS)} {rng.randint(1, 250)}"
                if rng.random() < 0.6:
                    text += ": " + rng.choice(synth.ENGLISH)[:rng.randint(12, 30)].strip()
            while text and font.getlength(text) > 720:
                text = text[:-1].strip()
            lines.append(text)
            draw.text((40, 40 + 80 * j), text, font=font, fill="black")
        images.append(page)
        truth.append(lines)
    pdf = str(Path(folder) / "scans.pdf")
    images[0].save(pdf, save_all=True, append_images=images[1:], resolution=100)
    return [page for page, _ in iter_pages(pdf)], truth


def worker(method: str, pages: int, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        items, truth = scans(pages, folder)
    t0 = time.perf_counter()
    if method.startswith("skiff"):
        from skiff.kernels.ocr import OcrPipeline, reading

        if method == "skiff-no-gaps":
            reading.missed_spaces = lambda *a, **k: None
        pipe = OcrPipeline("ch", device="cpu", threads=threads)
        read = [[line.text for line in r.lines] for r in pipe.run(items)]
    else:
        from bench_ocr import _no_spin, _rapid_engine

        _no_spin()
        engine = _rapid_engine(threads)
        read = [list(engine(img).txts or ()) for img in items]
    seconds = time.perf_counter() - t0
    from skiff.kernels.ocr.synth import char_accuracy

    acc, exact, spacing, lines = [], 0, 0, 0
    for got, want in zip(read, truth, strict=True):
        acc.append(char_accuracy("\n".join(got), "\n".join(want)))
        squeezed = {"".join(t.split()) for t in got}
        for t in want:
            lines += 1
            if t in got:
                exact += 1
            elif "".join(t.split()) in squeezed:
                spacing += 1
    return {"acc": acc, "exact": exact, "spacing": spacing, "lines": lines,
            "seconds": seconds}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=24)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=METHODS)
    ap.add_argument("--results", default=str(HERE / "results" / "ocr-scans.md"))
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker, a.pages, a.threads)))
        return 0
    got = run_workers(__file__, METHODS,
                      ["--pages", a.pages, "--threads", a.threads])
    cmd = ("OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_scans.py "
           f"--pages {a.pages} --threads {a.threads}")
    lines = ["# OCR of scanned PDFs", "",
             f"Command: `{cmd}`  ",
             machine_line(a.threads), "",
             f"{a.pages} pages of 8-12 Latin lines at 22-30 px (DejaVu and Liberation faces), "
             "scanned at 100 dpi into a PDF (JPEG pages, Pillow) and rendered at 200 dpi; "
             "character accuracy counts spaces. `skiff-no-gaps`: without "
             "`spacing.missed_spaces` (before round 20). RapidOCR 3.10 with `limit_type=max, "
             "960`, spin-waiting off as skiff's.", "",
             "| method | char accuracy | lines exact | lines wrong only in spacing | seconds |",
             "|---|---|---|---|---|"]
    for m in METHODS:
        g = got[m]
        lines.append(f"| {m} | {np.mean(g['acc']):.4f} | {g['exact']}/{g['lines']} | "
                     f"{g['spacing']} | {g['seconds']:.1f} |")

    publish(a.results, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
