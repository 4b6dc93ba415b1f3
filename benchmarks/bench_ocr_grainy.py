"""OCR of pages under grain: skiff against RapidOCR 3.10 on pages of 6-12 lines, half of them
blurred, noisy and JPEG'd.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_grainy.py [--seeds 3]
        [--per-seed 30] [--threads 2]

Each page holds 6-12 lines (English, Chinese, mixed) at 14-34 px, 900-1700 px wide (the
`synth` pools and fonts); half of them are degraded as the `noisy` category is (Gaussian
blur 1.2-2 px, noise sigma 18-30, JPEG quality 10-30): grain that JPEG has smoothed, which
`denoise.noise_sigma` reads 0-1.5. Each method reads the pages in its own process with the
same threads: `skiff` (defaults), `skiff-no-grain` (the denoised second reading as before
round 18: images up to 480 px, `noise_sigma` only) and RapidOCR (`limit_type=max, 960`).
Reported: character accuracy (CJK spaces squeezed on both sides) over all pages, the clean
and the grainy ones, the pages read under 0.9, and seconds. Writes ``results/ocr-grainy.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from results_file import machine_line, publish, run_workers  # noqa: E402

METHODS = ("skiff", "skiff-no-grain", "rapidocr")
CJK = r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]"


def squeeze(text: str) -> str:
    return re.sub(rf"(?<={CJK}) +(?={CJK})", "", text)


def pages(seeds: int, per_seed: int) -> list[tuple[np.ndarray, str, bool]]:
    """``(image, truth, grainy)`` for each page, fixed seeds."""
    from skiff.kernels.ocr import synth

    f = synth.fonts()
    out = []
    for seed in range(seeds):
        for i in range(per_seed):
            rng = random.Random(f"grainy-{seed}-{i}")
            kind = rng.choice(["english", "chinese", "mixed", "paragraph"])
            lines = synth._pick_lines(rng, kind, rng.randint(6, 12))
            cjk = any(synth._CJK.search(t) for t in lines)
            font = f["cjk"] if cjk or rng.random() < 0.3 else rng.choice([f["latin"], f["serif"]])
            img = synth._draw_page(lines, font, rng.randint(14, 34), rng,
                                   page_width=rng.randint(900, 1700))
            grainy = rng.random() < 0.5
            if grainy:
                img = synth._degrade(img, rng)
            out.append((img, "\n".join(lines), grainy))
    return out


def worker(method: str, seeds: int, per_seed: int, threads: int) -> dict:
    items = pages(seeds, per_seed)
    t0 = time.perf_counter()
    if method.startswith("skiff"):
        from skiff.kernels.ocr import OcrPipeline, denoise

        if method == "skiff-no-grain":
            denoise.GRAIN, denoise.SIDE = float("inf"), 480
        pipe = OcrPipeline("ch", device="cpu", threads=threads)
        texts = [r.text for r in pipe.run([img for img, _, _ in items])]
    else:
        from bench_ocr import _no_spin, _rapid_engine

        _no_spin()
        engine = _rapid_engine(threads)
        texts = ["\n".join(engine(img).txts or ()) for img, _, _ in items]
    seconds = time.perf_counter() - t0
    from skiff.kernels.ocr.synth import char_accuracy

    acc = [char_accuracy(squeeze(t), squeeze(truth)) for t, (_, truth, _) in
           zip(texts, items, strict=True)]
    return {"acc": acc, "grainy": [g for _, _, g in items], "seconds": seconds}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--per-seed", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=METHODS)
    ap.add_argument("--results", default=str(HERE / "results" / "ocr-grainy.md"))
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker, a.seeds, a.per_seed, a.threads)))
        return 0
    got = run_workers(__file__, METHODS,
                      ["--seeds", a.seeds, "--per-seed", a.per_seed, "--threads", a.threads])
    cmd = ("OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_grainy.py "
           f"--seeds {a.seeds} --per-seed {a.per_seed} --threads {a.threads}")
    n = a.seeds * a.per_seed
    lines = ["# OCR of pages under grain", "",
             f"Command: `{cmd}`  ",
             machine_line(a.threads), "",
             f"{n} pages of 6-12 lines at 14-34 px, 900-1700 px wide, about half of them "
             "blurred, noisy and JPEG'd (quality 10-30); character accuracy with CJK spaces "
             "squeezed. `skiff-no-grain`: the denoised second reading as before round 18. "
             "RapidOCR 3.10 with `limit_type=max, 960`, spin-waiting off as skiff's.", "",
             "| method | all | clean | grainy | pages under 0.9 | seconds |",
             "|---|---|---|---|---|---|"]
    for m in METHODS:
        acc, grainy = np.array(got[m]["acc"]), np.array(got[m]["grainy"], bool)
        lines.append(f"| {m} | {acc.mean():.3f} | {acc[~grainy].mean():.3f} | "
                     f"{acc[grainy].mean():.3f} | {int((acc < 0.9).sum())} | "
                     f"{got[m]['seconds']:.1f} |")

    publish(a.results, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
