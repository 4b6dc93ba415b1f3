"""OCR of crops already cut out (recognition only): skiff ``--no-det`` against RapidOCR 3.10's
``use_det=False``.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_crops.py [--crops 300]

A user with a labelled dataset's line crops, or boxes from a detector of their own, reads
them without detection. Renders ``--crops`` crops (fixed seed): words, codes, prices and
dates in English and Chinese, single glyphs, in DejaVu Sans, Liberation Serif, DejaVu Sans
Mono and Noto Sans CJK at 16-40 px, cut with 0, 1, 2 or 4 px of margin around the print.
Each method reads them in a process of its own (threads set equally, onnxruntime's
spin-waiting off for both, as skiff runs by default), after one warm-up crop: skiff as one
run over the list (``OcrPipeline(use_det=False)``), RapidOCR a call per crop as its API
takes them (``use_det=False``, its direction model on). Character accuracy (a run of
spaces counted as one) and seconds. Writes ``results/ocr-crops.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
FACES = ("truetype/dejavu/DejaVuSans.ttf", "truetype/liberation2/LiberationSerif-Regular.ttf",
         "truetype/dejavu/DejaVuSansMono.ttf")
CJK_FACE = "opentype/noto/NotoSansCJK-Regular.ttc"
TEXTS = ("Invoice", "TOTAL 42.80", "ID 88123", "Hello world", "2026-12-03", "¥128.00", "OK",
         "7", "A", "x", "Qty 3", "SKU-4471-B", "Paid", "12:45", "Net 30 days", "张三",
         "北京市", "收据编号 20573", "合计", "欢迎光临", "电话 010-8888", "第 3 号窗口")


def crops(n: int, seed: int = 0) -> tuple[list[np.ndarray], list[str]]:
    from PIL import Image, ImageDraw, ImageFont

    rng = random.Random(seed)
    images, truths = [], []
    for _ in range(n):
        text = rng.choice(TEXTS)
        cjk = any(ord(c) > 0x2E80 for c in text)
        face = CJK_FACE if cjk else rng.choice(FACES)
        font = ImageFont.truetype(f"/usr/share/fonts/{face}", rng.randint(16, 40))
        x0, y0, x1, y1 = font.getbbox(text)
        pad = rng.choice((0, 1, 2, 4))
        img = Image.new("L", (x1 - x0 + 2 * pad, y1 - y0 + 2 * pad), 255)
        ImageDraw.Draw(img).text((pad - x0, pad - y0), text, font=font, fill=0)
        images.append(np.asarray(img.convert("RGB")))
        truths.append(text)
    return images, truths


def read_skiff(images, threads):
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", device="cpu", threads=threads, use_det=False)
    pipe(images[0])
    t0 = time.perf_counter()
    texts = [r.text for r in pipe.run(images)]
    return texts, time.perf_counter() - t0


def read_rapidocr(images, threads):
    from bench_ocr import _no_spin, _rapid_engine

    _no_spin()
    engine = _rapid_engine(threads)
    engine(images[0][..., ::-1].copy(), use_det=False)
    t0 = time.perf_counter()
    texts = []
    for img in images:
        out = engine(img[..., ::-1].copy(), use_det=False)  # RapidOCR takes BGR arrays
        texts.append(" ".join(out.txts) if out.txts else "")
    return texts, time.perf_counter() - t0


READERS = {"skiff": read_skiff, "rapidocr": read_rapidocr}


def main(argv=None) -> None:
    from results_file import write_keeping_earlier

    from skiff.kernels.ocr.synth import char_accuracy

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crops", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=tuple(READERS), help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results" / "ocr-crops.md"))
    a = ap.parse_args(argv)
    images, truths = crops(a.crops)
    if a.worker:  # one method in this process
        texts, seconds = READERS[a.worker](images, a.threads)
        Path(a.worker_out).write_text(json.dumps({"texts": texts, "seconds": seconds},
                                                 ensure_ascii=False), encoding="utf-8")
        return
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    got = {}
    for method in READERS:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.json"
            subprocess.run([sys.executable, __file__, "--worker", method, "--worker-out",
                            str(out), "--crops", str(a.crops), "--threads", str(a.threads)],
                           env=env, check=True)
            got[method] = json.loads(out.read_text(encoding="utf-8"))
        print(f"{method}: {got[method]['seconds']:.2f} s", flush=True)

    def norm(t):
        return " ".join(t.split())

    acc = {m: float(np.mean([char_accuracy(norm(t), truth) for t, truth in
                             zip(g["texts"], truths, strict=True)])) for m, g in got.items()}
    empty = {m: sum(not t.strip() for t in g["texts"]) for m, g in got.items()}
    ratio = got["rapidocr"]["seconds"] / got["skiff"]["seconds"]
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    rows = [f"| {m} | {acc[m]:.3f} | {empty[m]} | {got[m]['seconds']:.2f} | "
            f"{a.crops / got[m]['seconds']:.0f} |" for m in got]
    text = "\n".join([
        "# OCR of crops already cut out: recognition only", "",
        f"Command: `OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_crops.py "
        f"--crops {a.crops} --threads {a.threads}`  ",
        f"Machine: 2 CPUs, {a.threads} threads per method, each in its own process; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end {load}.",
        "",
        f"{a.crops} rendered crops (see the benchmark's docstring), read by skiff "
        "(`--no-det`) and RapidOCR 3.10 (`use_det=False`), spin-waiting off for both.",
        "",
        "| method | character accuracy | crops read empty | seconds | crops/s |",
        "|---|---|---|---|---|", *rows, "",
        f"skiff reads the crops **{ratio:.2f}x** as fast as RapidOCR.", ""])
    write_keeping_earlier(a.out, text)
    print(f"mean: skiff {acc['skiff']:.3f}, RapidOCR {acc['rapidocr']:.3f}; {ratio:.2f}x")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
