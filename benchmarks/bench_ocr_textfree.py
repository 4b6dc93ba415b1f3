"""OCR of images with no text at all: how many lines skiff and RapidOCR 3.10 make up.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_textfree.py [--per-kind 10]
        [--threads 2]

Draws ``--per-kind`` images of each of eight kinds a page or photo holds besides print:
vertical bars, a table's rules, a ruler's ticks, outlines (circles, rectangles, triangles),
dots, pairs of stacked bars (a seven-segment "1" with no display), colour fields with soft
edges, and a grid of short dashes; 200-700 px, a third of them with sensor noise (fixed
seed). Each method reads them in its own process with the same threads; every line it
returns is a false one. Reported: false lines per kind and in all, and the commonest
readings. A rule that reads a crop again should leave skiff's count where it was. Writes
``results/ocr-textfree.md``.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from results_file import machine_line, publish, run_workers  # noqa: E402

KINDS = ("bars", "table rules", "ruler ticks", "outlines", "dots", "stacked bars",
         "colour fields", "dash grid")


def draw(kind: str, rng: random.Random, seed: int) -> np.ndarray:
    import cv2

    w, h = rng.randint(200, 700), rng.randint(150, 600)
    img = np.full((h, w, 3), rng.randint(180, 255), np.uint8)
    ink = tuple(rng.randint(0, 90) for _ in range(3))
    for _ in range(rng.randint(1, 8)):
        x, y = rng.randint(5, w - 12), rng.randint(5, h - 12)
        if kind == "bars":
            top, size = y // 2, rng.randint(15, h // 2)
            cv2.rectangle(img, (x, top), (x + rng.randint(1, 6), top + size), ink, -1)
        elif kind == "table rules":
            for c in range(rng.randint(10, 40), w, rng.randint(40, 120)):
                cv2.line(img, (c, 0), (c, h), ink, rng.randint(1, 3))
            for r in range(rng.randint(10, 40), h, rng.randint(25, 60)):
                cv2.line(img, (0, r), (w, r), ink, 1)
            break
        elif kind == "ruler ticks":
            for c in range(10, w - 10, rng.randint(6, 15)):
                cv2.line(img, (c, h // 2), (c, h // 2 + rng.choice((8, 14, 20))), ink, 1)
            break
        elif kind == "outlines":
            r = rng.randint(5, 40)
            shape = rng.choice(("circle", "rect", "triangle"))
            if shape == "circle":
                cv2.circle(img, (x, y), r, ink, rng.choice((1, 2)))
            elif shape == "rect":
                cv2.rectangle(img, (x - r, y - r), (x + r, y + r // 2), ink, rng.choice((1, 2)))
            else:
                pts = np.array([[x, y - r], [x - r, y + r], [x + r, y + r]], np.int32)
                cv2.polylines(img, [pts], True, ink, rng.choice((1, 2)))
        elif kind == "dots":
            cv2.circle(img, (x, y), rng.randint(1, 4), ink, -1)
        elif kind == "stacked bars":
            size = rng.randint(10, 30)
            y = min(y, h - 2 * size - 8)
            cv2.rectangle(img, (x, y), (x + 4, y + size), ink, -1)
            cv2.rectangle(img, (x, y + size + 3), (x + 4, y + 2 * size + 3), ink, -1)
        elif kind == "colour fields":
            colour = tuple(rng.randint(0, 255) for _ in range(3))
            cv2.rectangle(img, (x, y), (min(w, x + rng.randint(30, 200)),
                                        min(h, y + rng.randint(20, 150))), colour, -1)
        else:  # dash grid
            step = rng.randint(12, 30)
            for r in range(10, h - 10, step):
                for c in range(10, w - 20, step):
                    cv2.line(img, (c, r), (c + step // 2, r), ink, 1)
            break
    if kind == "colour fields":
        img = cv2.GaussianBlur(img, (0, 0), 3)
    if rng.random() < 0.33:
        noise = np.random.default_rng(seed).normal(0, 15, img.shape)
        img = np.clip(img + noise, 0, 255).astype(np.uint8)
    return img


def images(per_kind: int) -> list[tuple[str, np.ndarray]]:
    rng = random.Random(0)
    return [(kind, draw(kind, rng, i * 100 + k)) for i, kind in enumerate(KINDS)
            for k in range(per_kind)]


def worker(method: str, per_kind: int, threads: int) -> dict:
    items = images(per_kind)
    if method == "skiff":
        from skiff.kernels.ocr import OcrPipeline

        pipe = OcrPipeline("ch", device="cpu", threads=threads)
        lines = [[line.text for line in r.lines] for r in pipe.run([img for _, img in items])]
    else:
        from bench_ocr import _no_spin, _rapid_engine

        _no_spin()
        engine = _rapid_engine(threads)
        lines = [list(engine(img).txts or ()) for _, img in items]
    per_kind = collections.Counter()
    for (kind, _), got in zip(items, lines, strict=True):
        per_kind[kind] += len(got)
    texts = collections.Counter(t for got in lines for t in got)
    return {"per_kind": dict(per_kind), "total": sum(per_kind.values()),
            "common": texts.most_common(10)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-kind", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=("skiff", "rapidocr"))
    ap.add_argument("--results", default=str(HERE / "results" / "ocr-textfree.md"))
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker, a.per_kind, a.threads), ensure_ascii=False))
        return 0
    got = run_workers(__file__, ("skiff", "rapidocr"),
                      ["--per-kind", a.per_kind, "--threads", a.threads])
    n = a.per_kind * len(KINDS)
    cmd = ("OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_textfree.py "
           f"--per-kind {a.per_kind} --threads {a.threads}")
    lines = ["# OCR of images with no text: false lines", "",
             f"Command: `{cmd}`  ",
             machine_line(a.threads), "",
             f"{n} images ({a.per_kind} of each kind, fixed seed, a third with sensor noise); "
             "every line returned is a false one. RapidOCR 3.10 with `limit_type=max, 960`.",
             "", "| kind | skiff | RapidOCR |", "|---|---|---|"]
    for kind in KINDS:
        lines.append(f"| {kind} | {got['skiff']['per_kind'].get(kind, 0)} | "
                     f"{got['rapidocr']['per_kind'].get(kind, 0)} |")
    lines.append(f"| **all** | **{got['skiff']['total']}** | **{got['rapidocr']['total']}** |")
    lines += [""] + [f"Commonest readings, {m}: " + ", ".join(f"{t!r} x{c}" for t, c in
                                                          got[m]["common"])
                     for m in ("skiff", "rapidocr")]

    publish(a.results, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
