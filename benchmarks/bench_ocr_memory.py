"""OCR memory: RSS over a long run of small images, and the decoding peak of a huge PNG.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_memory.py [--images 1000]
        [--threads 2] [--peer] [--huge 13000]

Growth: ``--images`` rendered pages (100 distinct ones, 400-1100 px wide, clean, rotated
and noisy, cycled) are read from files by one ``OcrPipeline.run`` in a fresh process; the
process's RSS (``/proc/self/statm``) is sampled every 25 images. Growth after warm-up is
``(RSS at the end - RSS after the first 100 images) / RSS after 100``; the goal is <= 5%.
``--peer`` runs RapidOCR 3.10 (``limit_type=max, 960``, same threads) on the same files for
comparison. Huge: a ``--huge`` x ``--huge`` mostly blank RGB PNG (just under Pillow's bomb
limit at 13000) is read once, in a fresh process, and its peak RSS reported.
Results go to ``benchmarks/results/ocr-memory.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WARM = 100  # images after which the process counts as warmed up
# the huge page of small text: two lines at each of four places (fractions of the side)
SMALL_AT = [(0.05, 0.05), (0.31, 0.52), (0.62, 0.2), (0.93, 0.6)]
SMALL_LINES = ["Shipping manifest for container 4471 bound for Rotterdam",
               "Gross weight 18,240 kg including pallets and wrapping",
               "Inspection passed on 12 March with no remarks recorded",
               "Customs entry 2026-0412 cleared at the second window",
               "Seal number 00923-B checked at the gate by the night shift",
               "Temperature log attached: minus 18 degrees throughout",
               "Signed for the carrier by the duty officer on the quay",
               "Page 1 of 1, printed on 1 December 2026 at 21:05"]
EVERY = 25


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hwm_mib() -> float:
    """The process's high-water mark of resident memory (``VmHWM``): the peak inside a batch,
    which samples every :data:`EVERY` images miss."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return peak_mib()


def _paths(folder: str, n: int) -> list[str]:
    files = sorted(str(p) for p in Path(folder).iterdir() if p.suffix in (".png", ".jpg"))
    return [files[k % len(files)] for k in range(n)]


def worker_skiff(paths, threads):
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", device="cpu", threads=threads, batch_size=8)
    samples = []
    for k, _ in enumerate(pipe.run(paths), 1):
        if k % EVERY == 0:
            samples.append((k, rss_mib()))
            print(f"{k} {samples[-1][1]:.1f}", file=sys.stderr, flush=True)  # a cut run's curve
    return {"samples": samples, "hwm": hwm_mib()}


def worker_rapidocr(paths, threads):
    from rapidocr import RapidOCR

    engine = RapidOCR(params={
        "Det.limit_type": "max", "Det.limit_side_len": 960,
        "EngineConfig.onnxruntime.intra_op_num_threads": threads,
        "EngineConfig.onnxruntime.inter_op_num_threads": 1, "Global.log_level": "error"})
    samples = []
    for k, p in enumerate(paths, 1):
        engine(p)
        if k % EVERY == 0:
            samples.append((k, rss_mib()))
            print(f"{k} {samples[-1][1]:.1f}", file=sys.stderr, flush=True)  # a cut run's curve
    return {"samples": samples, "hwm": hwm_mib()}


def worker_huge(path, threads):
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", device="cpu", threads=threads)
    for which in ("det", "cls", "rec"):
        pipe.engine(which)  # models loaded before the baseline
    base = rss_mib()
    t0 = time.perf_counter()
    result = next(iter(pipe.run([path])))
    return {"base": base, "peak": peak_mib(), "seconds": time.perf_counter() - t0,
            "text": result.text, "error": result.error}


def _run(method, arg, threads, n=0):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": str(threads)}
    cmd = [sys.executable, "-X", "faulthandler", __file__, "--worker", method, "--arg", arg,
           "--images", str(n), "--threads", str(threads)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{method} failed (exit status {out.returncode}): "
                         f"{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _growth(samples) -> tuple[float, float, float, float]:
    at = dict((k, v) for k, v in samples)
    warm = at[min(k for k in at if k >= WARM)]
    end = samples[-1][1]
    return warm, end, max(v for _, v in samples), 100.0 * (end - warm) / warm


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer", action="store_true", help="RapidOCR on the same files too")
    ap.add_argument("--huge", type=int, default=13000, help="side of the huge PNG (0: skip)")
    ap.add_argument("--small-text", type=int, default=15,
                    help="font size (px) of the second huge page's lines (0: skip it)")
    ap.add_argument("--worker")
    ap.add_argument("--arg")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results" / "ocr-memory.md"))
    args = ap.parse_args(argv)

    if args.worker == "huge":
        print(json.dumps(worker_huge(args.arg, args.threads)))
        return 0
    if args.worker:
        paths = _paths(args.arg, args.images)
        print(json.dumps(globals()[f"worker_{args.worker}"](paths, args.threads)))
        return 0

    from skiff.kernels.ocr.synth import make_test_set, write_test_set

    folder = Path(tempfile.mkdtemp(prefix="skiff-bench-ocr-mem-"))
    try:
        samples = make_test_set(34, seed=7, categories=("clean", "rotated", "noisy"))[:100]
        write_test_set(folder, samples)
        rows, curves = [], {}
        for method in ["skiff"] + (["rapidocr"] if args.peer else []):
            print(f"{method}: {args.images} images …", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            got = _run(method, str(folder), args.threads, args.images)
            seconds = time.perf_counter() - t0
            curve = got["samples"]
            warm, end, top, growth = _growth(curve)
            curves[method] = curve
            rows.append(f"| {method} | {warm:.0f} | {end:.0f} | {top:.0f} | {got['hwm']:.0f} | "
                        f"{growth:+.1f}% | {seconds:.0f} |")
        huge = small = None
        if args.huge:
            from PIL import Image, ImageDraw, ImageFont

            from skiff.kernels.ocr.synth import fonts

            path = folder / "huge.png"
            im = Image.new("RGB", (args.huge, args.huge), "white")
            font = ImageFont.truetype(str(fonts()["latin"]), max(20, args.huge // 60))
            draw = ImageDraw.Draw(im)
            for k, line in enumerate(["Invoice 4185.94 total", "Shipping to Berlin 2026"]):
                draw.text((args.huge // 20, args.huge // 10 + k * args.huge // 30), line,
                          fill="black", font=font)
            im.save(path, compress_level=1)
            del im, draw
            huge = _run("huge", str(path), args.threads)
            huge["size"] = path.stat().st_size
            path.unlink()
        if args.huge and args.small_text:  # the same page size, small text in four places
            path = folder / "huge-small.png"
            im = Image.new("L", (args.huge, args.huge), 255)
            font = ImageFont.truetype(str(fonts()["latin"]), args.small_text)
            draw = ImageDraw.Draw(im)
            for k, (fy, fx) in enumerate(SMALL_AT):
                for j, line in enumerate(SMALL_LINES[2 * k:2 * k + 2]):
                    draw.text((int(fx * args.huge), int(fy * args.huge) + j * 2 * args.small_text),
                              line, fill=0, font=font)
            im.save(path, compress_level=1)
            del im, draw
            small = _run("huge", str(path), args.threads)
            small["size"] = path.stat().st_size
            from skiff.kernels.ocr.synth import char_accuracy

            small["accuracy"] = char_accuracy(small["text"], "\n".join(SMALL_LINES))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    load = os.getloadavg()
    cmd = "OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_memory.py " + \
        f"--images {args.images} --threads {args.threads}" + (" --peer" if args.peer else "") + \
        f" --huge {args.huge} --small-text {args.small_text}"
    table = ["| method | RSS after 100 images (MiB) | at the end | highest sample | VmHWM | "
             "growth after warm-up | seconds |", "|---|---|---|---|---|---|---|", *rows]
    doc = ["# OCR memory", "", f"Command: `{cmd}`  ",
           f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, {args.threads} threads; "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end "
           f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (a shared machine).", "",
           f"## RSS over {args.images} images", "",
           "100 distinct rendered pages (clean, rotated, noisy; 400-1100 px) cycled, read by "
           "one run in a fresh process; RSS sampled every 25 images; VmHWM: the process's "
           "high-water mark of resident memory (peaks inside a batch included). Goal: growth "
           "after warm-up <= 5%.", "", *table, "",
           "RSS (MiB) every 100 images: " + "; ".join(
               f"{m}: " + ", ".join(f"{v:.0f}" for k, v in c if k % 100 == 0)
               for m, c in curves.items()), ""]
    if huge:
        doc += [f"## A {args.huge} x {args.huge} PNG", "",
                f"Mostly blank RGB, {huge['size'] / 1024:.0f} KB on disk, "
                f"{args.huge ** 2 * 3 / 2**20:.0f} MiB decoded; read by a fresh process: peak "
                f"RSS {huge['peak']:.0f} MiB (models loaded: {huge['base']:.0f} MiB before), "
                f"{huge['seconds']:.1f} s; text: {huge['text']!r}"
                + (f", error: {huge['error']}" if huge["error"] else "") + ".", ""]
    if small:
        doc += [f"## A {args.huge} x {args.huge} page of small text", "",
                f"Grey, {small['size'] / 1024:.0f} KB on disk, {len(SMALL_LINES)} lines of "
                f"{args.small_text}-px text in four places; read by a fresh process: peak RSS "
                f"{small['peak']:.0f} MiB (models loaded: {small['base']:.0f} MiB before), "
                f"{small['seconds']:.1f} s; character accuracy "
                f"{100 * small['accuracy']:.1f}%" + (f", error: {small['error']}"
                                                    if small["error"] else "") + ".", ""]
    print("\n".join(doc))
    from results_file import write_keeping_earlier  # benchmarks/, the script's folder

    write_keeping_earlier(args.results, "\n".join(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
