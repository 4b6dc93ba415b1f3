"""OCR of seven-segment displays and of numbers in ordinary faces: skiff against RapidOCR 3.10.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_displays.py [--seeds 10,11,12,13]
        [--numbers 400] [--threads 2]

Displays: 150 a seed, drawn in the four DSEG7 faces of Debian's ``fonts-dseg`` (Classic
regular, bold and italic, Modern) at 20-72 px, dark on light, clean: clocks ("11:15",
"7:05"), decimals ("118.4") and integers, their digits drawn with "1" four times as often as
the others (a right-set "1" is the face's hard case: two side by side fall in neighbouring
recognizer columns, one alone is a box taller than wide). Numbers: ``--numbers`` integers,
decimals and times with doubled digits ("1100", "11:15") in DejaVu and Liberation faces at
11-40 px, some blurred or noisy: where a rule for displays could do harm. Each method reads
both sets in its own process with the same threads. Reported: exact readings (spaces
aside), and of the rest those that only dropped a decimal point, only gained one, lost a
doubled digit ("1111" -> "111"), or other. Writes ``results/ocr-displays.md``.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from results_file import machine_line, publish, run_workers  # noqa: E402

DSEG = "/usr/share/fonts/truetype/dseg/"
FACES = ["DSEG7Classic-Regular.ttf", "DSEG7Classic-Bold.ttf", "DSEG7Modern-Regular.ttf",
         "DSEG7Classic-Italic.ttf"]
ORDINARY = ["dejavu/DejaVuSans.ttf", "dejavu/DejaVuSerif.ttf", "dejavu/DejaVuSans-Bold.ttf",
            "dejavu/DejaVuSansMono.ttf", "liberation2/LiberationSans-Regular.ttf",
            "liberation2/LiberationSerif-Regular.ttf", "liberation2/LiberationMono-Regular.ttf",
            "liberation2/LiberationSans-Bold.ttf"]


def _draw(text: str, font_path: str, size: int, paper: int = 235, ink: int = 20) -> np.ndarray:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(font_path, size)
    x0, y0, x1, y1 = font.getbbox(text)
    pad = size // 2
    img = Image.new("L", (x1 - x0 + 2 * pad, y1 - y0 + 2 * pad), paper)
    ImageDraw.Draw(img).text((pad - x0, pad - y0), text, font=font, fill=ink)
    return np.asarray(img)


def displays(seed: int, n: int = 150) -> list[tuple[str, np.ndarray]]:
    rng = random.Random(seed)

    def digits(k):
        return "".join(rng.choice("1111023456789") for _ in range(k))

    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.3:
            hour = f"{rng.randint(0, 23):02d}" if rng.random() < 0.5 else str(rng.randint(1, 12))
            text = f"{hour}:{digits(2)}"
        elif kind < 0.6:
            s = digits(rng.randint(2, 5))
            cut = rng.randint(1, len(s) - 1)
            text = s[:cut] + "." + s[cut:]
        else:
            text = str(int(digits(rng.randint(1, 5))) or 1)
        face, size = rng.choice(FACES), rng.choice((20, 28, 40, 56, 72))
        out.append((text, np.stack([_draw(text, DSEG + face, size)] * 3, -1)))
    return out


def numbers(n: int, seed: int = 0) -> list[tuple[str, np.ndarray]]:
    import cv2

    rng = random.Random(seed)
    faces = sorted({hit for name in ORDINARY
                    for hit in glob.glob(f"/usr/share/fonts/truetype/*/{name.split('/')[-1]}")})
    out = []
    for i in range(n):
        pool = "0123456789" if rng.random() < 0.5 else "1100"
        d = "".join(rng.choice(pool) for _ in range(rng.randint(1, 6))).lstrip("0") or "0"
        kind = rng.random()
        if kind < 0.4 and len(d) > 1:
            cut = rng.randint(1, len(d) - 1)
            d = d[:cut] + "." + d[cut:]
        elif kind < 0.5:
            d = f"{rng.randint(0, 23)}:{rng.randint(0, 59):02d}"
        a = _draw(d, rng.choice(faces), rng.randint(11, 40), rng.randint(200, 250),
                  rng.randint(0, 60)).astype(np.float32)
        if rng.random() < 0.3:
            a = cv2.GaussianBlur(a, (0, 0), rng.uniform(0.5, 1.2))
        if rng.random() < 0.3:
            a = a + np.random.default_rng(i).normal(0, 12, a.shape)
        out.append((d, np.stack([np.clip(a, 0, 255).astype(np.uint8)] * 3, -1)))
    return out


def classify(truth: str, got: str) -> str:
    """exact, dropped point, false point, lost double (a doubled character read once), other"""
    got = got.replace(" ", "").replace("\n", "")
    if got == truth:
        return "exact"
    if "." in truth and got == truth.replace(".", ""):
        return "dropped point"
    if "." not in truth and "." in got and got.replace(".", "") == truth:
        return "false point"
    if [k for k, _ in itertools.groupby(got)] == [k for k, _ in itertools.groupby(truth)] \
            and len(got) < len(truth):
        return "lost double"
    return "other"


def worker(method: str, seeds: list[int], n_numbers: int, threads: int) -> dict:
    sets = {"displays": [x for s in seeds for x in displays(s)], "numbers": numbers(n_numbers)}
    if method == "skiff":
        from skiff.kernels.ocr import OcrPipeline

        pipe = OcrPipeline("ch", device="cpu", threads=threads)

        def read(images):
            return [r.text for r in pipe.run(images)]
    else:
        from bench_ocr import _no_spin, _rapid_engine

        _no_spin()
        engine = _rapid_engine(threads)

        def read(images):
            out = []
            for img in images:
                got = engine(img)
                out.append("".join(got.txts) if got.txts else "")
            return out
    read([sets["displays"][0][1]])
    report = {}
    for name, items in sets.items():
        t0 = time.perf_counter()
        texts = read([img for _, img in items])
        seconds = time.perf_counter() - t0
        kinds = [classify(t, g) for (t, _), g in zip(items, texts, strict=True)]
        report[name] = {"n": len(items), "seconds": round(seconds, 2),
                        **{k: kinds.count(k) for k in ("exact", "dropped point", "false point",
                                                       "lost double", "other")},
                        "misread": [(t, g) for (t, _), g, k in zip(items, texts, kinds,
                                                                    strict=True)
                                    if k != "exact"][:12]}
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="10,11,12,13")
    ap.add_argument("--numbers", type=int, default=400)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=("skiff", "rapidocr"))
    ap.add_argument("--results", default=str(HERE / "results" / "ocr-displays.md"))
    a = ap.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",")]
    if a.worker:
        print(json.dumps(worker(a.worker, seeds, a.numbers, a.threads), ensure_ascii=False))
        return 0
    if not os.path.exists(DSEG + FACES[0]):
        print("fonts-dseg is not installed (make system-deps)", file=sys.stderr)
        return 1
    got = run_workers(__file__, ("skiff", "rapidocr"),
                      ["--seeds", a.seeds, "--numbers", a.numbers, "--threads", a.threads])
    cmd = ("OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_displays.py "
           f"--seeds {a.seeds} --numbers {a.numbers} --threads {a.threads}")
    lines = ["# OCR of seven-segment displays and of numbers in ordinary faces", "",
             f"Command: `{cmd}`  ",
             machine_line(a.threads), "",
             "Displays: random clocks, decimals and integers in four DSEG7 faces at 20-72 px, "
             "rich in \"1\"s; numbers: integers, decimals and times with doubled digits in "
             "DejaVu and Liberation faces, some blurred or noisy. RapidOCR 3.10 with "
             "`limit_type=max, 960`, onnxruntime's spin-waiting off for both.", "",
             "| set | method | exact | dropped point | false point | lost double | other | "
             "seconds |", "|---|---|---|---|---|---|---|---|"]
    for name in ("displays", "numbers"):
        for method in ("skiff", "rapidocr"):
            r = got[method][name]
            lines.append(f"| {name} ({r['n']}) | {method} | **{r['exact'] / r['n']:.1%}** | "
                         f"{r['dropped point']} | {r['false point']} | {r['lost double']} | "
                         f"{r['other']} | {r['seconds']} |")
    lines += ["", "skiff's first misreadings (truth -> read):", ""]
    for name in ("displays", "numbers"):
        shown = ", ".join(f"{t!r} -> {g!r}" for t, g in got["skiff"][name]["misread"])
        lines.append(f"- {name}: {shown or 'none'}")

    publish(a.results, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
