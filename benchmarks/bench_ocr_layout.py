"""OCR of code screenshots: is the indentation kept? skiff against RapidOCR 3.10.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_layout.py [--pages 12]

Renders ``--pages`` editor screenshots of 16-line pieces of Python's own standard library
(json/encoder.py, textwrap.py, shlex.py; fixed seed) in DejaVu Sans Mono, Liberation Mono
and DejaVu Sans Mono Bold at 13-20 px, light and dark themes, and reads them with skiff and
with RapidOCR (``limit_type=max, 960``; its text a box a line, as its users join it). For
each method: character accuracy (whitespace runs counted as one, as everywhere in these
benchmarks), the share of code lines whose indentation relative to the page's least indented
line is right (a page whose rows do not pair with the code's lines scores 0 there), and
seconds. Writes ``results/ocr-layout.md``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
SOURCES = ("json/encoder.py", "textwrap.py", "shlex.py")
FACES = ("dejavu/DejaVuSansMono.ttf", "liberation2/LiberationMono-Regular.ttf",
         "dejavu/DejaVuSansMono-Bold.ttf")


def screenshots(pages: int, seed: int = 0) -> list[tuple[np.ndarray, str, str]]:
    """(image, code, what) for each page."""
    from PIL import Image, ImageDraw, ImageFont

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    srcs = [(stdlib / s).read_text().expandtabs(4).split("\n") for s in SOURCES]
    rng = random.Random(seed)
    out = []
    for k in range(pages):
        src = rng.choice(srcs)
        a = rng.randrange(0, len(src) - 20)
        chunk = [line.rstrip() for line in src[a:a + 16] if len(line) < 80]
        while chunk and not chunk[0].strip():
            chunk.pop(0)
        size, face, dark = rng.choice([13, 14, 16, 18, 20]), FACES[k % 3], k % 2 == 1
        font = ImageFont.truetype(f"/usr/share/fonts/truetype/{face}", size)
        pitch = int(size * 1.5)
        img = Image.new("RGB", (int(40 + 0.62 * size * max(map(len, chunk))),
                                30 + pitch * len(chunk)), (30, 30, 30) if dark else "white")
        draw = ImageDraw.Draw(img)
        for i, line in enumerate(chunk):
            draw.text((20, 15 + i * pitch), line, font=font,
                      fill=(220, 220, 220) if dark else (20, 20, 20))
        out.append((np.asarray(img), "\n".join(chunk),
                    f"{Path(face).stem} {size} px {'dark' if dark else 'light'}"))
    return out


def indentation_right(text: str, code: str) -> tuple[int, int]:
    """(lines whose relative indentation is right, code lines), blank lines left out."""
    def leads(t):
        lines = [line for line in t.split("\n") if line.strip()]
        if not lines:
            return []
        lead = [len(line) - len(line.lstrip(" ")) for line in lines]
        return [v - min(lead) for v in lead]

    got, want = leads(text), leads(code)
    if len(got) != len(want):
        return 0, len(want)
    return sum(g == w for g, w in zip(got, want, strict=True)), len(want)


def read_skiff(images, threads):
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", threads=threads)
    pipe(images[0])
    t0 = time.perf_counter()
    texts = [r.text for r in pipe.run(images)]
    return texts, time.perf_counter() - t0


def read_rapidocr(images, threads):
    from rapidocr import RapidOCR

    engine = RapidOCR(params={
        "Det.limit_type": "max", "Det.limit_side_len": 960,
        "EngineConfig.onnxruntime.intra_op_num_threads": threads,
        "EngineConfig.onnxruntime.inter_op_num_threads": 1, "Global.log_level": "error"})
    engine(images[0])
    t0 = time.perf_counter()
    texts = []
    for img in images:
        out = engine(img[..., ::-1].copy())  # RapidOCR takes BGR arrays
        texts.append("\n".join(out.txts) if out.txts else "")
    return texts, time.perf_counter() - t0


def main(argv=None) -> None:
    from results_file import write_keeping_earlier

    from skiff.kernels.ocr.synth import char_accuracy

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results" / "ocr-layout.md"))
    a = ap.parse_args(argv)
    pages = screenshots(a.pages)
    images = [p[0] for p in pages]
    rows = []
    for name, read in (("skiff", read_skiff), ("rapidocr-960", read_rapidocr)):
        texts, seconds = read(images, a.threads)
        acc = float(np.mean([char_accuracy(t, p[1]) for t, p in zip(texts, pages, strict=True)]))
        right = [indentation_right(t, p[1]) for t, p in zip(texts, pages, strict=True)]
        share = sum(r for r, _ in right) / max(1, sum(n for _, n in right))
        whole = sum(r == n for r, n in right)
        rows.append(f"| {name} | {100 * acc:.1f}% | {100 * share:.1f}% | {whole} of {len(pages)} "
                    f"| {seconds:.2f} |")
        print(rows[-1], flush=True)
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    text = "\n".join([
        "# OCR of code screenshots: indentation", "",
        f"Command: `OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_layout.py "
        f"--pages {a.pages} --threads {a.threads}`  ",
        f"Machine: 2 CPUs, {a.threads} threads per method; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end {load}.",
        "",
        f"{a.pages} editor screenshots of 16-line pieces of the Python standard library "
        f"({', '.join(SOURCES)}) in {', '.join(Path(f).stem for f in FACES)}, 13-20 px, light "
        "and dark (fixed seed). Character accuracy counts a run of spaces as one; "
        "'indentation right' is the share of code lines whose indentation relative to the "
        "page's least indented line is what the code has (a page whose rows do not pair with "
        "the code's lines scores none); 'pages exact' the pages with every line right. "
        "RapidOCR 3.10 (`limit_type=max, 960`) gives boxes without layout, joined a box a line.",
        "",
        "| method | character accuracy | indentation right | pages exact | seconds |",
        "|---|---|---|---|---|",
        *rows, ""])
    write_keeping_earlier(a.out, text)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
