"""OCR on hard images: skiff against RapidOCR 3.10 and Tesseract on the rendered hard set.

    .venv/bin/python benchmarks/bench_ocr_hard.py [--per-tier 50] [--threads 2] [--quick]

The set (``skiff.kernels.ocr.synth_hard``, seed 1): ``degraded`` (small images turned by any
angle, blurred, noisy, JPEG 20-30), ``photo`` (perspective, uneven light, a shadow, textured
paper), ``segment`` (seven-segment displays) and ``vertical`` (Chinese columns, right to
left), English and Chinese, in fonts the clean set does not use. It is written to a
temporary folder (PNG) once; each method reads the same files in its own process with
``OPENBLAS_NUM_THREADS=1`` and the same number of threads. Accuracy is character accuracy
(1 - edit distance / length, NFKC, lines joined by newlines, spaces between CJK characters
removed for every method), the mean over a tier's images; "hard" is the mean over the first
three tiers (the kind of image of issue 14, item 1).

Peers, tuned as their users would: RapidOCR 3.10 with its defaults (``limit_type=min,
736``: small images are enlarged, which is what this set needs) and with the page setting
``limit_type=max, 960`` used in ``bench_ocr.py``; Tesseract 5 (``eng+chi_sim``, ``--psm 3``;
``--psm 5`` on the vertical tier, Tesseract's mode for a vertical block), skipped with a note
when missing (``tools/bench-deps.sh``). Results go to ``benchmarks/results/ocr-hard.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METHODS = ("skiff", "skiff-fp32", "rapidocr", "rapidocr-960", "tesseract")
CJK = r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]"


def _squeeze_cjk(text: str) -> str:
    return re.sub(rf"(?<={CJK}) +(?={CJK})", "", text)


# workers: one process each ------------------------------------------------------------------
def worker_skiff(rows, folder, threads, precision="auto"):
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", device="cpu", threads=threads, batch_size=8, precision=precision)
    paths = [str(Path(folder) / r["image"]) for r in rows]
    pipe(paths[0])
    t0 = time.perf_counter()
    texts = [r.text for r in pipe.run(paths)]
    return texts, time.perf_counter() - t0


def worker_skiff_fp32(rows, folder, threads):
    """skiff with the detector in float32, as shipped."""
    return worker_skiff(rows, folder, threads, precision="fp32")


def _rapid(rows, folder, threads, extra):
    from rapidocr import RapidOCR

    engine = RapidOCR(params={
        **extra, "EngineConfig.onnxruntime.intra_op_num_threads": threads,
        "EngineConfig.onnxruntime.inter_op_num_threads": 1, "Global.log_level": "error"})
    paths = [str(Path(folder) / r["image"]) for r in rows]
    engine(paths[0])
    t0 = time.perf_counter()
    texts = []
    for p in paths:
        out = engine(p)
        texts.append("\n".join(out.txts) if out.txts else "")
    return texts, time.perf_counter() - t0


def worker_rapidocr(rows, folder, threads):
    return _rapid(rows, folder, threads, {})


def worker_rapidocr_960(rows, folder, threads):
    return _rapid(rows, folder, threads, {"Det.limit_type": "max", "Det.limit_side_len": 960})


def worker_tesseract(rows, folder, threads):
    env = {**os.environ, "OMP_THREAD_LIMIT": str(threads)}

    def one(row):
        psm = "5" if row["category"] == "vertical" else "3"
        cmd = ["tesseract", str(Path(folder) / row["image"]), "stdout", "-l", "eng+chi_sim",
               "--psm", psm]
        out = subprocess.run(cmd, capture_output=True, env=env, check=False, timeout=120)
        return out.stdout.decode("utf-8", "replace")

    t0 = time.perf_counter()
    texts = [one(r) for r in rows]
    return texts, time.perf_counter() - t0


# driver --------------------------------------------------------------------------------------
def _run_worker(method, folder, threads):
    from bench_ocr import _run_worker as run_worker  # the same driver, this file's workers

    return run_worker(method, folder, threads, script=__file__)


def _truth(folder):
    return [json.loads(line) for line in open(Path(folder) / "truth.jsonl", encoding="utf-8")]


def write_set(folder, samples):
    from PIL import Image

    folder = Path(folder)
    with open(folder / "truth.jsonl", "w", encoding="utf-8") as fh:
        for s in samples:
            Image.fromarray(s.image).save(folder / f"{s.name}.png")
            fh.write(json.dumps({"image": f"{s.name}.png", "category": s.category,
                                 "kind": s.kind, "lines": s.lines, **s.meta},
                                ensure_ascii=False) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-tier", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="8 images per tier")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--worker", choices=METHODS)
    ap.add_argument("--folder")
    ap.add_argument("--keep", help="also copy the set and each method's texts to this folder")
    ap.add_argument("--reuse", help="a folder a run kept (--keep): read its set, and the "
                                     "texts of methods it already holds (out-METHOD.json)")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results" / "ocr-hard.md"))
    args = ap.parse_args(argv)

    if args.worker:
        rows = _truth(args.folder)
        fn = globals()[f"worker_{args.worker.replace('-', '_')}"]
        texts, seconds = fn(rows, args.folder, args.threads)
        (Path(args.folder) / f"out-{args.worker}.json").write_text(
            json.dumps({"texts": texts, "seconds": seconds}, ensure_ascii=False))
        return 0

    from skiff.kernels.ocr.synth import char_accuracy
    from skiff.kernels.ocr.synth_hard import HARD_TIERS, make_hard_set

    n = 8 if args.quick else args.per_tier
    folder = Path(args.reuse) if args.reuse else \
        Path(tempfile.mkdtemp(prefix="skiff-bench-ocr-hard-"))
    if not (folder / "truth.jsonl").exists():
        folder.mkdir(parents=True, exist_ok=True)
        write_set(folder, make_hard_set(n, seed=1))
    rows = _truth(folder)
    n = len(rows) // len(HARD_TIERS)
    methods = [m for m in args.methods.split(",") if m]
    notes = []
    if "tesseract" in methods and not shutil.which("tesseract"):
        methods.remove("tesseract")
        notes.append("tesseract: not installed (tools/bench-deps.sh)")
    results = {}
    for method in methods:
        print(f"{method} …", file=sys.stderr, flush=True)
        kept = folder / f"out-{method}.json"
        if args.reuse and kept.exists():
            out, err = json.loads(kept.read_text()), None
        else:
            out, err = _run_worker(method, folder, args.threads)
        if out is None:
            notes.append(f"{method}: failed: {err}")
            continue
        acc: dict[str, list[float]] = {t: [] for t in HARD_TIERS}
        by_script: dict[str, list[float]] = {}
        for row, text in zip(rows, out["texts"], strict=True):
            a = char_accuracy(_squeeze_cjk(text), "\n".join(row["lines"]))
            acc[row["category"]].append(a)
            if row["category"] != "vertical":
                by_script.setdefault(row["kind"], []).append(a)
        hard = [a for t in HARD_TIERS[:3] for a in acc[t]]
        results[method] = {"acc": {t: sum(v) / len(v) for t, v in acc.items() if v},
                           "hard": sum(hard) / max(1, len(hard)),
                           "script": {k: sum(v) / len(v) for k, v in by_script.items()},
                           "ips": len(rows) / out["seconds"], "texts": out["texts"]}
    if args.keep:
        shutil.copytree(folder, args.keep, dirs_exist_ok=True)
    if not args.reuse:
        shutil.rmtree(folder, ignore_errors=True)

    scripts = ("english", "chinese", "mixed", "digits")
    head = ("| method | hard (3 tiers) | " + " | ".join(HARD_TIERS) + " | " +
            " | ".join(scripts) + " | images/s |")
    lines = [head, "|" + "---|" * (len(HARD_TIERS) + len(scripts) + 3)]
    for method, r in results.items():
        accs = " | ".join(f"{100 * r['acc'].get(t, 0):.1f}%" for t in HARD_TIERS)
        sc = " | ".join(f"{100 * r['script'].get(k, 0):.1f}%" for k in scripts)
        lines.append(f"| {method} | {100 * r['hard']:.1f}% | {accs} | {sc} | {r['ips']:.2f} |")
    table = "\n".join(lines)
    print(table)
    for note in notes:
        print("note:", note)
    cmd = "OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_hard.py" + \
        (" --quick" if args.quick else f" --per-tier {n}") + f" --threads {args.threads}"
    load = os.getloadavg()
    doc = [
        "# OCR: hard images and vertical text (issue 14, items 1 and 4)", "",
        f"Command: `{cmd}`  ",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{args.threads} threads per method; {len(rows)} rendered images ({n} per tier, "
        f"seed 1); {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end (a shared machine: other "
        "helpers' tests and benchmarks ran meanwhile, so images/s is only indicative).", "",
        "Character accuracy (mean over a tier's images; \"hard\" = degraded + photo + segment, "
        "the script columns over those three tiers). `rapidocr` is RapidOCR 3.10 with its "
        "defaults (`limit_type=min, 736`, which enlarges small images), `rapidocr-960` with "
        "the page setting `limit_type=max, 960`; Tesseract 5 `eng+chi_sim`, `--psm 3` "
        "(`--psm 5` on the vertical tier).", "",
        table, "",
        *[f"- note: {n_}" for n_ in notes],
    ]
    from results_file import write_keeping_earlier  # benchmarks/, the script's folder

    write_keeping_earlier(args.results, "\n".join(doc))
    print(f"written {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
